package audit

import (
	"errors"
	"io/fs"
	"runtime"
	"strconv"
	"strings"

	"github.com/auditguard/auditguard/policy"
)

var (
	// ErrDenied matches every denial: errors.Is(err, audit.ErrDenied).
	ErrDenied = errors.New("auditguard: denied")
	// ErrNoScope: the context carries no guard scope, so nothing may run.
	ErrNoScope = errors.New("no guard scope in context (use Guard.Enter)")
	// ErrScopeClosed: the scope was released; handles made from it are revoked.
	ErrScopeClosed = errors.New("the guard scope was released")
	// ErrSelfProtection: re-configuration attempted from inside a scope.
	ErrSelfProtection = errors.New("the guard cannot be re-configured from inside its scope")
)

var (
	ruleNoScope = &policy.Rule{Kind: policy.KindHost, Pattern: "guarded calls need a scope", Source: "builtin",
		Hint: "enter the guard with Guard.Enter and build handles from the context it returns"}
	ruleScopeClosed = &policy.Rule{Kind: policy.KindHost, Pattern: "released scopes revoke their handles", Source: "builtin",
		Hint: "the work outlived its scope; finish guarded work before release, or enter a new scope"}
	ruleSelf = &policy.Rule{Kind: policy.KindHost, Pattern: "no re-configuration inside a scope", Source: "builtin",
		Hint: "call it from host code, outside any scope; inside a scope only audit.Restrict (narrowing) is allowed"}
	ruleOnCallDeny = &policy.Rule{Kind: policy.KindHost, Pattern: "OnCall returned Deny", Source: "host callback"}
	ruleFault      = &policy.Rule{Kind: policy.KindHost, Pattern: "a host callback panicked", Source: "host callback",
		Hint: "fix the callback; a panicking callback always denies"}
)

// DenyError is every denial auditguard returns. errors.Is(err,
// fs.ErrPermission) and errors.Is(err, ErrDenied) hold for it; Unwrap gives
// the cause when there is one beyond the policy (ErrScopeClosed, ErrNoScope,
// ErrSelfProtection, a resolution error).
type DenyError struct {
	Protocol Protocol
	Op       policy.Op
	Target   string // as the caller named it
	Target2  string // the second name of a two-name operation
	Resolved string // where it really lands, when known
	Decision policy.Decision
	// By says who denied: the policy (ByPolicy, the zero value), OnCall
	// (ByOnCall), a panicking callback (ByFault) or the scope rules
	// (ByScope; Err says which).
	By Decider
	// Caller is the first frame outside auditguard's library packages.
	Caller       runtime.Frame
	ScopeID      uint64
	ScopeEntered string
	Err          error
	// Hint says how to allow the call, in the terms the policy was
	// written in (TOML keys for a policy file, Go API otherwise); empty
	// means the rule's own hint.
	Hint string
}

func (e *DenyError) Is(target error) bool {
	return target == ErrDenied || target == fs.ErrPermission
}

func (e *DenyError) Unwrap() error { return e.Err }

// Error renders a message for people and models alike: what was blocked,
// which rule, from where, how to allow it, and that retrying will not help.
func (e *DenyError) Error() string {
	var b strings.Builder
	b.WriteString("auditguard: ")
	if e.Op != policy.OpConfig && e.Protocol.String() != e.Op.String() {
		b.WriteString(e.Protocol.String())
		b.WriteByte(' ')
	}
	if e.Op != 0 {
		b.WriteString(e.Op.String())
		b.WriteByte(' ')
	}
	b.WriteString("denied")
	if e.Target != "" {
		b.WriteString(": ")
		b.WriteString(strconv.Quote(e.Target))
		if e.Target2 != "" {
			b.WriteString(" -> ")
			b.WriteString(strconv.Quote(e.Target2))
		}
		if e.Resolved != "" && e.Resolved != e.Target {
			b.WriteString(" (resolves to ")
			b.WriteString(e.Resolved)
			b.WriteByte(')')
		}
	}
	b.WriteString("\n  reason: ")
	if e.Err != nil {
		b.WriteString(strings.TrimPrefix(e.Err.Error(), "auditguard: "))
		b.WriteString("; ")
	}
	b.WriteString(e.Decision.Rule.String())
	if e.Decision.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Decision.Detail)
	}
	if c := e.Decision.Command; c != nil {
		b.WriteString("\n  command: ")
		b.WriteString(strings.Join(c.Argv, " "))
	}
	if e.Decision.Tier != policy.TierNone {
		b.WriteString(" [")
		b.WriteString(e.Decision.Tier.String())
		b.WriteByte(']')
	}
	if site := FormatFrame(e.Caller); site != "" {
		b.WriteString("\n  called at: ")
		b.WriteString(site)
	}
	if e.ScopeEntered != "" {
		b.WriteString("\n  scope #")
		b.WriteString(strconv.FormatUint(e.ScopeID, 10))
		b.WriteString(" entered at: ")
		b.WriteString(e.ScopeEntered)
	}
	if h := e.hint(); h != "" {
		b.WriteString("\n  to allow: ")
		b.WriteString(h)
	}
	b.WriteString("\n  note: this is a policy decision, not a transient failure; retrying this call or a variant of it will be denied too.")
	return b.String()
}

func (e *DenyError) hint() string {
	h := e.Hint
	if r := e.Decision.Rule; r != nil && h == "" {
		h = r.Hint
	}
	switch e.Decision.Tier {
	case policy.TierSoft:
		if h == "" {
			h = "add a rule that allows it, or rescue the call in BeforeDeny"
		}
	case policy.TierHard:
		if h == "" {
			h = "drop the deny rule, or opt in with audit.WithRescueHard and rescue it in BeforeDeny"
		}
	}
	return h
}

// FormatFrame renders a frame as "file.go:42 pkg.Func".
func FormatFrame(f runtime.Frame) string {
	if f.File == "" && f.Function == "" {
		return ""
	}
	file := f.File
	if i := strings.LastIndexByte(file, '/'); i >= 0 {
		file = file[i+1:]
	}
	fn := f.Function
	if i := strings.LastIndexByte(fn, '/'); i >= 0 {
		fn = fn[i+1:]
	}
	return file + ":" + strconv.Itoa(f.Line) + " " + fn
}

func noScopeError(what string) error {
	return &DenyError{Op: policy.OpConfig, Target: what, Decision: policy.Deny(policy.TierInvalid, ruleNoScope, ""),
		Err: ErrNoScope, Caller: callerFrame(), By: ByScope}
}
