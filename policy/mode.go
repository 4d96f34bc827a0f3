package policy

import (
	"fmt"
	"strconv"
)

// Mode is what a denial does for one protocol, as a policy says it (the
// [modes] table of a policy file, package policyfile). The audit package
// has its own Mode (policy cannot import audit); the names are the same, so
// a host maps them one to one. The zero value, ModeUnset, means the policy
// does not say and the guard keeps the mode it has.
type Mode uint8

const (
	ModeUnset   Mode = iota // the file does not set a mode
	ModeEnforce             // "enforce": a denial is returned to the caller
	ModeWarn                // "warn": a denial is recorded and the call proceeds
	ModeOff                 // "off": the protocol is not checked
)

var modeNames = [...]string{ModeUnset: "", ModeEnforce: "enforce", ModeWarn: "warn", ModeOff: "off"}

// String returns the mode as written in a file ("" for ModeUnset).
func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return "mode(" + strconv.Itoa(int(m)) + ")"
}

// ParseMode reads "enforce", "warn" or "off".
func ParseMode(s string) (Mode, error) {
	for m, name := range modeNames {
		if name != "" && name == s {
			return Mode(m), nil
		}
	}
	return ModeUnset, fmt.Errorf("unknown mode %q: want \"enforce\", \"warn\" or \"off\"", s)
}

// Modes are the per-protocol modes a policy file sets.
type Modes struct {
	FS, Exec, Net Mode
}

// IsZero reports whether no mode is set.
func (m Modes) IsZero() bool { return m == Modes{} }
