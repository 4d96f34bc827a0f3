package netguard

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/auditguard/auditguard/audit"
)

// SOCKS5 (RFC 1928) constants.
const (
	socksVersion5 = 0x05

	socksAuthNone         = 0x00
	socksAuthNoAcceptable = 0xff

	socksCmdConnect = 0x01

	socksAtypIPv4   = 0x01
	socksAtypDomain = 0x03
	socksAtypIPv6   = 0x04

	socksSucceeded        = 0x00
	socksGeneralFailure   = 0x01
	socksNotAllowed       = 0x02 // "connection not allowed by ruleset"
	socksNetUnreachable   = 0x03
	socksHostUnreachable  = 0x04
	socksConnRefused      = 0x05
	socksTTLExpired       = 0x06
	socksCmdNotSupported  = 0x07
	socksAtypNotSupported = 0x08
)

// socksRequest is a parsed SOCKS5 request: the command and the target as a
// host:port the dialer's canonicalisation then judges.
type socksRequest struct {
	cmd    byte
	atyp   byte
	target string
}

// errSOCKS is a malformed SOCKS5 message; reply is the code to answer
// with, 0 for none (close at once).
type errSOCKS struct {
	reply byte
	msg   string
}

func (e *errSOCKS) Error() string { return "socks5: " + e.msg }

// readSOCKSGreeting reads the method selection message and returns
// whether the client offers "no authentication".
func readSOCKSGreeting(r io.Reader) (bool, error) {
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return false, err
	}
	if h[0] != socksVersion5 {
		return false, &errSOCKS{msg: "version " + strconv.Itoa(int(h[0]))}
	}
	if h[1] == 0 {
		return false, &errSOCKS{msg: "no authentication methods offered"}
	}
	methods := make([]byte, h[1])
	if _, err := io.ReadFull(r, methods); err != nil {
		return false, err
	}
	for _, m := range methods {
		if m == socksAuthNone {
			return true, nil
		}
	}
	return false, nil
}

// readSOCKSRequest reads one request message. Address types other than
// IPv4, domain name and IPv6 are refused with "address type not
// supported"; a domain name is taken as bytes and judged by the
// canonicalisation like any other host, so odd bytes are denied there.
func readSOCKSRequest(r io.Reader) (socksRequest, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return socksRequest{}, err
	}
	if h[0] != socksVersion5 {
		return socksRequest{}, &errSOCKS{msg: "request version " + strconv.Itoa(int(h[0]))}
	}
	if h[2] != 0 {
		return socksRequest{}, &errSOCKS{reply: socksGeneralFailure, msg: "reserved byte is not zero"}
	}
	req := socksRequest{cmd: h[1], atyp: h[3]}
	var host string
	switch h[3] {
	case socksAtypIPv4:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return req, err
		}
		host = netip.AddrFrom4(b).String()
	case socksAtypIPv6:
		var b [16]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return req, err
		}
		host = netip.AddrFrom16(b).String()
	case socksAtypDomain:
		var n [1]byte
		if _, err := io.ReadFull(r, n[:]); err != nil {
			return req, err
		}
		if n[0] == 0 {
			return req, &errSOCKS{reply: socksGeneralFailure, msg: "empty domain name"}
		}
		b := make([]byte, n[0])
		if _, err := io.ReadFull(r, b); err != nil {
			return req, err
		}
		host = string(b)
	default:
		return req, &errSOCKS{reply: socksAtypNotSupported, msg: "address type " + strconv.Itoa(int(h[3]))}
	}
	var pb [2]byte
	if _, err := io.ReadFull(r, pb[:]); err != nil {
		return req, err
	}
	req.target = net.JoinHostPort(host, strconv.Itoa(int(binary.BigEndian.Uint16(pb[:]))))
	return req, nil
}

// socksReply encodes a reply with the bound address (zero when none).
func socksReply(code byte, bound net.Addr) []byte {
	b := []byte{socksVersion5, code, 0, socksAtypIPv4, 0, 0, 0, 0, 0, 0}
	if bound == nil {
		return b
	}
	ap, err := netip.ParseAddrPort(bound.String())
	if err != nil {
		return b
	}
	a := ap.Addr().Unmap()
	if a.Is4() {
		x := a.As4()
		copy(b[4:8], x[:])
	} else {
		x := a.As16()
		b = append(b[:3], socksAtypIPv6)
		b = append(b, x[:]...)
		b = append(b, 0, 0)
	}
	binary.BigEndian.PutUint16(b[len(b)-2:], ap.Port())
	return b
}

// socksCode maps a decision or dial failure onto a reply code.
func socksCode(err error) byte {
	var de *audit.DenyError
	var dns *net.DNSError
	switch {
	case errors.As(err, &de):
		return socksNotAllowed
	case errors.As(err, &dns):
		return socksHostUnreachable
	case isTimeout(err):
		return socksTTLExpired
	case errors.Is(err, errNoAddress):
		return socksHostUnreachable
	}
	if s := err.Error(); strings.Contains(s, "refused") {
		return socksConnRefused
	} else if strings.Contains(s, "unreachable") {
		return socksNetUnreachable
	}
	return socksGeneralFailure
}

// serveSOCKS serves one SOCKS5 connection: method selection (no
// authentication only), one CONNECT request, one decision, a tunnel.
func (p *Proxy) serveSOCKS(ctx context.Context, cc *clientConn) {
	rl := &requestLog{proto: "socks5", method: "CONNECT", start: time.Now()}
	w := idleWriter{cc.Conn, p.idleTimeout()}
	ok, err := readSOCKSGreeting(cc.br)
	if err != nil {
		p.logFault(ctx, cc.Conn, "socks5", err)
		return
	}
	if !ok {
		w.Write([]byte{socksVersion5, socksAuthNoAcceptable})
		p.logFault(ctx, cc.Conn, "socks5", errors.New("the client offers no method without authentication"))
		return
	}
	if _, err := w.Write([]byte{socksVersion5, socksAuthNone}); err != nil {
		return
	}
	req, err := readSOCKSRequest(cc.br)
	if err != nil {
		var se *errSOCKS
		if errors.As(err, &se) && se.reply != 0 {
			w.Write(socksReply(se.reply, nil))
		}
		p.logFault(ctx, cc.Conn, "socks5", err)
		return
	}
	defer p.logRequest(ctx, cc.Conn, rl)
	rl.target = req.target
	if req.cmd != socksCmdConnect {
		rl.method = fmt.Sprintf("command %d", req.cmd)
		rl.status = socksCmdNotSupported
		w.Write(socksReply(socksCmdNotSupported, nil))
		return
	}
	cc.bodyMode()
	up, err := p.connect(ctx, req.target, "socks5 CONNECT "+req.target)
	if err != nil {
		rl.status, rl.err = int(socksCode(err)), err
		w.Write(socksReply(byte(rl.status), nil))
		return
	}
	defer p.closeUpstream(up)
	if _, err := w.Write(socksReply(socksSucceeded, up.LocalAddr())); err != nil {
		rl.err = err
		return
	}
	rl.up, rl.down, rl.err = p.tunnel(cc, up)
}
