package policy

// Git metadata is held as one object. With a git entry in the protected
// list (GitConfigEntry, GitHooksEntry, GitRedirectEntry), every path with a ".git" component (the first one on the path; case is
// ignored, as for every name) is judged here after the other protected
// names, for every operation that changes the filesystem:
//
//   - the .git entry itself may be created as a directory (git init, git
//     clone) and have its mode changed; it may not be written as a file or
//     a link (a "gitdir:" pointer file makes git read another directory's
//     configuration and hooks), moved (either name of a rename, an
//     exchange included), hard-linked or removed;
//   - inside it, what git's own commands write (gitrepository-layout(5),
//     and what git 2.39's init, clone, commit, merge, rebase, cherry-pick,
//     revert, stash, bisect, notes, tag, fetch, pull, gc, repack, prune,
//     commit-graph, pack-refs, maintenance and worktree were seen to
//     write, gitmeta_test.go) may be created, changed, renamed and removed:
//     HEAD and the other *_HEAD and *_MSG state files, index, objects/,
//     refs/, logs/, packed-refs, shallow, the rebase, sequencer and rerere
//     state directories, info/exclude, worktrees/<name>/ state, and every
//     "<name>.lock" of those; a directory that can hold configuration,
//     hooks or redirect files (objects, objects/info, info, worktrees,
//     worktrees/<name>, the state trees themselves, submodules' git
//     directories) is not moved whole or made a link, since renaming a
//     crafted one into place, or a link to it, would bring them in
//     unjudged (gitMovable);
//   - configuration (GitConfigEntry: config, config.worktree,
//     info/attributes), hooks (GitHooksEntry: anything under hooks/, the
//     empty directory may be created) and redirect files
//     (GitRedirectEntry: commondir, worktrees/<name>/commondir and gitdir,
//     objects/info/alternates and http-alternates, info/grafts, the legacy
//     branches/ and remotes/ remote definitions) are refused by their own
//     rule, so that a tool creation (ToolCreation) can drop exactly one
//     class for one command;
//   - anything else inside .git is refused by the model's own rule
//     (pattern GitEntry, source "builtin"): git does
//     not write it, so no ordinary command needs it, and an unknown file
//     is how a future redirect would get in.
//
// Under modules/ (submodules' git directories, whose names may hold "/"),
// a component that is the name of a configuration, hook or redirect file
// anywhere on the path is refused by its rule; everything else is state.
//
// Bare repositories (a directory with HEAD, objects/ and refs/ but no
// .git) are not recognised: docs/agents.md says how a host keeps its git
// from reading one a child made.

// gitModel holds its own rule (object) and the rules of the git class
// entries present in the protected list; a nil class rule means that class
// is not refused (a tool creation dropped its entry).
type gitModel struct {
	object, config, hooks, redirect *Rule
}

// isGitClassEntry reports whether a protected entry names a class of the
// git model.
func isGitClassEntry(v string) bool {
	return eqFold(v, GitConfigEntry) || eqFold(v, GitHooksEntry) || eqFold(v, GitRedirectEntry)
}

// take files r when it is one of the git class entries.
func (g *gitModel) take(r *Rule) bool {
	var dst **Rule
	switch {
	case eqFold(r.Pattern, GitConfigEntry):
		dst = &g.config
	case eqFold(r.Pattern, GitHooksEntry):
		dst = &g.hooks
	case eqFold(r.Pattern, GitRedirectEntry):
		dst = &g.redirect
	default:
		return false
	}
	r.Class = ClassGit
	setOnce(dst, r)
	return true
}

const (
	detailGitEntry     = "a repository's .git is one object: it may be created as a directory, never moved, removed, linked or made a pointer file"
	detailGitRedirect  = "this file makes git read the repository, its configuration or hooks from elsewhere"
	detailGitUnknown   = "not a file git's own commands write (gitrepository-layout(5))"
	detailGitContainer = "a directory of a git directory that can hold configuration, hooks or redirect files is not moved or linked: a crafted one would bring them in"
)

