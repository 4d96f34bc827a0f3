// Package policy holds auditguard's pure decisions: which directories writes
// may land in, which names stay protected inside them, which paths may not be
// read, and (in the files of the exec and net rules) which programs may run
// and which addresses may be dialed.
//
// A Policy is immutable and validated when built. Deciding on an already
// resolved path (Policy.CheckPath) makes no system call and no allocation,
// and its cost does not grow with the number of roots or patterns. Resolve
// turns a name into where it really lands, component by component, on any
// filesystem that implements FS.
//
// Building a policy does I/O: it resolves roots and programs, and a policy
// that uses toolchain profiles (ExecSpec.Use, `use = [...]` in a file) runs
// each profile's read-only query once per program file (`git --exec-path`,
// `go env GOROOT GOTOOLDIR`, the interpreter's prefix), unconfined, in "/",
// with PATH and a few variables that keep the tool from reading user
// configuration, under a 10 s timeout. Decisions never do.
//
// The package knows nothing of the facades (fsguard, procguard, netguard) or
// of the guard that scopes and records decisions (audit); they depend on it,
// never the reverse.
package policy
