// Package policyfile reads auditguard policies written as TOML files and
// keeps them current: it parses a file (Parse, Load, LoadFile), stacks a
// workspace layer on an operator's (LoadLayers), and reloads on change
// (Watch). It decides nothing itself: every file is turned into a
// policy.Builder and built by package policy, the decision core; the
// dependency points from here to there only. The format is documented in
// docs/policy.md; testdata/example.toml is a complete example.
//
// # Positions and provenance
//
// Every key and every value, array elements included, keeps the 1-based
// line and column where it is written: the document is parsed with
// github.com/pelletier/go-toml/v2, whose parser reports the byte range of
// each key and scalar (and the position of a syntax error), and those
// ranges are turned into line and column (tree.go). Each rule the file
// makes carries "file:line" as its policy.Rule.Source, where file is the
// name the file was given to the loader: the operator's and the
// workspace's file names for a layered policy, so a denial names the layer
// that decided. Rules a toolchain profile adds (`use = ["go"]`) carry
// "file:line profile go@1 (what it was found from)". Hints are given in the
// file's terms ("add ... to [fs] write_roots"): the policies built here
// carry this package's wording in policy.Builder.Hints, which
// Policy.HintFor uses, here and in any process the policy is sent to.
//
// # Errors: all at once
//
// A file is applied whole or not at all. Loading reports every problem in
// one pass, in file order, as one *LoadError whose Problems are
// *FileError values: file:line:col, the dotted key ("fs.write_roots",
// "exec.allow[2]"), what is wrong and, for a misspelt key or value, what
// was probably meant (Suggest; a key written in the wrong table names the
// table it belongs in). Unknown keys and wrong types do not hide invalid
// values: the rest of the file is still built and its problems joined.
// Errors of the core's Builder are mapped back to the entry or rule table
// they came from. A workspace layer that would widen the operator's is
// rejected whole, each offending entry at its position with the reason.
//
// # Hot reload
//
// Watch follows a file (and its workspace layer) with fsnotify, debounced;
// an invalid edit, a removed file or a lost directory keeps the last good
// policy in force and is reported as a WatchEvent, through WithOnError and
// the logger. The target takes policy and modes atomically
// (PolicyModesSwapper; *audit.Guard implements it).
//
// # Not guaranteed
//
//   - A file read while another process is writing it may be half written:
//     the watcher refuses a reload that finds it empty (ErrEmptyFile), but
//     a truncated file that is still valid TOML is loaded as it reads.
//   - Watch reacts to filesystem events: on filesystems without inotify
//     (some network and FUSE mounts) edits are not seen.
//   - The did-you-mean suggestion is a guess by edit distance; no
//     suggestion does not mean the key is far from a valid one.
//   - The files themselves are not protected by this package: whoever can
//     write the operator's file sets the policy. Keep it outside every write
//     root (a workspace layer inside one can only narrow). See
//     docs/threat-model.md for the guard as a whole.
package policyfile