// judge decides op on rel, the rest of a path after its .git component
// ("" for the entry itself, else "/..."): the rule and detail of a
// denial, or a nil rule.
func (g *gitModel) judge(op Op, rel string) (*Rule, string) {
	if rel == "" {
		switch op {
		case OpCreate, OpAttr:
			return nil, ""
		case OpWrite, OpLink, OpDelete:
			// A tool creation that drops the redirect class (git
			// worktree) writes and removes worktrees' pointer files.
			if g.redirect == nil {
				return nil, ""
			}
		}
		return g.object, detailGitEntry
	}
	cls, hooksDir := classifyGit(rel[1:])
	switch cls {
	case gitState:
		// A symbolic link in a container's place redirects it as surely
		// as a crafted directory renamed there.
		if (op == OpMove || op == OpLink) && !gitMovable(rel[1:]) {
			return g.object, detailGitContainer
		}
		return nil, ""
	case gitConfig:
		if g.config == nil {
			return nil, ""
		}
		return g.config, "" // the rule says it
	case gitHooks:
		if g.hooks == nil || hooksDir && op == OpCreate {
			return nil, ""
		}
		return g.hooks, ""
	case gitRedirect:
		if g.redirect == nil {
			return nil, ""
		}
		return g.redirect, detailGitRedirect
	}
	return g.object, detailGitUnknown
}

type gitClass uint8

const (
	gitUnknown gitClass = iota
	gitState
	gitConfig
	gitHooks
	gitRedirect
)

// gitName is one name of the layout, at the top of a git directory.
type gitName struct {
	name  string
	class gitClass
	shape uint8
}

// Shapes of a gitName.
const (
	gitFile   = iota // the file (or its ".lock") alone
	gitTree          // the directory and everything under it
	gitPrefix        // any file whose name starts with name
)

// gitTop is the top level of a git directory, from gitrepository-layout(5)
// (git 2.39) and from what git's commands were seen writing (the test
// TestGitLayoutFromRealGit runs them): state files, state trees, and the
// names of configuration, hooks and redirect files. info/, objects/,
// worktrees/ and modules/ are handled in classifyGit.
var gitTop = []gitName{
	{"HEAD", gitState, gitFile},
	{"ORIG_HEAD", gitState, gitFile},
	{"FETCH_HEAD", gitState, gitFile},
	{"MERGE_HEAD", gitState, gitFile},
	{"MERGE_MSG", gitState, gitFile},
	{"MERGE_MODE", gitState, gitFile},
	{"MERGE_RR", gitState, gitFile},
	{"MERGE_AUTOSTASH", gitState, gitFile},
	{"AUTO_MERGE", gitState, gitFile},
	{"CHERRY_PICK_HEAD", gitState, gitFile},
	{"REVERT_HEAD", gitState, gitFile},
	{"REBASE_HEAD", gitState, gitFile},
	{"COMMIT_EDITMSG", gitState, gitFile},
	{"TAG_EDITMSG", gitState, gitFile},
	{"SQUASH_MSG", gitState, gitFile},
	{"NOTES_EDITMSG", gitState, gitFile},
	{"NOTES_MERGE_REF", gitState, gitFile},
	{"EDIT_DESCRIPTION", gitState, gitFile},
	{"ADD_EDIT.patch", gitState, gitFile},
	{"addp-hunk-edit.diff", gitState, gitFile},
	{"index", gitState, gitFile},
	{"packed-refs", gitState, gitFile},
	{"packed-refs.new", gitState, gitFile},
	{"shallow", gitState, gitFile},
	{"description", gitState, gitFile},
	{"gc.pid", gitState, gitFile},
	{"gc.log", gitState, gitFile},
	{"locked", gitState, gitFile}, // worktrees/<name>/locked
	{"BISECT_", gitState, gitPrefix},
	{"head-name", gitState, gitFile}, // git bisect reset removes it (builtin/bisect.c, bisect_clean_state)
	{"index.stash.", gitState, gitPrefix},
	{"next-index-", gitState, gitPrefix},
	{"sharedindex.", gitState, gitPrefix},
	{"objects", gitState, gitTree},
	{"refs", gitState, gitTree},
	{"logs", gitState, gitTree},
	{"rebase-merge", gitState, gitTree},
	{"rebase-apply", gitState, gitTree},
	{"sequencer", gitState, gitTree},
	{"rr-cache", gitState, gitTree},
	{"NOTES_MERGE_PARTIAL", gitState, gitTree},
	{"NOTES_MERGE_WORKTREE", gitState, gitTree},
	{"lfs", gitState, gitTree},               // git-lfs's object store
	{"fsmonitor--daemon", gitState, gitTree}, // git-fsmonitor--daemon(1) cookies
	{"config", gitConfig, gitFile},
	{"config.worktree", gitConfig, gitFile},
	{"hooks", gitHooks, gitTree},
	{"commondir", gitRedirect, gitFile},
	{"gitdir", gitRedirect, gitFile},
	{"branches", gitRedirect, gitTree},
	{"remotes", gitRedirect, gitTree},
}

