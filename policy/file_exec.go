package policy

// The [exec] table of a policy file. The exec rules (ExecSpec, exec.go) are
// being written separately; until they are merged, every key of [exec] is
// rejected, so a policy file can never seem to allow or deny a program while
// the rule is silently ignored. An empty [exec] table is accepted: with no
// rules every program is denied.
//
// To fill this in: list the accepted keys in execKeys (they feed the
// did-you-mean suggestions), decode them with the fileDecoder helpers
// (d.entries, d.str, d.boolean, d.table, d.unknown) giving every rule the
// source "file:line" of where it is written, and check in layerExec that a
// workspace layer only narrows the operator's rules.

// execKeys are the keys [exec] accepts.
var execKeys = []string{}

// decodeExec reads the [exec] table into an ExecSpec.
func decodeExec(d *fileDecoder, t *tval) ExecSpec {
	for _, f := range t.fields {
		e := d.fail(f.pos, "exec."+f.key, "exec rules in policy files are "+ErrUnsupported.Error()+
			"; build them in code (Spec.Exec) for now")
		e.Err = ErrUnsupported
	}
	return ExecSpec{}
}

// layerExec combines the exec rules of an operator and a workspace layer. A
// workspace layer may only narrow: it may not allow a program the operator
// layer does not allow, nor drop an operator deny. Violations are reported
// through d with the workspace rule's position.
func layerExec(d *fileDecoder, operator, workspace ExecSpec) ExecSpec {
	// No exec rule can be loaded from a file yet (decodeExec rejects them),
	// so both layers are empty.
	return operator
}
