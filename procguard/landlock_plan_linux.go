package procguard

import (
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"weak"

	"golang.org/x/sys/unix"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard/landlock"
)

// noteProtected says what Landlock cannot do: its rights are inherited by
// everything beneath a rule, so a protected name inside a write root cannot
// be made read-only by the kernel (the guard still refuses it in-process).
const noteProtected = "protected names inside write roots are not kernel-enforced (Landlock rights are inherited by subtrees)"

// devices stay readable and writable for children.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty"}

// plannedConfinement says, before the decision is recorded, what kernel
// confinement the child will get: as text for the record's detail, and as
// the facts a host branches on. Start fails rather than run with less.
func (c *Cmd) plannedConfinement(pr *prepared) (string, *audit.Child) {
	spec := pr.pol.Exec()
	child := &audit.Child{Dir: pr.req.Dir, Network: audit.NetworkHost}
	text := c.plannedLandlock(pr)
	if abi, err := landlock.ABI(); err == nil && !spec.NoLandlock {
		child.Landlock, child.LandlockABI = audit.LandlockExecAllowed, abi
		if spec.LandlockExecAny || pr.req.ExecJudged {
			child.Landlock = audit.LandlockExecAny
		}
		if spec.DenyNetwork && abi >= 4 {
			child.Network = audit.NetworkHostNoTCP
		}
	} else {
		child.Note = text
	}
	if !spec.NoSandbox && sandboxMissing.Load() == nil {
		child.Sandbox = true
		child.ExecJudged = pr.req.ExecJudged
		switch {
		case spec.HostNetwork:
			child.Network = audit.NetworkHost
		case spec.DenyNetwork:
			child.Network = audit.NetworkNone
		default:
			// As sandboxSpec: allowed loopback ports are forwarded, and
			// with any net rule egress goes through the proxy.
			child.Network = audit.NetworkNone
			if ports, _ := pr.pol.LoopbackPorts(); len(ports) > 0 || pr.pol.NetRuleCount() > 0 {
				child.Network = audit.NetworkForwarded
			}
		}
		// The sandbox holds protected names and read-deny; Landlock the rest.
		return "sandbox=namespaces, masks, seccomp file calls; " + strings.Replace(text, "; "+noteProtected, "", 1), child
	}
	if why := sandboxMissing.Load(); why != nil && !spec.NoSandbox {
		child.Note = strings.TrimPrefix(child.Note+"; ", "; ") + "no sandbox: " + *why
	}
	return text, child
}

// withoutProtectedNote drops what Landlock cannot do from a note once the
// sandbox covers it.
func withoutProtectedNote(note string) string {
	note = strings.Replace(note, noteProtected+"; ", "", 1)
	return strings.Replace(note, noteProtected, "protected names held by the sandbox (read-only binds, seccomp)", 1)
}

func (c *Cmd) plannedLandlock(pr *prepared) string {
	spec := pr.pol.Exec()
	if spec.NoLandlock {
		return "landlock=off (policy)"
	}
	abi, err := landlock.ABI()
	if err != nil {
		return "landlock=none (" + err.Error() + ")"
	}
	sig := ""
	if spec.DenyNetwork && abi >= 4 {
		sig += "; no TCP connect or bind"
	}
	if abi >= 6 {
		sig += "; no signals to processes outside the child's domain"
	}
	if spec.LandlockExecAny {
		return fmt.Sprintf("landlock=abi %d (write roots rwx, everything else rx%s; %s)", abi, sig, noteProtected)
	}
	if pr.req.ExecJudged {
		return fmt.Sprintf("landlock=abi %d (write roots rwx, everything else rx: every exec is judged when it happens%s; %s)", abi, sig, noteProtected)
	}
	return fmt.Sprintf("landlock=abi %d (write roots rw, everything else r; execute only allowed programs, the programs approved for this command and their interpreters%s; %s)", abi, sig, noteProtected)
}

