package policy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/auditguard/auditguard/policy/internal/didyoumean"
)

// Toolchain profiles: what a policy needs for one toolchain to work under
// exec confinement, in one word (ExecSpec.Use, the policy file's
// `use = ["git", "go"]`). A profile knows its programs, the helper
// programs and directories the tool starts on its own (found when the
// policy is built, from the tool itself: `git --exec-path`,
// `go env GOROOT GOTOOLDIR`, the interpreter's prefix), the variables it
// needs (its cache variables set inside the policy's cache directory, its
// identity and build variables let through from the host or Cmd.Env), and
// its code-running options stay denied by the built-in option tables.
// Every rule a profile adds carries the profile and what it was found from
// as its Source, and (*Policy).ProfileItems lists the whole expansion.

// ProfileUse names a profile for ExecSpec.Use: "git", or "git@1" for a
// version. Source is the provenance of the use ("policy.toml:1").
type ProfileUse struct {
	Name, Source string
}

// ProfileItemKind says what a profile added.
type ProfileItemKind uint8

const (
	// ProfileProgram: an allow rule for a program (Value: its real path).
	ProfileProgram ProfileItemKind = iota + 1
	// ProfileHelperDir: an allow rule for every program under a directory
	// the tool starts helpers from (git-core, GOTOOLDIR).
	ProfileHelperDir
	// ProfilePath: a directory added to the policy's PATH because the tool
	// lives there (GOROOT/bin).
	ProfilePath
	// ProfileEnvSet: a variable the policy sets for every child
	// ("GOCACHE=/cache/go-build").
	ProfileEnvSet
	// ProfileEnvPass: a variable name children may receive from the host
	// or Cmd.Env.
	ProfileEnvPass
	// ProfileMissing: a program of the profile that is not installed.
	ProfileMissing
	// ProfileNote: what a probe found that needs no rule (a prefix).
	ProfileNote
)

var profileKindNames = [...]string{"", "program", "helper dir", "path", "env set", "env pass", "missing", "note"}

