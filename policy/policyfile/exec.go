package policyfile

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/policy/internal/didyoumean"
)

// The [exec] table of a policy file (docs/policy.md):
//
//	[exec]
//	path    = ["/usr/bin", "/bin"]     # search path for bare names (absolute)
//	env     = ["LANG", "LC_*"]         # host variables children may receive
//	timeout = "2m"                     # default hard timeout; max_timeout caps overrides
//	output_limit = 16777216            # bytes per captured stream; -1: no cap
//	deny_network = true                # and the other switches of ExecSpec
//
//	[exec.limits]
//	cpu_seconds = 60                   # rlimits: cpu_seconds, file_size, address_space, open_files
//
//	[[exec.allow]]
//	program  = "git"                   # bare name (looked up in path) or absolute path
//	args     = ["status"]              # argument prefix; "*" matches any one argument
//	env      = ["GIT_SSH_COMMAND"]     # allow rules only
//	match    = [["status", "-s"]]      # examples checked when the policy is built
//	no_match = [["push"]]
//
//	[[exec.deny]]
//	program = "git"
//	args    = ["-c"]                   # deny tokens match anywhere in the arguments
//
// Every rule's Source is "file:line" of its [[exec.allow]] / [[exec.deny]]
// header (or of its inline table). Keys are checked here; the values are
// validated by Builder.Build, whose errors rulepos.go maps back to the
// rule's position.

// execKeys are the keys [exec] accepts.
var execKeys = []string{"allow", "deny", "path", "env", "home", "tmp_dir", "timeout", "max_timeout",
	"limits", "output_limit", "dir_in_read_roots", "require_landlock", "no_landlock", "deny_network",
	"no_cgroup", "landlock_exec_any", "no_sandbox", "require_sandbox", "host_network", "cache_dir", "no_builtin_deny"}

var (
	execAllowKeys  = []string{"program", "under", "args", "env", "match", "no_match"}
	execDenyKeys   = []string{"program", "under", "args", "match", "no_match"}
	execLimitsKeys = []string{"cpu_seconds", "file_size", "address_space", "open_files", "processes", "memory"}
)

// execFile is a decoded [exec] table: the spec and where its parts are
// written, for error positions and for layering.
type execFile struct {
	spec  policy.ExecSpec
	has   map[string]filePos // keys of [exec] present ("limits.cpu_seconds" for limits)
	rules []fileRule         // parallel to spec.Rules
	path  []filePos          // parallel to spec.Path
	env   []filePos          // parallel to spec.Env
}

// execSwitch is one boolean of ExecSpec and which value is the stricter.
type execSwitch struct {
	key    string
	field  func(*policy.ExecSpec) *bool
	strict bool
}

var execSwitches = []execSwitch{
	{"dir_in_read_roots", func(s *policy.ExecSpec) *bool { return &s.DirInReadRoots }, false},
	{"require_landlock", func(s *policy.ExecSpec) *bool { return &s.RequireLandlock }, true},
	{"no_landlock", func(s *policy.ExecSpec) *bool { return &s.NoLandlock }, false},
	{"deny_network", func(s *policy.ExecSpec) *bool { return &s.DenyNetwork }, true},
	{"no_cgroup", func(s *policy.ExecSpec) *bool { return &s.NoCgroup }, false},
	{"landlock_exec_any", func(s *policy.ExecSpec) *bool { return &s.LandlockExecAny }, false},
	{"no_sandbox", func(s *policy.ExecSpec) *bool { return &s.NoSandbox }, false},
	{"require_sandbox", func(s *policy.ExecSpec) *bool { return &s.RequireSandbox }, true},
	{"host_network", func(s *policy.ExecSpec) *bool { return &s.HostNetwork }, false},
	{"no_builtin_deny", func(s *policy.ExecSpec) *bool { return &s.NoBuiltinDeny }, false},
}

// execLimit is one field of ExecLimits.
type execLimit struct {
	key   string
	field func(*policy.ExecLimits) *uint64
}

var execLimitFields = []execLimit{
	{"cpu_seconds", func(l *policy.ExecLimits) *uint64 { return &l.CPUSeconds }},
	{"file_size", func(l *policy.ExecLimits) *uint64 { return &l.FileSize }},
	{"address_space", func(l *policy.ExecLimits) *uint64 { return &l.AddressSpace }},
	{"open_files", func(l *policy.ExecLimits) *uint64 { return &l.OpenFiles }},
	{"processes", func(l *policy.ExecLimits) *uint64 { return &l.Processes }},
	{"memory", func(l *policy.ExecLimits) *uint64 { return &l.MemoryBytes }},
}

