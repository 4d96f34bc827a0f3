package policy

import (
	"net/netip"
	"strings"
)

// Reasons an address is invalid input. They are constant phrases so that a
// decision carrying one never allocates; NetInputError.Reason holds one.
const (
	reasonEmptyHost     = "empty host (it would reach the local system)"
	reasonZone          = "IPv6 zones are not accepted"
	reasonNumericIPv4   = "non-canonical numeric IPv4 spelling (write the dotted quad, e.g. 127.0.0.1)"
	reasonBadName       = "not a valid host name (letters, digits, '-', '_' in dot-separated labels; IDNs in punycode)"
	reasonBadPort       = "port must be a decimal number from 0 to 65535"
	reasonNoPort        = "missing port (host:port)"
	reasonBrackets      = "brackets are only for IPv6 literals"
	reasonBadNetwork    = "unknown network (tcp, tcp4, tcp6, udp, udp4, udp6, unix)"
	reasonFamily        = "address family does not match the network (tcp4 with an IPv6 address, or the reverse)"
	reasonBadAddr       = "resolved address is invalid or zoned"
	reasonUnixPath      = "unix socket paths must be clean absolute paths (no abstract sockets)"
	reasonNotNetOp      = "not a network operation"
	reasonNonCanonicalQ = "host is not in canonical form"
)

// NetInputError reports an address that is rejected before any lookup.
type NetInputError struct {
	Input  string // the address or host as given
	Reason string // a constant phrase
}

func (e *NetInputError) Error() string { return "invalid address " + quote(e.Input) + ": " + e.Reason }

// netKind is the transport family of a network name.
type netKind uint8

const (
	netNone netKind = iota
	netTCP
	netUDP
	netUnix
)

// parseNetwork maps a Go network name onto its family and IP version (4, 6
// or 0 for both).
func parseNetwork(network string) (netKind, int) {
	switch network {
	case "tcp":
		return netTCP, 0
	case "tcp4":
		return netTCP, 4
	case "tcp6":
		return netTCP, 6
	case "udp":
		return netUDP, 0
	case "udp4":
		return netUDP, 4
	case "udp6":
		return netUDP, 6
	case "unix", "unixgram", "unixpacket":
		return netUnix, 0
	}
	return netNone, 0
}

// ValidNetwork reports whether network is one the net rules know: tcp, tcp4,
// tcp6, udp, udp4, udp6, unix, unixgram, unixpacket.
func ValidNetwork(network string) bool {
	k, _ := parseNetwork(network)
	return k != netNone
}

// CanonicalHost checks a host (without port or brackets) and returns its
// canonical spelling. A name is lower-cased and loses one trailing dot; an IP
// literal comes back as netip.Addr.String() with IPv4-mapped IPv6 unmapped,
// and ip is valid. It rejects, before any lookup could interpret them:
// empty hosts, zones, every numeric IPv4 spelling other than the dotted quad
// (127.1, 2130706433, 0x7f000001, 0177.0.0.1), and anything that is not a
// plain DNS name. It makes no system call.
func CanonicalHost(host string) (canon string, ip netip.Addr, err error) {
	if r := hostReason(host); r != "" {
		return "", netip.Addr{}, &NetInputError{Input: host, Reason: r}
	}
	if a, ok := parseIP(host); ok {
		if a.Is4() {
			return host, a, nil // already canonical
		}
		a = a.Unmap()
		return a.String(), a, nil
	}
	name := strings.ToLower(host)
	if len(name) > 1 && name[len(name)-1] == '.' {
		name = name[:len(name)-1]
	}
	return name, netip.Addr{}, nil
}

// hostReason returns why host is invalid, or "". It never allocates.
func hostReason(host string) string {
	if host == "" {
		return reasonEmptyHost
	}
	if strings.IndexByte(host, '%') >= 0 {
		return reasonZone
	}
	if _, ok := parseIP(host); ok {
		// netip accepts IPv4 only as the canonical dotted quad (no
		// leading zeros, no short or numeric forms): FuzzCanonicalHost
		// holds it to that.
		return ""
	}
	if strings.IndexByte(host, ':') >= 0 {
		return reasonBadName // a colon is only valid in an IPv6 literal
	}
	return nameReason(host)
}

