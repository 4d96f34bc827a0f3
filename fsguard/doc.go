// Package fsguard provides the guarded afero.Fs: a filesystem handle whose
// every call is checked by the audit guard carried in a context, with writes
// confined to the policy's write roots.
//
// A host replaces afero.NewOsFs() with fsguard.New(ctx, afero.NewOsFs()) and
// changes nothing else. Each call resolves its name where it really lands
// (component by component, symbolic links included, on the filesystem the
// call targets), builds an audit.Event and a request, and asks audit.Check;
// the facade never decides by itself. docs/permission-model.md lists, for
// every method, the operation, what is resolved and what is checked.
//
// When the base is the OS filesystem, mutations are carried out inside the
// write roots, so a symbolic link swapped in between the check and the
// system call cannot carry the write outside: a clean name with no link on
// the way goes through openat2 from a descriptor on its root with
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS (one system call proves where it
// lands and pins it); anything else is resolved component by component and
// carried out through an os.Root opened on the root, with the resolved path
// made relative to it. Other bases get the same decisions through path
// checks with resolution over that base.
//
// Denials are *fs.PathError (or *os.LinkError for two-name operations)
// wrapping an *audit.DenyError, so errors.Is(err, fs.ErrPermission) and
// errors.As work (os.IsPermission does not: it looks only for an errno one
// level down). A denied call changes nothing.
//
// Open, OpenFile and Create return a *File: reads and writes through it are
// not re-checked (the decision was made at open), but Chmod, Chown and
// Truncate are checked where the file is now, and Chdir (which would move
// the whole process) is a hard denial. The raw *os.File is not reachable
// from a *File; WithRawFiles opts out and returns the base's files.
// Release of the scope closes every *File still open and the handle's root
// descriptors (docs/threat-model.md says what is "after release" and what
// is "leaked").
//
// # Check
//
// Check is a dry run of the call it stands for, the same in every facade
// (fsguard, netguard, procguard): it takes that call's own route (resolution
// and request building of the method its Op stands for: Open, Create,
// MkdirAll, Remove, Chmod, Chdir) and runs the whole audit pipeline, the
// scope, every policy, OnCall and BeforeDeny asked with audit.Event.DryRun
// set, and the protocol's mode, then stops before the act: nothing is opened
// or changed, and nothing is recorded or logged. Its answer holds an
// audit.Result: Allowed (the call would go ahead), Outcome, By (who
// decided), the deciding rule, and Err, the error the call would return, in
// the call's own shape (*fs.PathError with the *audit.DenyError inside). The
// answer holds for now; a later call is decided afresh.
//
// # Not guaranteed
//
//   - Reads and writes through an open file are not re-checked when the
//     policy changes or the file is moved.
//   - Files from a handle made WithRawFiles, and descriptors passed to other
//     processes, are neither guarded nor closed at release.
//   - Other bases than the OS get the same decisions, but not the os.Root
//     pinning: a link swapped in between check and use is followed.
//   - See docs/threat-model.md for the whole list.
package fsguard