// decodeExec reads the [exec] table.
func decodeExec(d *fileDecoder, t *tval) execFile {
	x := execFile{has: map[string]filePos{}}
	s := &x.spec
	for _, f := range t.fields {
		path := "exec." + f.key
		switch f.key {
		case "allow", "deny":
			d.execRules(f, path, f.key == "deny", &x)
		case "path":
			for _, e := range d.entries(f, path, policy.KindExec) {
				if !filepath.IsAbs(e.value) {
					d.fail(e.at, path, strconv.Quote(e.value)+": PATH entries must be absolute")
					continue
				}
				s.Path = append(s.Path, e.value)
				x.path = append(x.path, e.at)
			}
		case "env":
			for _, e := range d.entries(f, path, policy.KindExec) {
				if d.envName(e, path) {
					s.Env = append(s.Env, e.value)
					x.env = append(x.env, e.at)
				}
			}
		case "home", "tmp_dir", "cache_dir":
			v, ok := d.str(f, path)
			if !ok {
				continue
			}
			if !filepath.IsAbs(v) {
				d.fail(f.val.pos, path, strconv.Quote(v)+": not an absolute path")
				continue
			}
			switch f.key {
			case "home":
				s.Home = v
			case "tmp_dir":
				s.TmpDir = v
			default:
				s.CacheDir = v
			}
		case "timeout", "max_timeout":
			v, ok := d.duration(f, path)
			if !ok {
				continue
			}
			if f.key == "timeout" {
				s.Timeout = v
			} else {
				s.MaxTimeout = v
			}
		case "output_limit":
			v, ok := d.integer(f, path)
			if !ok {
				continue
			}
			s.OutputLimit = v
		case "limits":
			lt := d.table(f, path)
			if lt == nil {
				continue
			}
			for _, lf := range lt.fields {
				lpath := path + "." + lf.key
				i := slices.IndexFunc(execLimitFields, func(l execLimit) bool { return l.key == lf.key })
				if i < 0 {
					d.unknownIn(lpath, lf, execLimitsKeys, "")
					continue
				}
				v, ok := d.integer(lf, lpath)
				if !ok {
					continue
				}
				if v < 0 {
					d.fail(lf.val.pos, lpath, "must not be negative (leave the key out for no limit)")
					continue
				}
				*execLimitFields[i].field(&s.Limits) = uint64(v)
				x.has["limits."+lf.key] = lf.pos
			}
		default:
			i := slices.IndexFunc(execSwitches, func(w execSwitch) bool { return w.key == f.key })
			if i < 0 && didyoumean.Normalize(f.key) == "landlock_exec_only_allowed" {
				d.fail(f.pos, path, "unknown key: executing only allowed programs is the default now; remove it (landlock_exec_any = true turns the restriction off)")
				continue
			}
			if i < 0 {
				hint := ""
				if k := didyoumean.Normalize(f.key); k == "rule" || k == "rules" || k == "program" || k == "programs" {
					hint = "exec rules are written as [[exec.allow]] and [[exec.deny]] tables"
				}
				if hint != "" && didyoumean.Closest(f.key, execKeys) == "" {
					d.unknownIn(path, f, execKeys, hint)
				} else {
					d.unknown("exec", f, execKeys)
				}
				continue
			}
			v, ok := d.boolean(f, path)
			if !ok {
				continue
			}
			*execSwitches[i].field(s) = v
		}
		x.has[f.key] = f.pos
	}
	if at, ok := x.has["no_landlock"]; ok && s.NoLandlock && (s.RequireLandlock || s.DenyNetwork) {
		d.fail(at, "exec.no_landlock", "contradicts require_landlock or deny_network")
	}
	return x
}