// nameReason checks a DNS name: dot-separated labels of ASCII letters,
// digits, '-' and '_', at most 63 bytes each and 253 in all, with at most one
// trailing dot. A name whose last label is numeric (or a 0x hex number) is an
// IPv4 number in disguise, which C resolvers (inet_aton) would accept.
func nameReason(h string) string {
	if h[len(h)-1] == '.' {
		h = h[:len(h)-1]
	}
	if h == "" || len(h) > 253 {
		return reasonBadName
	}
	start := 0
	for i := 0; i <= len(h); i++ {
		if i < len(h) && h[i] != '.' {
			c := h[i]
			if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
				return reasonBadName
			}
			continue
		}
		label := h[start:i]
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return reasonBadName
		}
		start = i + 1
	}
	if numericLabel(h[strings.LastIndexByte(h, '.')+1:]) {
		return reasonNumericIPv4
	}
	return ""
}

// numericLabel reports whether a label is a decimal, octal or hex number as
// inet_aton reads them ("127", "0177", "0x7f", "0x").
func numericLabel(l string) bool {
	if len(l) >= 2 && l[0] == '0' && (l[1] == 'x' || l[1] == 'X') {
		for i := 2; i < len(l); i++ {
			c := l[i]
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(l); i++ {
		if l[i] < '0' || l[i] > '9' {
			return false
		}
	}
	return true
}

// isCanonicalName reports whether h is already the canonical spelling of a
// valid name (lower case, no trailing dot, not an IP literal).
func isCanonicalName(h string) bool {
	if h == "" || h[len(h)-1] == '.' {
		return false
	}
	for i := 0; i < len(h); i++ {
		if 'A' <= h[i] && h[i] <= 'Z' {
			return false
		}
	}
	return hostReason(h) == ""
}

// SplitNetAddress splits "host:port" or "[ipv6]:port" and canonicalises both
// halves. The port must be numeric: service names ("http") are rejected
// rather than looked up. An IP literal host comes back in ip.
func SplitNetAddress(address string) (host string, ip netip.Addr, port uint16, err error) {
	h, p, ok := splitHostPort(address)
	if !ok {
		return "", netip.Addr{}, 0, &NetInputError{Input: address, Reason: reasonNoPort}
	}
	if len(address) > 0 && address[0] == '[' && strings.IndexByte(h, ':') < 0 {
		return "", netip.Addr{}, 0, &NetInputError{Input: address, Reason: reasonBrackets}
	}
	pn, ok := parsePort(p)
	if !ok {
		return "", netip.Addr{}, 0, &NetInputError{Input: address, Reason: reasonBadPort}
	}
	canon, a, err := CanonicalHost(h)
	if err != nil {
		err.(*NetInputError).Input = address
		return "", netip.Addr{}, 0, err
	}
	return canon, a, pn, nil
}

// splitHostPort is net.SplitHostPort without the allocation of an error.
func splitHostPort(s string) (host, port string, ok bool) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return "", "", false
	}
	if len(s) > 0 && s[0] == '[' {
		end := strings.IndexByte(s, ']')
		if end < 0 || end+1 != i {
			return "", "", false
		}
		host = s[1:end]
		if strings.ContainsAny(host, "[]") {
			return "", "", false
		}
		return host, s[i+1:], true
	}
	host = s[:i]
	if strings.ContainsAny(host, ":[]") {
		return "", "", false // an IPv6 literal needs brackets
	}
	return host, s[i+1:], true
}

func parsePort(p string) (uint16, bool) {
	if p == "" || len(p) > 5 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	if n > 65535 {
		return 0, false
	}
	return uint16(n), true
}

// parseIP parses an IP literal without allocating an error for names:
// netip.ParseAddr is asked only about strings that could be addresses.
func parseIP(s string) (netip.Addr, bool) {
	if s == "" {
		return netip.Addr{}, false
	}
	if strings.IndexByte(s, ':') < 0 {
		for i := 0; i < len(s); i++ {
			if (s[i] < '0' || s[i] > '9') && s[i] != '.' {
				return netip.Addr{}, false
			}
		}
	}
	a, err := netip.ParseAddr(s)
	return a, err == nil
}