// gitInfo is info/: exclude and sparse-checkout are patterns of paths,
// refs (and its refs_* temporary files) is what update-server-info
// writes; attributes select drivers, grafts rewrite history.
var gitInfo = []gitName{
	{"exclude", gitState, gitFile},
	{"sparse-checkout", gitState, gitFile},
	{"refs", gitState, gitFile},
	{"refs_", gitState, gitPrefix},
	{"attributes", gitConfig, gitFile},
	{"grafts", gitRedirect, gitFile},
}

// classifyGit classifies rel, a clean path relative to a git directory;
// hooksDir reports that rel is the hooks directory itself.
func classifyGit(rel string) (cls gitClass, hooksDir bool) {
	first, rest := cutComponent(rel)
	switch {
	case eqFold(first, "worktrees"):
		if rest == "" {
			return gitState, false
		}
		if _, in := cutComponent(rest); in != "" {
			return classifyTop(in)
		}
		return gitState, false // worktrees/<name>: made by add, removed by prune
	case eqFold(first, "modules"):
		return classifyModules(rest)
	}
	return classifyTop(rel)
}

// classifyTop classifies rel at the top of a git directory (the main one
// or a worktree's).
func classifyTop(rel string) (gitClass, bool) {
	first, rest := cutComponent(rel)
	if rest == "" {
		first = trimLock(first)
	}
	switch {
	case eqFold(first, "info"):
		if rest == "" {
			return gitState, false
		}
		if name, more := cutComponent(rest); more == "" {
			return lookupGit(&gitInfoLookup, trimLock(name), false)
		}
		return gitUnknown, false
	case eqFold(first, "objects"):
		// objects/info/alternates and http-alternates name other object
		// stores (gitrepository-layout(5)).
		if sub, more := cutComponent(rest); eqFold(sub, "info") {
			name, _ := cutComponent(more)
			name = trimLock(name)
			if eqFold(name, "alternates") || eqFold(name, "http-alternates") {
				return gitRedirect, false
			}
		}
		return gitState, false
	case len(first) == 7 && (first[0] == 't' || first[0] == 'T') && rest == "":
		// "tXXXXXX": the file git init makes, links and removes to learn
		// whether the filesystem has symbolic links (core.symlinks).
		return gitState, false
	}
	return lookupGit(&gitTopLookup, first, rest != "")
}

// gitLookup indexes a table of names: exact names by their lower-case
// spelling, prefixes in a list (few).
type gitLookup struct {
	exact    map[string]*gitName
	prefixes []*gitName
}

var gitTopLookup, gitInfoLookup = indexGit(gitTop), indexGit(gitInfo)

func indexGit(table []gitName) gitLookup {
	l := gitLookup{exact: map[string]*gitName{}}
	for i := range table {
		n := &table[i]
		if n.shape == gitPrefix {
			l.prefixes = append(l.prefixes, n)
		} else {
			l.exact[lowerASCII(n.name)] = n
		}
	}
	return l
}

// lookupGit finds name in l; deeper reports that the path goes on below
// name. The lookup folds case in a buffer on the stack: it allocates
// nothing.
func lookupGit(l *gitLookup, name string, deeper bool) (gitClass, bool) {
	var buf [32]byte
	if len(name) <= len(buf) {
		for i := 0; i < len(name); i++ {
			buf[i] = foldByte(name[i])
		}
		if n := l.exact[string(buf[:len(name)])]; n != nil {
			switch {
			case n.shape == gitTree:
				return n.class, !deeper && n.class == gitHooks
			case !deeper:
				return n.class, false
			}
			return gitUnknown, false
		}
	}
	if !deeper {
		for _, n := range l.prefixes {
			if len(name) > len(n.name) && eqFold(name[:len(n.name)], n.name) {
				return n.class, false
			}
		}
	}
	return gitUnknown, false
}

