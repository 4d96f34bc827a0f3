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
// When the base is the OS filesystem, mutations are carried out through
// os.Root handles opened on the write roots, with the resolved path made
// relative to its root, so a symbolic link swapped in between the check and
// the system call cannot carry the write outside the root. Other bases get
// the same decisions through path checks with resolution over that base.
//
// Denials are *fs.PathError (or *os.LinkError for two-name operations)
// wrapping an *audit.DenyError, so os.IsPermission, errors.Is(err,
// fs.ErrPermission) and errors.As work. A denied call changes nothing.
package fsguard
