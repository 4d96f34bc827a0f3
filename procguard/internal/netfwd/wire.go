package netfwd

import (
	"encoding/binary"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The control socket is a unix SOCK_SEQPACKET pair, so every message is one
// packet and the kernel keeps its boundaries. A message is
//
//	offset size
//	0      1    version (wireVersion)
//	1      1    kind
//	2      4    request id, big endian, never 0
//	6      ...  body, by kind:
//	              kindDial    (namespace -> host): port, uint16 big endian, 1..65535
//	              kindOK      (host -> namespace): empty; exactly one descriptor
//	                          (the connected socket) rides along as SCM_RIGHTS
//	              kindRefused (host -> namespace): the reason, UTF-8, 0..maxReason bytes
//
// Only kindOK carries a descriptor. Anything else (another version, an
// unknown kind, a kind sent in the wrong direction, a wrong body length, id
// 0, a truncated packet or control message, a descriptor where none
// belongs) is malformed and ends the session. A zero-length packet cannot
// be told from the peer closing (Go's net reports both as EOF), so it ends
// the session as a close does: Host returns nil, Serve ErrPeerClosed.
const (
	wireVersion = 1
	headerLen   = 6
	maxReason   = 200
	// maxMsg bounds every packet; readers use a buffer one byte longer and
	// also check MSG_TRUNC.
	maxMsg = 256
)

// kind is what a message asks or answers.
type kind uint8

const (
	kindDial    kind = 1
	kindOK      kind = 2
	kindRefused kind = 3
)

func (k kind) String() string {
	switch k {
	case kindDial:
		return "dial"
	case kindOK:
		return "ok"
	case kindRefused:
		return "refused"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// msg is one decoded message. Port is set for kindDial, Reason for
// kindRefused.
type msg struct {
	Kind   kind
	ID     uint32
	Port   uint16
	Reason string
}

// encode appends m's packet to b. It truncates Reason to maxReason bytes at
// a rune boundary.
func (m msg) encode(b []byte) []byte {
	b = append(b, wireVersion, byte(m.Kind))
	b = binary.BigEndian.AppendUint32(b, m.ID)
	switch m.Kind {
	case kindDial:
		b = binary.BigEndian.AppendUint16(b, m.Port)
	case kindRefused:
		b = append(b, clipReason(m.Reason)...)
	}
	return b
}

// clipReason makes s valid UTF-8 of at most maxReason bytes, cut at a rune
// boundary.
func clipReason(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= maxReason {
		return s
	}
	s = s[:maxReason]
	for len(s) > 0 {
		r, size := utf8.DecodeLastRuneInString(s)
		if r != utf8.RuneError || size > 1 {
			break
		}
		s = s[:len(s)-1]
	}
	return s
}

// decode parses one packet. It checks the format only; who may send which
// kind, and whether a descriptor came along, is for the caller.
func decode(p []byte) (msg, error) {
	if len(p) < headerLen {
		return msg{}, malformed("%d-byte packet is shorter than the header", len(p))
	}
	if len(p) > maxMsg {
		return msg{}, malformed("%d-byte packet exceeds %d bytes", len(p), maxMsg)
	}
	if p[0] != wireVersion {
		return msg{}, malformed("version %d, want %d", p[0], wireVersion)
	}
	m := msg{Kind: kind(p[1]), ID: binary.BigEndian.Uint32(p[2:6])}
	if m.ID == 0 {
		return msg{}, malformed("%v with request id 0", m.Kind)
	}
	body := p[headerLen:]
	switch m.Kind {
	case kindDial:
		if len(body) != 2 {
			return msg{}, malformed("dial body is %d bytes, want 2", len(body))
		}
		m.Port = binary.BigEndian.Uint16(body)
		if m.Port == 0 {
			return msg{}, malformed("dial for port 0")
		}
	case kindOK:
		if len(body) != 0 {
			return msg{}, malformed("ok body is %d bytes, want 0", len(body))
		}
	case kindRefused:
		if len(body) > maxReason {
			return msg{}, malformed("reason is %d bytes, at most %d", len(body), maxReason)
		}
		if !utf8.Valid(body) {
			return msg{}, malformed("reason is not UTF-8")
		}
		m.Reason = string(body)
	default:
		return msg{}, malformed("unknown %v", m.Kind)
	}
	return m, nil
}
