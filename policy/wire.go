package policy

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
)

// A policy travels to another process (an isolate child, which runs the
// same binary) as the entries that built it, each with its provenance, and
// is rebuilt there by the same Builder: the child decides with the same
// rules and its denials name the same sources ("policy.toml:12"). Only
// data travels, never the index, so the two sides cannot drift apart on a
// format change inside this package.

// wirePolicy is the JSON form of a policy.
type wirePolicy struct {
	// Home is the home directory "~" expanded to when the policy was
	// built, so the rebuilt policy expands it the same way whatever HOME
	// the other process has.
	Home             string      `json:"home,omitempty"`
	ReplaceProtected bool        `json:"replace_protected,omitempty"`
	Entries          []wireEntry `json:"entries,omitempty"`
	Exec             ExecSpec    `json:"exec"`
	Net              NetSpec     `json:"net"`
	// Hints keeps hints in the terms the policy was written in
	// (Builder.Hints): a policy loaded from a file says TOML keys in the
	// other process too.
	Hints map[HintTopic]string `json:"hints,omitempty"`
}

type wireEntry struct {
	Kind   RuleKind     `json:"kind"`
	Value  string       `json:"value"`
	Source string       `json:"source,omitempty"`
	Class  ProtectClass `json:"class,omitempty"` // ClassCredential for a credential entry
}

func (b *Builder) wireForm() wirePolicy {
	w := wirePolicy{Home: b.Home, ReplaceProtected: b.ReplaceProtected, Exec: b.Exec, Net: b.Net, Hints: maps.Clone(b.Hints)}
	if w.Home == "" {
		if h, err := os.UserHomeDir(); err == nil {
			w.Home = h
		}
	}
	w.Entries = make([]wireEntry, len(b.entries))
	for i, e := range b.entries {
		w.Entries[i] = wireEntry{Kind: e.kind, Value: e.value, Source: e.source, Class: e.class}
	}
	return w
}

// MarshalJSON encodes the policy as the entries and rules that built it,
// with their provenance. UnmarshalJSON rebuilds an equal policy from it,
// in this process or another one on the same machine (relative roots
// such as "." keep their meaning: the working directory of each check).
func (p *Policy) MarshalJSON() ([]byte, error) {
	return json.Marshal(&p.wire)
}

// UnmarshalJSON rebuilds a policy encoded by MarshalJSON, validating every
// entry again (roots are resolved on this machine's filesystem). It is
// meant for a zero Policy that nothing shares yet, as json.Unmarshal into
// a new *Policy gives.
func (p *Policy) UnmarshalJSON(data []byte) error {
	var w wirePolicy
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	b := Builder{Home: w.Home, ReplaceProtected: w.ReplaceProtected, Exec: w.Exec, Net: w.Net, Hints: w.Hints}
	for _, e := range w.Entries {
		switch e.Kind {
		case KindWriteRoot, KindReadRoot, KindReadDeny, KindDependencyTree:
			b.add(e.Kind, e.Value, e.Source)
		case KindProtected:
			if e.Class == ClassCredential {
				b.Credential(e.Value, e.Source)
			} else {
				b.Protect(e.Value, e.Source)
			}
		default:
			return errors.New("policy: unknown entry kind " + e.Kind.String() + " in encoded policy")
		}
	}
	built, err := b.Build()
	if err != nil {
		return err
	}
	*p = *built
	return nil
}