// execRules reads [[exec.allow]] or [[exec.deny]] (or an array of inline
// tables under those keys).
func (d *fileDecoder) execRules(f *tfield, path string, deny bool, x *execFile) {
	tables := d.tables(f, path)
	known := execAllowKeys
	if deny {
		known = execDenyKeys
	}
	for i, t := range tables {
		rpath := path + "[" + strconv.Itoa(i) + "]"
		r := policy.ExecRule{Deny: deny}
		var hasProgram, hasUnder bool
		nerrs := len(d.errs)
		for _, rf := range t.fields {
			kpath := rpath + "." + rf.key
			switch rf.key {
			case "program":
				r.Program, hasProgram = d.str(rf, kpath)
			case "under":
				r.Under, hasUnder = d.str(rf, kpath)
			case "args":
				for _, e := range d.entries(rf, kpath, policy.KindExec) {
					r.Args = append(r.Args, e.value)
				}
			case "env":
				if deny {
					d.unknownIn(kpath, rf, known, "a deny rule never lets a command run, so it has no env; put env on the allow rule")
					continue
				}
				for _, e := range d.entries(rf, kpath, policy.KindExec) {
					if d.envName(e, kpath) {
						r.Env = append(r.Env, e.value)
					}
				}
			case "match":
				r.Match = d.argLists(rf, kpath)
			case "no_match":
				r.NoMatch = d.argLists(rf, kpath)
			default:
				hint := ""
				if k := didyoumean.Normalize(rf.key); k == "deny" || k == "allow" {
					hint = "allow and deny rules are separate tables: [[exec.allow]] and [[exec.deny]]"
				}
				d.unknownIn(kpath, rf, known, hint)
			}
		}
		if hasProgram && hasUnder {
			d.fail(t.pos, rpath, "a rule names either a program or a directory (under), not both")
			continue
		}
		if !hasProgram && !hasUnder {
			if t.field("program") == nil && t.field("under") == nil && len(d.errs) == nerrs { // a misspelt key says enough
				d.fail(t.pos, rpath, "missing program (or under, for every program under a directory)")
			}
			continue
		}
		value := r.Program
		if hasUnder {
			value = r.Under
		}
		fr := fileRule{file: d.name, at: t.pos, key: rpath, value: value}
		r.Source = fr.source()
		x.spec.Rules = append(x.spec.Rules, r)
		x.rules = append(x.rules, fr)
	}
}

// tables reads an array of tables: [[name]] sections or an array of inline
// tables. An empty array is an empty list.
func (d *fileDecoder) tables(f *tfield, path string) []*tval {
	if f.val.kind != tArray {
		d.fail(f.val.pos, path, "expected an array of tables ([["+path+"]]), got "+f.val.kind.String())
		return nil
	}
	var out []*tval
	for i, el := range f.val.elems {
		if el.kind != tTable {
			d.fail(el.pos, path+"["+strconv.Itoa(i)+"]", "expected a table, got "+el.kind.String())
			continue
		}
		out = append(out, el)
	}
	return out
}

// argLists reads an array of arrays of strings (example argument lists).
func (d *fileDecoder) argLists(f *tfield, path string) [][]string {
	if f.val.kind != tArray {
		d.fail(f.val.pos, path, "expected an array of argument lists ([[\"status\", \"-s\"]]), got "+f.val.kind.String())
		return nil
	}
	out := [][]string{}
	for i, el := range f.val.elems {
		epath := path + "[" + strconv.Itoa(i) + "]"
		if el.kind != tArray {
			d.fail(el.pos, epath, "expected an array of strings, got "+el.kind.String())
			continue
		}
		args := []string{}
		for j, a := range el.elems {
			if a.kind != tString {
				d.fail(a.pos, epath+"["+strconv.Itoa(j)+"]", "expected a string, got "+a.kind.String())
				continue
			}
			args = append(args, a.str)
		}
		out = append(out, args)
	}
	return out
}

// envName checks a variable name or "PREFIX*" pattern.
func (d *fileDecoder) envName(e fileEntry, path string) bool {
	n := strings.TrimSuffix(e.value, "*")
	if e.value == "" || strings.ContainsAny(n, "=*\x00") {
		d.fail(e.at, path, strconv.Quote(e.value)+`: want a variable name, or a prefix ending in "*"`)
		return false
	}
	return true
}

func (d *fileDecoder) duration(f *tfield, path string) (time.Duration, bool) {
	if f.val.kind != tString {
		d.fail(f.val.pos, path, `expected a duration string ("90s", "5m"), got `+f.val.kind.String())
		return 0, false
	}
	v, err := time.ParseDuration(f.val.str)
	if err != nil {
		d.fail(f.val.pos, path, strings.TrimPrefix(err.Error(), "time: "))
		return 0, false
	}
	if v < 0 {
		d.fail(f.val.pos, path, strconv.Quote(f.val.str)+": negative duration")
		return 0, false
	}
	return v, true
}

func (d *fileDecoder) integer(f *tfield, path string) (int64, bool) {
	if f.val.kind != tInt {
		d.fail(f.val.pos, path, "expected an integer, got "+f.val.kind.String())
		return 0, false
	}
	return f.val.i, true
}