// classifyModules classifies rel below modules/: a submodule's git
// directory, under a name that may span components. Any component named
// like a configuration, hook or redirect file is that class.
func classifyModules(rel string) (gitClass, bool) {
	for rest := rel; rest != ""; {
		var c string
		c, rest = cutComponent(rest)
		if rest == "" {
			c = trimLock(c)
		}
		switch {
		case eqFold(c, "config"), eqFold(c, "config.worktree"), eqFold(c, "attributes"):
			return gitConfig, false
		case eqFold(c, "hooks"):
			return gitHooks, rest == ""
		case eqFold(c, "commondir"), eqFold(c, "gitdir"), eqFold(c, "alternates"),
			eqFold(c, "http-alternates"), eqFold(c, "grafts"), eqFold(c, "branches"),
			eqFold(c, "remotes"):
			return gitRedirect, false
		}
	}
	return gitState, false
}

// gitMovable reports whether rel (relative to a git directory, of the
// state class) may be either name of a rename. State files move (git
// writes each as "<name>.lock" and renames it over the name), and so does
// anything inside a state tree; a directory that can hold configuration,
// hooks or redirect files does not, since renaming a crafted directory
// into its place would bring them in whole, unjudged: objects,
// objects/info, info, worktrees and worktrees/<name>, the state trees
// themselves, and below modules/ whatever is not inside a state tree or
// named as a state file. git itself renames none of these.
func gitMovable(rel string) bool {
	first, rest := cutComponent(rel)
	switch {
	case eqFold(first, "worktrees"):
		_, in := cutComponent(rest)
		return in != "" && gitMovableTop(in)
	case eqFold(first, "modules"):
		return modulesMovable(rest)
	}
	return gitMovableTop(rel)
}

// gitMovableTop is gitMovable at the top of a git directory.
func gitMovableTop(rel string) bool {
	first, rest := cutComponent(rel)
	if rest == "" {
		return gitStateFile(first)
	}
	if eqFold(first, "objects") {
		sub, more := cutComponent(rest)
		return !eqFold(sub, "info") || more != ""
	}
	return true // inside info/ or a state tree
}

// gitStateFile reports whether name (a last component) is a state file
// of the top of a git directory, its ".lock" included.
func gitStateFile(name string) bool {
	name = trimLock(name)
	if len(name) == 7 && (name[0] == 't' || name[0] == 'T') {
		return true // git init's core.symlinks probe
	}
	cls, _ := lookupGit(&gitTopLookup, name, false)
	if cls != gitState {
		return false
	}
	// lookupGit answers gitState for a tree named alone too: only files
	// and prefixes move.
	n, _ := cutComponent(name)
	return !gitIsTree(n)
}

// gitIsTree reports whether name is a directory of gitTop (or info).
func gitIsTree(name string) bool {
	if eqFold(name, "info") {
		return true
	}
	var buf [32]byte
	if len(name) > len(buf) {
		return false
	}
	for i := 0; i < len(name); i++ {
		buf[i] = foldByte(name[i])
	}
	n := gitTopLookup.exact[string(buf[:len(name)])]
	return n != nil && n.shape == gitTree
}

// modulesMovable is gitMovable below modules/: the entry lies inside a
// state tree (a component before the last is one, objects/info only with
// a file below it), or its last component is a state file.
func modulesMovable(rel string) bool {
	for rest := rel; rest != ""; {
		var c string
		c, rest = cutComponent(rest)
		if rest == "" {
			return gitStateFile(c)
		}
		if eqFold(c, "objects") {
			sub, more := cutComponent(rest)
			if !eqFold(sub, "info") || more != "" {
				return true
			}
			continue
		}
		if gitIsTree(c) && !eqFold(c, "info") && !eqFold(c, "hooks") && !eqFold(c, "branches") && !eqFold(c, "remotes") {
			return true
		}
	}
	return false
}

// cutComponent splits a clean relative path at its first "/".
func cutComponent(p string) (first, rest string) {
	for i := 0; i < len(p); i++ {
		if p[i] == '/' {
			return p[:i], p[i+1:]
		}
	}
	return p, ""
}

// trimLock drops a ".lock" suffix: git writes every file it replaces as
// "<name>.lock" first, and renames it over the name.
func trimLock(name string) string {
	if n := len(name) - len(".lock"); n > 0 && eqFold(name[n:], ".lock") {
		return name[:n]
	}
	return name
}

// eqFold compares two strings ignoring ASCII case.
func eqFold(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		if foldByte(a[i]) != foldByte(b[i]) {
			return false
		}
	}
	return true
}