// writableRoots are the write roots every policy of the scope allows
// writing to, with the host working directory for a "." root. Whether
// they exist is left to the caller: a root may be made after the policy.
func writableRoots(pr *prepared) []string {
	var cand []string
	for _, p := range pr.pols {
		cand = append(cand, p.WriteRoots()...)
		if p.DotRoot() && pr.cwd != "" {
			cand = append(cand, pr.cwd)
		}
	}
	var out []string
next:
	for _, r := range cand {
		for _, p := range pr.pols {
			if d := p.CheckPath(policy.OpWrite, r, pr.cwd); !d.Allowed {
				continue next
			}
		}
		out = append(out, r)
	}
	return out
}

// runtimeMinimum is what a program needs to load and run when the policy
// has read roots: the dynamic loader's cache and library directories, and
// the sandbox's own /proc. The programs themselves and their interpreters
// are granted one by one (executables).
var runtimeMinimum = []string{
	"/etc/ld.so.cache", "/lib", "/lib64", "/lib32", "/usr/lib", "/usr/lib64", "/usr/lib32", "/proc",
}

// readableRoots returns the read roots every policy of the scope allows
// reading from, and false when no policy has read roots (reads are then
// allowed everywhere outside read-deny).
func readableRoots(pr *prepared) ([]string, bool) {
	var cand []string
	limited := false
	for _, p := range pr.pols {
		if rr := p.ReadRoots(); len(rr) > 0 {
			limited = true
			cand = append(cand, rr...)
		}
	}
	if !limited {
		return nil, false
	}
	var out []string
next:
	for _, r := range cand {
		for _, p := range pr.pols {
			if d := p.CheckPath(policy.OpRead, r, pr.cwd); !d.Allowed {
				continue next
			}
		}
		out = append(out, r)
	}
	return out, true
}

// landlockRuleset builds the child's ruleset, or nil with a note when there
// is none; an error when the policy requires Landlock and it is missing.
func (c *Cmd) landlockRuleset(pr *prepared) (*landlock.Ruleset, string, error) {
	return c.landlockRulesetFor(pr, pr.pol.Exec().LandlockExecAny)
}

// landlockRulesetFor is landlockRuleset; execAny lets the child execute
// wherever it may read, as ExecSpec.LandlockExecAny does: for a sandbox
// that judges every exec when it happens, where Landlock's execute right
// would only refuse what that judgement allows (a wrapper no rule names, a
// program Warn or BeforeDeny lets through).
func (c *Cmd) landlockRulesetFor(pr *prepared, execAny bool) (*landlock.Ruleset, string, error) {
	spec := pr.pol.Exec()
	if spec.NoLandlock {
		return nil, "disabled by the policy (ExecSpec.NoLandlock)", nil
	}
	abi, err := landlock.ABI()
	if err != nil {
		if spec.RequireLandlock {
			return nil, err.Error(), fmt.Errorf("procguard: the policy requires Landlock: %w", err)
		}
		return nil, err.Error(), nil
	}
	rs := &landlock.Ruleset{ABI: abi, Scoped: landlock.ScopeSignal, DenyTCP: spec.DenyNetwork}
	note := noteProtected
	if spec.DenyNetwork && abi < 4 {
		if spec.RequireLandlock {
			return nil, "", fmt.Errorf("procguard: the policy denies children the network, which needs Landlock ABI 4 (this kernel has %d)", abi)
		}
		note += "; network not restricted: Landlock ABI 4 needed"
	}
	base := baseFor(pr)
	everywhere, writable := uint64(landlock.ReadExec), landlock.HandledFS(abi)
	if !execAny {
		// Execute only named programs (every ABI handles Execute).
		everywhere &^= landlock.Execute
		writable &^= landlock.Execute
	}
	if !execAny || (base.readLimited && !spec.LandlockExecAny) {
		// The named programs are executable (and readable) wherever they
		// are: the only ones without execAny, and, with it, those outside
		// the read roots of a policy that limits reads.
		for _, prog := range executables(pr, base) {
			rs.Rules = append(rs.Rules, landlock.Rule{Path: prog, Access: landlock.Execute | landlock.ReadFile})
		}
		// Directories whose programs an allow rule names (ExecRule.Under)
		// that no child can write (a tool's helper directory) are
		// executable as a whole; those inside a write root only in the
		// sandbox (sandboxExecDirs).
		for _, d := range base.systemDirs {
			rs.Rules = append(rs.Rules, landlock.Rule{Path: d, Access: landlock.Execute | landlock.ReadFile})
		}
	}
	if base.readLimited {
		// Reads are limited to the read roots: nothing is readable
		// everywhere, and what a program needs to load is granted by name.
		for _, r := range base.readRoots {
			if landlock.Exists(r) {
				rs.Rules = append(rs.Rules, landlock.Rule{Path: r, Access: everywhere})
			}
		}
		for _, r := range base.runtime {
			rs.Rules = append(rs.Rules, landlock.Rule{Path: r, Access: everywhere})
		}
		everywhere = 0
	}
	if everywhere != 0 {
		rs.Rules = append(rs.Rules, landlock.Rule{Path: "/", Access: everywhere})
	}
	for _, r := range base.writeRoots {
		if landlock.Exists(r) {
			rs.Rules = append(rs.Rules, landlock.Rule{Path: r, Access: writable})
		}
	}
	for _, d := range base.devices {
		rs.Rules = append(rs.Rules, landlock.Rule{Path: d,
			Access: landlock.ReadFile | landlock.WriteFile | landlock.Truncate | landlock.IoctlDev})
	}
	rs.Normalize()
	if len(rs.Rules) == 0 {
		return nil, "", errors.New("procguard: empty Landlock ruleset")
	}
	return rs, note, nil
}

