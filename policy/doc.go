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
// The package knows nothing of the facades (fsguard, procguard, netguard) or
// of the guard that scopes and records decisions (audit); they depend on it,
// never the reverse.
package policy
