// Package netguard will provide the guarded dialer shaped like net.Dialer:
// connections are denied unless a net rule of the policy allows them.
package netguard
