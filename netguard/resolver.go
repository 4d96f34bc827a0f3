package netguard

import (
	"context"
	"net"
	"net/netip"
)

// Resolver answers name lookups for the guard. *net.Resolver satisfies it;
// tests and hosts may supply their own (a fixed table, a DNS-over-HTTPS
// client). network is "ip", "ip4" or "ip6".
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

var _ Resolver = (*net.Resolver)(nil)

// DefaultResolver is the pure-Go resolver used when a Dialer or
// ListenConfig has none. It never goes through the C library, whose
// inet_aton reads 127.1 and 0x7f000001 as addresses.
var DefaultResolver Resolver = &net.Resolver{PreferGo: true}

func resolverOr(r Resolver) Resolver {
	if r == nil {
		return DefaultResolver
	}
	return r
}

// ipNetwork maps a dial network onto the lookup network.
func ipNetwork(network string) string {
	switch network {
	case "tcp4", "udp4":
		return "ip4"
	case "tcp6", "udp6":
		return "ip6"
	}
	return "ip"
}
