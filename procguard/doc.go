// Package procguard will provide the guarded process runner shaped like
// os/exec: commands are denied unless an exec rule of the policy allows them.
package procguard
