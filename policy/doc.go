// Package policy is auditguard's decision core: given a built Policy and a
// request, it says allowed or denied, by which Rule, at which Tier. It
// decides which directories writes may land in (write roots), which names
// stay protected inside them, which paths may not be read (read roots,
// read-deny entries), which programs may run with which arguments and
// variables (exec rules, the built-in option and variable tables, toolchain
// profiles), and which addresses may be dialed or bound (net rules, the
// special-purpose address ranges).
//
// A Policy is immutable and validated when built, with New or a Builder;
// every Rule carries its provenance (Rule.Source: "builtin", "code", or
// whatever the front end that built it says, such as "policy.toml:12").
// Deciding on an already resolved path (Policy.CheckPath) makes no system
// call and no allocation, and its cost does not grow with the number of
// roots or patterns; Policy.CheckExec, Policy.CheckNet and Policy.CheckDial
// decide on data alone as well.
//
// # I/O: resolution only
//
// The package opens no files and parses no file format. The only I/O it
// does is resolution, and only in these functions:
//
//   - Resolve turns a name into where it really lands, component by
//     component, through an FS (OSFS: lstat and readlink);
//   - New, Builder.Build and Policy.UnmarshalJSON resolve roots and
//     absolute entries (symbolic links, whether a write root is a file),
//     programs (LookPath, RealProgram) and the directories of Under rules;
//     a policy that uses toolchain profiles (ExecSpec.Use) also runs each
//     profile's read-only query once per program file (`git --exec-path`,
//     `go env GOROOT GOTOOLDIR`, the interpreter's prefix), unconfined, in
//     "/", with PATH and a few variables that keep the tool from reading
//     user configuration, under a 10 s timeout;
//   - Builder.Paths, LookPath, RealProgram and Policy.ExecAllowWithin
//     resolve the entry or program they are given;
//   - PlanExec resolves the commands of a script through the ExecResolver
//     it is given.
//
// Decisions never do I/O.
//
// # Front ends
//
// Policies written as TOML files (with positions in every error, layering
// of a workspace file on an operator's, hot reload) are loaded by package
// policyfile, which builds them through this package's Builder and passes
// its own wording of hints (Builder.Hints) so that Policy.HintFor answers
// in TOML terms. Nothing here imports it.
//
// The package knows nothing of the facades (fsguard, procguard, netguard) or
// of the guard that scopes and records decisions (audit); they depend on it,
// never the reverse.
//
// # Not guaranteed
//
//   - A decision is about the path it is given: a caller that decides on an
//     unresolved name, or acts on a different one, gets no protection from
//     it (the facades resolve with Resolve first).
//   - Roots, absolute entries and programs are resolved once, when the
//     policy is built: if a root's symbolic link is pointed elsewhere
//     later, the policy keeps the spellings it resolved (build it again to
//     follow).
//   - The option, variable and special-range tables name their sources but
//     are snapshots; a tool's new option is unknown until the table has it.
//   - See docs/threat-model.md for what the guard as a whole does not cover.
package policy
