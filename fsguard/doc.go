// Package fsguard will provide the guarded afero.Fs: a filesystem handle
// whose every call is checked by the audit guard carried in a context, with
// writes confined to the policy's write roots.
package fsguard