// execDirs returns the directories of the Under allow rules every policy
// of the scope shares (an equal or enclosing directory in each) that exist,
// split into those no write root overlaps and those that overlap one.
func execDirs(pr *prepared, roots []string) (system, writable []string) {
next:
	for _, d := range pr.pol.ExecDirs() {
		for _, p := range pr.pols[1:] {
			if !slices.ContainsFunc(p.ExecDirs(), func(o string) bool { return o == d || within(d, o) }) {
				continue next
			}
		}
		if !landlock.Exists(d) {
			continue
		}
		if slices.ContainsFunc(roots, func(r string) bool { return r == d || within(d, r) || within(r, d) }) {
			writable = append(writable, d)
		} else {
			system = append(system, d)
		}
	}
	return system, writable
}

// within reports whether path lies strictly under dir.
func within(path, dir string) bool {
	return dir == "/" && path != "/" || strings.HasPrefix(path, dir+"/")
}

// sandboxExecDirs returns rs with execute rights on the Under directories
// that lie in write roots: granted only to a child in the sandbox, whose
// other layers (protected names, the file-call supervisor, the network
// namespace) still hold what such a program does. Without the sandbox a
// child executes only the files of those directories its command's
// decision named (executables). rs itself is not changed.
func sandboxExecDirs(pr *prepared, rs *landlock.Ruleset) *landlock.Ruleset {
	if rs == nil || pr.pol.Exec().LandlockExecAny || pr.req.ExecJudged {
		return rs
	}
	writable := baseFor(pr).writableDirs
	if len(writable) == 0 {
		return rs
	}
	c := *rs
	c.Rules = slices.Clone(rs.Rules)
	for _, d := range writable {
		c.Rules = append(c.Rules, landlock.Rule{Path: d, Access: landlock.Execute | landlock.ReadFile})
	}
	c.Normalize()
	return &c
}

