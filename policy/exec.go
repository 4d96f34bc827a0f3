package policy

// ExecSpec holds the rules for starting processes. With no rules, every
// program is denied.
type ExecSpec struct{}

// execRules is the validated, indexed form of an ExecSpec.
type execRules struct{}

func (r *execRules) build(spec ExecSpec, p *Policy) error { return nil }
