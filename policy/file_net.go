package policy

// The [net] table of a policy file. The net rules (NetSpec, net.go) are
// being written separately; until they are merged, every key of [net] is
// rejected, so a policy file can never seem to allow or deny an address
// while the rule is silently ignored. An empty [net] table is accepted: with
// no rules every connection is denied.
//
// To fill this in: list the accepted keys in netKeys (they feed the
// did-you-mean suggestions), decode them with the fileDecoder helpers
// (d.entries, d.str, d.boolean, d.table, d.unknown) giving every rule the
// source "file:line" of where it is written (bad CIDRs and rules whose own
// examples do not match them fail with their position), and check in
// layerNet that a workspace layer only narrows the operator's rules.

// netKeys are the keys [net] accepts.
var netKeys = []string{}

// decodeNet reads the [net] table into a NetSpec.
func decodeNet(d *fileDecoder, t *tval) NetSpec {
	for _, f := range t.fields {
		e := d.fail(f.pos, "net."+f.key, "net rules in policy files are "+ErrUnsupported.Error()+
			"; build them in code (Spec.Net) for now")
		e.Err = ErrUnsupported
	}
	return NetSpec{}
}

// layerNet combines the net rules of an operator and a workspace layer. A
// workspace layer may only narrow: it may not allow a host or address the
// operator layer does not allow, nor drop an operator deny. Violations are
// reported through d with the workspace rule's position.
func layerNet(d *fileDecoder, operator, workspace NetSpec) NetSpec {
	// No net rule can be loaded from a file yet (decodeNet rejects them), so
	// both layers are empty.
	return operator
}