// executables are the files a child may execute unless the policy sets
// LandlockExecAny: the programs of every allow rule all policies of the
// scope share (base.programs), the programs the decision approved for this
// command (the program started, every command and wrapper of its plan,
// which covers a command rescued by OnCall, BeforeDeny or Warn), plus the
// ELF interpreters and "#!" interpreters they need ("#!/usr/bin/env NAME"
// adds env and NAME looked up in the policy's PATH, which is the child's
// PATH).
//
// The programs of allow rules come first and the ruleset is normalized, so
// a command whose programs all have allow rules gets the same ruleset (and
// the same reused restricted thread) as any other such command.
func executables(pr *prepared, base *landlockBase) []string {
	out := slices.Clone(base.programs)
	seen := base.programSet
	var own map[string]bool // programs of this command beyond the base
	var add func(p string, depth int)
	add = func(p string, depth int) {
		if p == "" || seen[p] || own[p] || depth > 4 {
			return
		}
		if own == nil {
			own = map[string]bool{}
		}
		own[p] = true
		out = append(out, p)
		for _, interp := range interpreters(p, pr.pol.ExecPath()) {
			add(interp, depth+1)
		}
	}
	add(pr.program, 0)
	for _, c := range pr.req.Plan.Commands {
		add(c.Program, 0)
	}
	for _, c := range pr.req.Plan.Wrappers {
		add(c.Program, 0)
	}
	return out
}

// landlockBase is the part of a child's ruleset that depends only on the
// scope's policies (and the host working directory a "." root stands
// for), worked out once per policy snapshot rather than on every start:
// resolving interpreters and checking which system paths exist is most of
// what building a ruleset costs. A reloaded policy is a new snapshot and
// gets a new base. What may appear later (a write or read root made after
// the policy) is checked on every start instead.
type landlockBase struct {
	programs   []string        // shared allow-rule programs and their interpreters
	programSet map[string]bool // programs as a set
	systemDirs []string        // Under directories no write root overlaps (existing)
	// writableDirs are Under directories that overlap a write root
	// (existing): executable in the sandbox only.
	writableDirs []string
	readLimited  bool     // some policy has read roots
	readRoots    []string // read roots every policy allows
	runtime      []string // runtimeMinimum entries that exist
	writeRoots   []string // write roots every policy allows
	devices      []string // devices that exist
}

// baseEntry is one cached base with what it was built for. Policies are
// held by weak pointers: a policy's address may be reused once it is
// collected, a weak pointer never is, so a new policy at an old address
// cannot pick up the old policy's base.
type baseEntry struct {
	pols []weak.Pointer[policy.Policy]
	cwd  string
	base *landlockBase
}

var (
	baseMu    sync.Mutex
	baseCache []baseEntry // most recent last; a few snapshots at most
)

const baseCacheSize = 16

// baseFor returns the cached base for pr's policies, building it on first
// use. The cache keeps a few snapshots: hot reloads replace policies, and
// an old snapshot's base is simply built again if it comes back.
func baseFor(pr *prepared) *landlockBase {
	key := make([]weak.Pointer[policy.Policy], len(pr.pols))
	for i, p := range pr.pols {
		key[i] = weak.Make(p)
	}
	baseMu.Lock()
	for _, e := range slices.Backward(baseCache) {
		if e.cwd == pr.cwd && slices.Equal(e.pols, key) {
			baseMu.Unlock()
			return e.base
		}
	}
	baseMu.Unlock()
	b := buildBase(pr)
	baseMu.Lock()
	if len(baseCache) >= baseCacheSize {
		baseCache = slices.Delete(baseCache, 0, 1)
	}
	baseCache = append(baseCache, baseEntry{pols: key, cwd: pr.cwd, base: b})
	baseMu.Unlock()
	return b
}

