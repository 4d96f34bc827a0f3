package policyfile

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/auditguard/auditguard/policy"
)

// LoadLayers loads an operator policy file and a workspace policy file on
// top of it. The operator layer is the host's own; the workspace layer lives
// with the project the agent works on and may only narrow:
//
//   - its write roots replace the operator's, and each must lie within an
//     operator write root ("." only if the operator has "." too);
//   - its read roots, when it lists any, replace the operator's, and each
//     must lie within an operator read or write root (anywhere, when the
//     operator does not limit reads);
//   - its read_deny and protected entries are added to the operator's,
//     which always stay; it cannot set replace_protected;
//   - its modes may only be stricter (off < warn < enforce; an operator
//     mode left unset counts as enforce);
//   - exec and net rules follow layerExec and layerNet.
//
// A workspace layer that tries to widen is rejected whole, with the reason
// and the file:line of each offending entry. Every effective rule keeps the
// file:line it came from, so decisions say which layer decided.
func LoadLayers(operatorPath, workspacePath string, opts ...LoadOption) (*File, error) {
	op, err := os.ReadFile(operatorPath)
	if err != nil {
		return nil, err
	}
	if workspacePath == "" {
		return Parse(operatorPath, op, opts...)
	}
	ws, err := os.ReadFile(workspacePath)
	if err != nil {
		return nil, err
	}
	return parseLayers(operatorPath, op, workspacePath, ws, opts...)
}

func parseLayers(opName string, opData []byte, wsName string, wsData []byte, opts ...LoadOption) (*File, error) {
	var c loadConfig
	for _, o := range opts {
		o(&c)
	}
	op, errs := decodeFile(opName, opData)
	ws, wsErrs := decodeFile(wsName, wsData)
	if errs = append(errs, wsErrs...); len(errs) > 0 {
		if op == nil || ws == nil {
			return nil, &LoadError{Problems: errs} // not TOML: nothing more to read
		}
		// Report each layer's value problems too, in one pass.
		_, err := buildFile(c, []*fileSpec{op}, op.entries(), op.replaceProtected, op.exec.spec, op.net.spec, op.modes)
		le := withProblems(errs, err)
		_, err = buildFile(c, []*fileSpec{ws}, ws.entries(), false, ws.exec.alone(op.exec), ws.net.spec, ws.modes)
		return nil, withProblems(le.Problems, err)
	}
	// Each layer must be valid on its own before they are compared.
	opFile, err := buildFile(c, []*fileSpec{op}, op.entries(), op.replaceProtected, op.exec.spec, op.net.spec, op.modes)
	if err != nil {
		return nil, err
	}
	if _, err := buildFile(c, []*fileSpec{ws}, ws.entries(), false, ws.exec.alone(op.exec), ws.net.spec, ws.modes); err != nil {
		return nil, err
	}
	opPol := opFile.Policy
	d := &fileDecoder{name: wsName}
	b := policy.Builder{Home: c.home}

	if at, ok := ws.has["replace_protected"]; ok && ws.replaceProtected {
		d.fail(at, "fs.replace_protected", "a workspace layer cannot replace the protected list: the operator's protected entries (and the built-in ones it keeps) always stay")
	}
	if at, ok := ws.has["dependency_trees"]; ok && len(ws.dependencyTrees) > 0 {
		d.fail(at, "fs.dependency_trees", "a workspace layer cannot add dependency trees: credential names are writable inside them, so they widen the operator layer")
	}

	writeRoots := op.writeRoots
	if _, ok := ws.has["write_roots"]; ok {
		writeRoots = ws.writeRoots
		for _, e := range ws.writeRoots {
			if e.value == "." {
				if !opPol.DotRoot() {
					d.fail(e.at, e.key, `"." widens the operator layer, which has no "." write root`)
				}
				continue
			}
			paths, err := b.Paths(e.value)
			if err != nil {
				continue // reported when the layer was built alone
			}
			for _, p := range paths {
				if !withinAnyRoot(p, opPol.WriteRoots()) {
					d.fail(e.at, e.key, strconv.Quote(e.value)+resolvesTo(e.value, p)+" is outside the operator layer's write roots ("+
						layerRuleList(opPol, policy.KindWriteRoot, policy.KindDotRoot)+"); a workspace layer can only narrow them")
					break
				}
			}
		}
	}

	readRoots := op.readRoots
	if len(ws.readRoots) > 0 {
		readRoots = ws.readRoots
		for _, e := range ws.readRoots {
			paths, err := b.Paths(e.value)
			if err != nil || len(opPol.ReadRoots()) == 0 {
				continue
			}
			for _, p := range paths {
				if !withinAnyRoot(p, opPol.ReadRoots()) && !withinAnyRoot(p, opPol.WriteRoots()) {
					d.fail(e.at, e.key, strconv.Quote(e.value)+resolvesTo(e.value, p)+" is outside the operator layer's read and write roots ("+
						layerRuleList(opPol, policy.KindReadRoot, policy.KindWriteRoot, policy.KindDotRoot)+"); a workspace layer can only narrow them")
					break
				}
			}
		}
	}

	modes := op.modes
	for i, pair := range []struct {
		name     string
		op, ws   policy.Mode
		effected *policy.Mode
	}{
		{"fs", op.modes.FS, ws.modes.FS, &modes.FS},
		{"exec", op.modes.Exec, ws.modes.Exec, &modes.Exec},
		{"net", op.modes.Net, ws.modes.Net, &modes.Net},
	} {
		if pair.ws == policy.ModeUnset {
			continue
		}
		if strictness(pair.ws) < strictness(pair.op) {
			opMode := pair.op.String()
			if pair.op == policy.ModeUnset {
				opMode = "enforce (unset)"
			}
			d.fail(ws.modeAt[i], "modes."+pair.name, "a workspace layer cannot relax the mode from "+opMode+" to "+pair.ws.String())
			continue
		}
		*pair.effected = pair.ws
	}

	exec := layerExec(d, opFile.Policy, op.exec, ws.exec)
	net := layerNet(d, op.net, ws.net)
	if len(d.errs) > 0 {
		return nil, &LoadError{Problems: d.errs}
	}

	var entries []fileEntry
	for _, l := range [][]fileEntry{writeRoots, readRoots, op.readDeny, ws.readDeny, op.protected, ws.protected,
		op.credentials, ws.credentials, op.dependencyTrees} {
		entries = append(entries, l...)
	}
	return buildFile(c, []*fileSpec{op, ws}, entries, op.replaceProtected, exec, net, modes)
}

// resolvesTo explains a spelling that differs from what was written.
func resolvesTo(written, p string) string {
	if filepath.Clean(written) == p {
		return ""
	}
	return " (it resolves to " + strconv.Quote(p) + ")"
}

func withinAnyRoot(p string, roots []string) bool {
	for _, r := range roots {
		if policy.Within(p, r) {
			return true
		}
	}
	return false
}

// layerRuleList renders the rules of the given kinds with their sources.
func layerRuleList(p *policy.Policy, kinds ...policy.RuleKind) string {
	var parts []string
	for _, r := range p.Rules() {
		for _, k := range kinds {
			if r.Kind == k {
				parts = append(parts, strconv.Quote(r.Pattern)+" at "+r.Source)
				break
			}
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