// unknownIn reports a key that a rule table (or a table under [exec] or
// [net]) does not accept, with the closest known key; hint replaces the
// list of known keys when nothing is close.
func (d *fileDecoder) unknownIn(path string, f *tfield, known []string, hint string) {
	e := d.fail(f.pos, path, "unknown key")
	if s := didyoumean.Closest(f.key, known); s != "" {
		e.Suggest = s
		return
	}
	if hint != "" {
		e.Msg += "; " + hint
		return
	}
	e.Msg += "; known keys: " + strings.Join(known, ", ")
}

// alone is the workspace layer's exec spec for validating it on its own:
// without a path of its own it searches the operator's.
func (ws execFile) alone(op execFile) policy.ExecSpec {
	s := ws.spec
	if _, ok := ws.has["path"]; !ok {
		s.Path = op.spec.Path
	}
	return s
}

// layerExec combines the exec settings of an operator and a workspace layer
// (op is the operator layer built alone). A workspace layer may only narrow:
//
//   - [[exec.allow]], when the workspace has the key (even empty), replaces
//     the operator's allow rules, and each of its rules must lie within an
//     operator allow rule for the same program (real path): the operator
//     rule's args a token prefix of the workspace rule's, an operator "*"
//     covering any token. Its env names must be allowed by the operator's
//     [exec] env or by every operator allow rule of that program whose args
//     overlap it;
//   - [[exec.deny]] rules are added; the operator's always stay;
//   - path must be a subset of the operator's path (DefaultExecPath when it
//     sets none), env a subset of the operator's env; when path changes, the
//     operator's rules keep the programs they resolved to in its layer;
//   - home and tmp_dir may only repeat the operator's value;
//   - timeout, max_timeout, output_limit and limits may only get smaller
//     (a value the operator leaves unlimited may be set);
//   - switches only in the stricter direction (require_landlock,
//     deny_network, require_sandbox on; dir_in_read_roots, no_landlock,
//     no_cgroup, landlock_exec_any, no_sandbox, host_network off). Turning on a Landlock requirement turns
//     no_landlock off.
//
// Violations are reported through d (the workspace file) with the
// workspace entry's position and the reason.
func layerExec(d *fileDecoder, op *policy.Policy, opf, ws execFile) policy.ExecSpec {
	eff := opf.spec
	opPath := op.ExecPath()
	wsSets := func(k string) bool { _, ok := ws.has[k]; return ok }
	if at, ok := ws.has["use"]; ok {
		d.fail(at, "use", "toolchain profiles are the operator layer's; a workspace layer can only narrow its rules")
	}

	// path: a subset of the operator's search path.
	effPath := opPath
	if wsSets("path") {
		eff.Path = ws.spec.Path
		effPath = ws.spec.Path
		if len(effPath) == 0 { // path = [] means the default
			effPath = policy.DefaultExecPath
		}
		for i, p := range effPath {
			if !slices.Contains(opPath, p) {
				at := ws.has["path"]
				if len(ws.path) > 0 {
					at = ws.path[i]
				}
				d.fail(at, "exec.path", strconv.Quote(p)+" is not in the operator layer's exec path ("+
					strings.Join(opPath, ", ")+"); a workspace layer can only narrow it")
			}
		}
	}

	// The operator's rules keep the programs they resolved to.
	var opAllow, opDeny []policy.ExecRule
	for _, r := range opf.spec.Rules {
		if wsSets("path") && r.Under == "" {
			if prog, err := policy.RealProgram(r.Program, opPath); err == nil { // it did when the layer was built
				r.Program = prog
			}
		}
		if r.Deny {
			opDeny = append(opDeny, r)
		} else {
			opAllow = append(opAllow, r)
		}
	}
	var wsAllow, wsDeny []policy.ExecRule
	for i, r := range ws.spec.Rules {
		if r.Deny {
			wsDeny = append(wsDeny, r)
			continue
		}
		wsAllow = append(wsAllow, r)
		at, key := ws.rules[i].at, ws.rules[i].key
		switch why, err := op.ExecAllowWithin(r, effPath); {
		case err != nil:
			d.fail(at, key, err.Error())
		case why != "":
			d.fail(at, key, why+"; a workspace layer can only narrow the operator's exec rules")
		}
	}
	rules := opDeny
	if wsSets("allow") {
		rules = append(rules, wsAllow...)
	} else {
		rules = append(opAllow, rules...)
	}
	eff.Rules = append(rules, wsDeny...)

	if wsSets("env") {
		for i, n := range ws.spec.Env {
			if !op.ExecEnvWithin(n) {
				d.fail(ws.env[i], "exec.env", strconv.Quote(n)+" is not allowed by the operator layer's exec env ("+
					strings.Join(op.Exec().Env, ", ")+"); a workspace layer can only narrow it")
			}
		}
		eff.Env = ws.spec.Env
	}

	for _, pair := range []struct {
		key      string
		op, ws   string
		effected *string
	}{{"home", opf.spec.Home, ws.spec.Home, &eff.Home}, {"tmp_dir", opf.spec.TmpDir, ws.spec.TmpDir, &eff.TmpDir},
		{"cache_dir", opf.spec.CacheDir, ws.spec.CacheDir, &eff.CacheDir}} {
		if !wsSets(pair.key) {
			continue
		}
		if filepath.Clean(pair.ws) != filepath.Clean(pair.op) {
			was := strconv.Quote(pair.op)
			if pair.op == "" {
				was = "unset (the command's working directory)"
			}
			d.fail(ws.has[pair.key], "exec."+pair.key, "a workspace layer cannot move it (operator: "+was+"): programs read their configuration from there")
			continue
		}
		*pair.effected = pair.ws
	}

	// Numbers: 0 means unlimited for all of these but output_limit.
	durs := []struct {
		key      string
		op, ws   time.Duration
		effected *time.Duration
	}{{"timeout", opf.spec.Timeout, ws.spec.Timeout, &eff.Timeout}, {"max_timeout", opf.spec.MaxTimeout, ws.spec.MaxTimeout, &eff.MaxTimeout}}
	for _, p := range durs {
		if !wsSets(p.key) {
			continue
		}
		if p.op != 0 && (p.ws == 0 || p.ws > p.op) {
			d.fail(ws.has[p.key], "exec."+p.key, "a workspace layer cannot raise it from "+p.op.String()+" to "+durString(p.ws))
			continue
		}
		*p.effected = p.ws
	}
	for _, l := range execLimitFields {
		key := "limits." + l.key
		if !wsSets(key) {
			continue
		}
		opv, wsv := *l.field(&opf.spec.Limits), *l.field(&ws.spec.Limits)
		if opv != 0 && (wsv == 0 || wsv > opv) {
			d.fail(ws.has[key], "exec."+key, "a workspace layer cannot raise it from "+strconv.FormatUint(opv, 10)+" to "+limitString(wsv))
			continue
		}
		*l.field(&eff.Limits) = wsv
	}
	if wsSets("output_limit") {
		if outputCap(ws.spec.OutputLimit) > outputCap(opf.spec.OutputLimit) {
			d.fail(ws.has["output_limit"], "exec.output_limit", "a workspace layer cannot raise it from "+
				outputString(opf.spec.OutputLimit)+" to "+outputString(ws.spec.OutputLimit))
		} else {
			eff.OutputLimit = ws.spec.OutputLimit
		}
	}

	for _, sw := range execSwitches {
		if !wsSets(sw.key) {
			continue
		}
		opv, wsv := *sw.field(&opf.spec), *sw.field(&ws.spec)
		if wsv != sw.strict && opv == sw.strict {
			d.fail(ws.has[sw.key], "exec."+sw.key, "a workspace layer cannot turn it "+onOff(wsv)+": the operator layer turns it "+onOff(opv))
			continue
		}
		*sw.field(&eff) = wsv
	}
	if eff.RequireLandlock || eff.DenyNetwork {
		eff.NoLandlock = false
	}
	return eff
}

func durString(d time.Duration) string {
	if d == 0 {
		return "0 (none)"
	}
	return d.String()
}

func limitString(v uint64) string {
	if v == 0 {
		return "0 (unlimited)"
	}
	return strconv.FormatUint(v, 10)
}

// outputCap is the cap an OutputLimit means (-1 for none).
func outputCap(v int64) uint64 {
	switch {
	case v == 0:
		return policy.DefaultOutputLimit
	case v < 0:
		return ^uint64(0)
	}
	return uint64(v)
}

func outputString(v int64) string {
	switch {
	case v == 0:
		return strconv.Itoa(policy.DefaultOutputLimit) + " (the default)"
	case v < 0:
		return strconv.FormatInt(v, 10) + " (no cap)"
	}
	return strconv.FormatInt(v, 10)
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}