func buildBase(pr *prepared) *landlockBase {
	b := &landlockBase{programSet: map[string]bool{}}
	var add func(p string, depth int)
	add = func(p string, depth int) {
		if p == "" || b.programSet[p] || depth > 4 {
			return
		}
		b.programSet[p] = true
		b.programs = append(b.programs, p)
		for _, interp := range interpreters(p, pr.pol.ExecPath()) {
			add(interp, depth+1)
		}
	}
	for _, prog := range pr.pol.ExecPrograms() {
		shared := true
		for _, p := range pr.pols[1:] {
			if !slices.Contains(p.ExecPrograms(), prog) {
				shared = false
			}
		}
		if shared {
			add(prog, 0)
		}
	}
	b.writeRoots = writableRoots(pr)
	b.systemDirs, b.writableDirs = execDirs(pr, b.writeRoots)
	b.readRoots, b.readLimited = readableRoots(pr)
	for _, r := range runtimeMinimum {
		if landlock.Exists(r) {
			b.runtime = append(b.runtime, r)
		}
	}
	for _, d := range devices {
		if landlock.Exists(d) {
			b.devices = append(b.devices, d)
		}
	}
	return b
}

// interpreters returns the real paths of what executing path needs besides
// path: its ELF interpreter, or its "#!" interpreter and, for
// "#!/usr/bin/env [-S] NAME", NAME looked up in search.
//
// Every start of a confined command asks this for each program it may run,
// so the answer is cached with the program's identity (interpreter): the
// real path of a program's own interpreter is resolved once per version of
// the program. NAME of an env line is looked up on every call, as it
// depends on search and on what is installed now.
func interpreters(path string, search []string) []string {
	in := interpreter(path)
	if len(in.fields) == 0 || !filepath.IsAbs(in.fields[0]) {
		return nil // a relative "#!" resolves against the child's directory: not granted
	}
	if in.real == "" {
		return nil
	}
	out := []string{in.real}
	if filepath.Base(in.real) == "env" || filepath.Base(in.fields[0]) == "env" {
		for _, f := range in.fields[1:] {
			if strings.HasPrefix(f, "-") || strings.ContainsRune(f, '=') {
				continue // options (-S, -i, -u NAME is rare in "#!") and assignments
			}
			if found, err := policy.LookPath(f, search); err == nil {
				if real, err := filepath.EvalSymlinks(found); err == nil {
					out = append(out, real)
				}
			}
			break
		}
	}
	return out
}

// interpInfo is what a program needs to be executed: the ELF interpreter
// (PT_INTERP) or the "#!" line's interpreter and arguments (fields), and
// the real path of fields[0] ("" when it does not resolve).
type interpInfo struct {
	fields []string
	real   string
}

// interpreter returns the interpreter of an executable file; zero when
// none. Results are cached by path and file identity (device, inode, size,
// modification time), so a replaced file is read again.
func interpreter(path string) interpInfo {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return interpInfo{}
	}
	id := interpID{path: path, dev: uint64(st.Dev), ino: st.Ino, size: st.Size, mtime: st.Mtim}
	interpMu.Lock()
	v, ok := interpCache[id]
	interpMu.Unlock()
	if ok {
		return v
	}
	v.fields = readInterpreter(path)
	if len(v.fields) > 0 && filepath.IsAbs(v.fields[0]) {
		v.real, _ = filepath.EvalSymlinks(v.fields[0])
	}
	interpMu.Lock()
	if len(interpCache) >= 1024 {
		clear(interpCache)
	}
	interpCache[id] = v
	interpMu.Unlock()
	return v
}

type interpID struct {
	path     string
	dev, ino uint64
	size     int64
	mtime    unix.Timespec
}

var (
	interpMu    sync.Mutex
	interpCache = map[interpID]interpInfo{}
)

func readInterpreter(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var head [256]byte
	n, _ := io.ReadFull(f, head[:])
	if n > 2 && head[0] == '#' && head[1] == '!' {
		line := string(head[2:n])
		if i := strings.IndexByte(line, '\n'); i >= 0 {
			line = line[:i]
		}
		return strings.Fields(line)
	}
	ef, err := elf.NewFile(f)
	if err != nil {
		return nil
	}
	for _, p := range ef.Progs {
		if p.Type == elf.PT_INTERP && p.Filesz <= 4096 { // PATH_MAX
			b := make([]byte, p.Filesz)
			if _, err := p.ReadAt(b, 0); err == nil {
				return []string{strings.TrimRight(string(b), "\x00")}
			}
		}
	}
	return nil
}