func (k ProfileItemKind) String() string {
	if int(k) < len(profileKindNames) {
		return profileKindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// ProfileItem is one thing a profile expanded to, with its provenance.
type ProfileItem struct {
	Profile string // "git@1"
	Kind    ProfileItemKind
	Value   string
	// From says how the value was found ("git --exec-path",
	// "policy PATH", "cache_dir").
	From string
	// Source is the rule Source the item's rule carries, "" for items
	// that are not rules.
	Source string
}

// Profile is one toolchain bundle.
type Profile struct {
	Name    string
	Version int
	Doc     string
	// Programs are bare names looked up in the policy's PATH (then the
	// host's, whose directory is then added to the policy's PATH for that
	// tool); a missing one is skipped and reported.
	Programs []string
	// Pass are variables children may receive (ExecSpec.Env entries).
	Pass []string
	// Cache are variables set to a directory under the cache directory
	// ("GOCACHE": "go-build").
	Cache [][2]string
	// Set are fixed variables the profile sets ("GOTOOLCHAIN=local").
	Set []string
	// probe finds helper directories, path entries and notes from the
	// tool itself; prog is the real path of Programs[0].
	probe func(pc *profileContext, prog string) error
}

// ID is "name@version".
func (p *Profile) ID() string { return p.Name + "@" + strconv.Itoa(p.Version) }

// What the versions of a profile share.
var (
	gitPass = []string{"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE"}
	gitSet  = []string{"GIT_TERMINAL_PROMPT=0"}
	goPass  = []string{"GOOS", "GOARCH", "GOAMD64", "GOARM", "CGO_ENABLED", "GOPROXY", "GOPRIVATE", "GONOPROXY",
		"GONOSUMDB", "GOSUMDB", "GOWORK", "GOEXPERIMENT", "GODEBUG", "GOMAXPROCS", "GOGC", "GOTRACEBACK"}
	goCache = [][2]string{{"GOCACHE", "go-build"}, {"GOMODCACHE", "go-mod"}, {"GOPATH", "go"}}
	// GOENV=off: a go env file under HOME (inside a write root) could set
	// GOFLAGS=-toolexec=...; GOTOOLCHAIN=local: no toolchain is
	// downloaded and run because a go.mod asks for it.
	goSet = []string{"GOTOOLCHAIN=local", "GOENV=off"}
)

// gitExecPath adds git's helper directory (git --exec-path).
func gitExecPath(pc *profileContext, prog string) error {
	out, err := pc.run(prog, "--exec-path")
	if err != nil {
		return err
	}
	pc.helperDir(out, "git --exec-path")
	return nil
}

// profiles are the built-in toolchain profiles, newest version last for
// each name. A new version is added, never an old one changed, so a policy
// naming "go@1" keeps meaning the same.
var profiles = []*Profile{
	{
		Name: "git", Version: 1,
		Doc:      "git and the helper commands under its exec path; commit identity variables",
		Programs: []string{"git"},
		Pass:     gitPass,
		Set:      gitSet,
		probe:    gitExecPath,
	},
	{
		Name: "go", Version: 1,
		Doc:      "go and gofmt, the compiler, linker, vet and other tools under GOTOOLDIR; build caches in the cache directory; no toolchain downloads, no go env file",
		Programs: []string{"go", "gofmt"},
		Pass:     goPass,
		Cache:    goCache,
		Set:      goSet,
		probe: func(pc *profileContext, prog string) error {
			out, err := pc.run(prog, "env", "GOROOT", "GOTOOLDIR")
			if err != nil {
				return err
			}
			lines := strings.Split(out, "\n")
			if len(lines) != 2 || !filepath.IsAbs(lines[0]) || !filepath.IsAbs(lines[1]) {
				return fmt.Errorf("go env GOROOT GOTOOLDIR: unexpected output %q", out)
			}
			pc.pathDir(filepath.Join(lines[0], "bin"), "go env GOROOT")
			pc.helperDir(lines[1], "go env GOTOOLDIR")
			return nil
		},
	},
	{
		// git@2: git@1, and the programs git's shell helpers
		// (git-sh-i18n, sourced by git-sh-setup and the scripted commands)
		// run to print messages: gettext and envsubst.
		Name: "git", Version: 2,
		Doc:      "git and the helper commands under its exec path, and gettext and envsubst its shell helpers run; commit identity variables",
		Programs: []string{"git"},
		Pass:     gitPass,
		Set:      gitSet,
		probe: func(pc *profileContext, prog string) error {
			if err := gitExecPath(pc, prog); err != nil {
				return err
			}
			for _, name := range []string{"gettext", "envsubst"} {
				pc.optional(name, "git-sh-i18n runs it")
			}
			return nil
		},
	},
	{
		// go@2: go@1, and the C toolchain cgo runs when CGO_ENABLED is on
		// (a package importing net or os/user uses cgo where a C compiler
		// is installed): go env CC and CXX, and what they start, asked of
		// the compiler itself (-print-prog-name: cc1 and collect2 in gcc's
		// own directory, as and ld).
		Name: "go", Version: 2,
		Doc:      "go and gofmt, the compiler, linker, vet and other tools under GOTOOLDIR, and the C toolchain cgo runs (go env CC, CXX, their cc1, as, ld); build caches in the cache directory; no toolchain downloads, no go env file",
		Programs: []string{"go", "gofmt"},
		Pass:     goPass,
		Cache:    goCache,
		Set:      goSet,
		probe: func(pc *profileContext, prog string) error {
			out, err := pc.run(prog, "env", "GOROOT", "GOTOOLDIR", "CGO_ENABLED", "CC", "CXX")
			if err != nil {
				return err
			}
			lines := strings.Split(out, "\n")
			if len(lines) != 5 || !filepath.IsAbs(lines[0]) || !filepath.IsAbs(lines[1]) {
				return fmt.Errorf("go env GOROOT GOTOOLDIR CGO_ENABLED CC CXX: unexpected output %q", out)
			}
			pc.pathDir(filepath.Join(lines[0], "bin"), "go env GOROOT")
			pc.helperDir(lines[1], "go env GOTOOLDIR")
			if lines[2] != "1" {
				pc.note("cgo is off (go env CGO_ENABLED = "+lines[2]+"): no C toolchain added", "go env CGO_ENABLED")
				return nil
			}
			for _, cc := range []struct{ name, env string }{{lines[3], "CC"}, {lines[4], "CXX"}} {
				pc.cToolchain(cc.name, "go env "+cc.env)
			}
			return nil
		},
	},
	{
		Name: "python", Version: 1,
		Doc:      "python3 (and python, pip3 where installed); pip's cache in the cache directory; programs of a dedicated interpreter prefix",
		Programs: []string{"python3", "python", "pip3", "pip"},
		Pass:     []string{"PYTHONUNBUFFERED", "PYTHONIOENCODING", "PYTHONHASHSEED", "PYTHONDONTWRITEBYTECODE", "VIRTUAL_ENV"},
		Cache:    [][2]string{{"PIP_CACHE_DIR", "pip"}},
		probe: func(pc *profileContext, prog string) error {
			out, err := pc.run(prog, "-I", "-S", "-c", "import sys; print(sys.base_prefix)")
			if err != nil {
				return err
			}
			pc.prefix(out, "python3 -c 'import sys; print(sys.base_prefix)'")
			return nil
		},
	},
	{
		Name: "node", Version: 1,
		Doc:      "node, npm and npx; npm's cache in the cache directory; programs of a dedicated install prefix",
		Programs: []string{"node", "npm", "npx"},
		Pass:     []string{"NODE_ENV"},
		Cache:    [][2]string{{"npm_config_cache", "npm"}},
		Set:      []string{"npm_config_update_notifier=false"},
		probe: func(pc *profileContext, prog string) error {
			out, err := pc.run(prog, "-p", "process.execPath")
			if err != nil {
				return err
			}
			real, err := filepath.EvalSymlinks(out)
			if err != nil {
				return err
			}
			pc.prefix(filepath.Dir(filepath.Dir(real)), "node -p process.execPath")
			return nil
		},
	},
	{
		Name: "coreutils", Version: 1,
		Doc: "file and text tools: GNU coreutils, grep, sed, awk, find, xargs, diff, tar and its compressors",
		Programs: []string{"ls", "cat", "head", "tail", "wc", "sort", "uniq", "cut", "tr", "tee", "echo", "printf",
			"true", "false", "test", "pwd", "env", "basename", "dirname", "realpath", "readlink", "stat", "du", "df",
			"date", "sleep", "seq", "mkdir", "rmdir", "rm", "cp", "mv", "ln", "touch", "chmod", "sha256sum",
			"sha1sum", "md5sum", "od", "comm", "paste", "join", "nl", "fold", "tac", "rev", "expr", "id", "uname",
			"which", "grep", "egrep", "fgrep", "sed", "awk", "gawk", "mawk", "find", "xargs", "diff", "cmp",
			"patch", "tar", "gzip", "gunzip", "zcat", "bzip2", "xz", "file", "timeout", "nice", "nohup"},
	},
	{
		Name: "make", Version: 1,
		Doc:      "make, and /bin/sh which runs its recipes",
		Programs: []string{"make"},
		probe: func(pc *profileContext, _ string) error {
			// make runs every recipe line with $(SHELL) -c, /bin/sh by default (make(1)).
			pc.program("/bin/sh", "make's default SHELL")
			return nil
		},
	},
}

// Profiles returns the built-in toolchain profiles.
func Profiles() []Profile {
	out := make([]Profile, len(profiles))
	for i, p := range profiles {
		out[i] = *p
	}
	return out
}

// ProfileNamed returns a profile by "name" (its newest version) or
// "name@version".
func ProfileNamed(ref string) (*Profile, error) {
	name, ver, hasVer := strings.Cut(ref, "@")
	var found *Profile
	var names []string
	for _, p := range profiles {
		names = appendUnique(names, p.Name)
		if p.Name != name {
			continue
		}
		if !hasVer || strconv.Itoa(p.Version) == ver {
			found = p
		}
	}
	if found == nil {
		if slices.Contains(names, name) {
			return nil, fmt.Errorf("profile %s has no version %s", name, ver)
		}
		msg := "unknown profile " + strconv.Quote(ref) + " (known: " + strings.Join(names, ", ") + ")"
		if s := didyoumean.Closest(name, names); s != "" {
			msg += "; did you mean " + strconv.Quote(s) + "?"
		}
		return nil, errors.New(msg)
	}
	c := *found
	return &c, nil
}

// profileContext collects one profile's expansion.
type profileContext struct {
	prof  *Profile
	use   ProfileUse
	path  []string // the policy's PATH, as extended so far
	items []ProfileItem
	rules []ExecRule
}

func (pc *profileContext) source(from string) string {
	src := "profile " + pc.prof.ID()
	if pc.use.Source != "" && pc.use.Source != "code" {
		src = pc.use.Source + " " + src
	}
	return src + " (" + from + ")"
}

func (pc *profileContext) program(prog, from string) {
	if slices.ContainsFunc(pc.rules, func(r ExecRule) bool { return r.Program == prog }) {
		return // found again (the assembler of both CC and CXX)
	}
	src := pc.source(from)
	pc.rules = append(pc.rules, ExecRule{Program: prog, Source: src})
	pc.items = append(pc.items, ProfileItem{Profile: pc.prof.ID(), Kind: ProfileProgram, Value: prog, From: from, Source: src})
}

func (pc *profileContext) helperDir(dir, from string) {
	src := pc.source(from + " = " + dir)
	pc.rules = append(pc.rules, ExecRule{Under: dir, Source: src})
	pc.items = append(pc.items, ProfileItem{Profile: pc.prof.ID(), Kind: ProfileHelperDir, Value: dir, From: from, Source: src})
}

func (pc *profileContext) pathDir(dir, from string) {
	if slices.Contains(pc.path, dir) {
		return
	}
	pc.path = append(pc.path, dir)
	pc.items = append(pc.items, ProfileItem{Profile: pc.prof.ID(), Kind: ProfilePath, Value: dir, From: from})
}

// prefix records an interpreter's prefix; a dedicated one (not a system
// prefix shared by every package) has its bin directory allowed.
func (pc *profileContext) prefix(dir, from string) {
	dir = filepath.Clean(dir)
	switch dir {
	case "/", "/usr", "/usr/local":
		pc.items = append(pc.items, ProfileItem{Profile: pc.prof.ID(), Kind: ProfileNote, Value: "prefix " + dir + " (a system prefix: only the profile's programs are allowed)", From: from})
		return
	}
	pc.helperDir(filepath.Join(dir, "bin"), from+" prefix "+dir+", bin")
}

// note records what a probe found that needs no rule.
func (pc *profileContext) note(what, from string) {
	pc.items = append(pc.items, ProfileItem{Profile: pc.prof.ID(), Kind: ProfileNote, Value: what, From: from})
}

// optional allows a program the tool may start, found as the profile's own
// programs are; a missing one is listed and skipped.
func (pc *profileContext) optional(name, why string) string {
	found, from, err := pc.lookup(name)
	if err != nil {
		pc.items = append(pc.items, ProfileItem{Profile: pc.prof.ID(), Kind: ProfileMissing, Value: name, From: why + "; not in the policy's PATH nor the host's"})
		return ""
	}
	pc.program(found, why+"; "+from+": "+found)
	return found
}

// cToolchain allows the C or C++ compiler cc (a go env value: a name or a
// path, possibly with arguments) and what it starts on its own: cc1 or
// cc1plus and collect2 (gcc's own directory, allowed whole), the
// assembler and the linker, each asked of the compiler with
// -print-prog-name, as gcc(1) documents. A compiler that is not installed
// is listed as missing: cgo then fails as it would without the policy.
func (pc *profileContext) cToolchain(cc, from string) {
	fields := strings.Fields(cc)
	if len(fields) == 0 {
		return
	}
	var found string
	if filepath.IsAbs(fields[0]) {
		found = fields[0]
		pc.program(found, from+" = "+cc)
	} else if found = pc.optional(fields[0], from+" = "+cc); found == "" {
		return
	}
	for _, helper := range []string{"cc1", "cc1plus", "collect2", "as", "ld"} {
		out, err := pc.run(found, "-print-prog-name="+helper)
		if err != nil || out == "" || out == helper && (helper == "cc1" || helper == "cc1plus" || helper == "collect2") {
			continue // not a separate program of this compiler (clang's cc1 is itself)
		}
		how := fields[0] + " -print-prog-name=" + helper
		switch {
		case !filepath.IsAbs(out):
			pc.optional(out, how)
		case helper == "cc1" || helper == "cc1plus" || helper == "collect2":
			if !slices.ContainsFunc(pc.items, func(it ProfileItem) bool {
				return it.Kind == ProfileHelperDir && it.Value == filepath.Dir(out)
			}) {
				pc.helperDir(filepath.Dir(out), how)
			}
		default:
			if _, err := os.Stat(out); err == nil {
				pc.program(out, how)
			}
		}
	}
}

// run runs a tool's query command (probe.go).
func (pc *profileContext) run(prog string, args ...string) (string, error) {
	return probeTool(prog, pc.path, args...)
}

// expandProfiles adds what spec.Use names to a copy of spec: allow rules,
// PATH entries, variables. It runs each profile's query commands (cached
// per program file).
func expandProfiles(spec ExecSpec) (ExecSpec, []ProfileItem, error) {
	if len(spec.Use) == 0 {
		return spec, nil, nil
	}
	var errs []error
	fail := func(u ProfileUse, err error) {
		errs = append(errs, &EntryError{Field: "exec use", Value: u.Name, Source: u.Source, Err: err})
	}
	path := spec.Path
	if len(path) == 0 {
		path = DefaultExecPath
	}
	path = append([]string(nil), path...)
	var items []ProfileItem
	var rules []ExecRule
	seen := map[string]bool{}
	for _, u := range spec.Use {
		prof, err := ProfileNamed(u.Name)
		if err != nil {
			fail(u, err)
			continue
		}
		if seen[prof.Name] {
			fail(u, fmt.Errorf("profile %s is used twice", prof.Name))
			continue
		}
		seen[prof.Name] = true
		pc := &profileContext{prof: prof, use: u, path: path}
		first := ""
		for _, name := range prof.Programs {
			found, from, err := pc.lookup(name)
			if err != nil {
				pc.items = append(pc.items, ProfileItem{Profile: prof.ID(), Kind: ProfileMissing, Value: name, From: "not in the policy's PATH nor the host's"})
				continue
			}
			if first == "" {
				first = found
			}
			pc.program(name, from+": "+found)
		}
		if first == "" && len(prof.Programs) > 0 && prof.probe != nil {
			fail(u, fmt.Errorf("profile %s: %s is not installed (searched the policy's PATH and the host's)", prof.ID(), prof.Programs[0]))
			continue
		}
		if prof.probe != nil {
			if err := prof.probe(pc, first); err != nil {
				fail(u, fmt.Errorf("profile %s: %w", prof.ID(), err))
				continue
			}
		}
		for _, n := range prof.Pass {
			spec.Env = append(spec.Env, n)
			pc.items = append(pc.items, ProfileItem{Profile: prof.ID(), Kind: ProfileEnvPass, Value: n, From: "profile"})
		}
		if len(prof.Cache) > 0 {
			cache := spec.cacheDir()
			if cache == "" {
				fail(u, fmt.Errorf("profile %s keeps caches: set the exec cache directory (ExecSpec.CacheDir, TOML cache_dir), or home or tmp_dir, inside a write root", prof.ID()))
				continue
			}
			for _, c := range prof.Cache {
				kv := c[0] + "=" + filepath.Join(cache, c[1])
				spec.SetEnv = append(spec.SetEnv, kv)
				pc.items = append(pc.items, ProfileItem{Profile: prof.ID(), Kind: ProfileEnvSet, Value: kv, From: "cache directory " + cache})
			}
		}
		for _, kv := range prof.Set {
			spec.SetEnv = append(spec.SetEnv, kv)
			pc.items = append(pc.items, ProfileItem{Profile: prof.ID(), Kind: ProfileEnvSet, Value: kv, From: "profile"})
		}
		path = pc.path
		items = append(items, pc.items...)
		rules = append(rules, pc.rules...)
	}
	if len(spec.Path) > 0 || len(path) != len(DefaultExecPath) {
		spec.Path = path
	}
	spec.Rules = append(append([]ExecRule(nil), spec.Rules...), rules...)
	return spec, items, errors.Join(errs...)
}

// lookup finds a profile program in the policy's PATH, else in the host's
// PATH (adding its directory to the policy's PATH).
func (pc *profileContext) lookup(name string) (found, from string, err error) {
	if f, err := LookPath(name, pc.path); err == nil {
		return f, "policy PATH", nil
	}
	var host []string
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if filepath.IsAbs(d) {
			host = append(host, d)
		}
	}
	f, err := LookPath(name, host)
	if err != nil {
		return "", "", err
	}
	pc.pathDir(filepath.Dir(f), "host PATH holds "+name)
	return f, "host PATH", nil
}

// cacheDir is where profiles keep caches: CacheDir, else HOME's .cache,
// else TMPDIR's cache, "" when none is set.
func (s *ExecSpec) cacheDir() string {
	switch {
	case s.CacheDir != "":
		return s.CacheDir
	case s.Home != "":
		return filepath.Join(s.Home, ".cache")
	case s.TmpDir != "":
		return filepath.Join(s.TmpDir, "cache")
	}
	return ""
}
