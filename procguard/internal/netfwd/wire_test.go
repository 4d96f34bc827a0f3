package netfwd

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestWireRoundTrip(t *testing.T) {
	for _, m := range []msg{
		{Kind: kindDial, ID: 1, Port: 8080},
		{Kind: kindDial, ID: 1<<32 - 1, Port: 65535},
		{Kind: kindOK, ID: 7},
		{Kind: kindRefused, ID: 9, Reason: "port 22 not allowed"},
		{Kind: kindRefused, ID: 9},
	} {
		p := m.encode(nil)
		if len(p) > maxMsg {
			t.Errorf("%+v encodes to %d bytes, more than %d", m, len(p), maxMsg)
		}
		got, err := decode(p)
		if err != nil || got != m {
			t.Errorf("decode(encode(%+v)) = %+v, %v", m, got, err)
		}
	}
}

func TestWireClipsReason(t *testing.T) {
	for _, reason := range []string{
		strings.Repeat("x", 500),
		strings.Repeat("é", 150), // 2-byte runes across the cut
		strings.Repeat("𝄞", 60),  // 4-byte runes across the cut
		"bad \xff utf-8",
	} {
		p := msg{Kind: kindRefused, ID: 1, Reason: reason}.encode(nil)
		m, err := decode(p)
		if err != nil {
			t.Errorf("reason %.20q: %v", reason, err)
			continue
		}
		if len(m.Reason) > maxReason || !utf8.ValidString(m.Reason) {
			t.Errorf("reason %.20q arrives as %d bytes, valid UTF-8 %v", reason, len(m.Reason), utf8.ValidString(m.Reason))
		}
	}
}

func TestWireMalformed(t *testing.T) {
	hdr := func(version, k byte, id ...byte) []byte { return append([]byte{version, k}, id...) }
	id1 := []byte{0, 0, 0, 1}
	for _, tc := range []struct {
		name string
		p    []byte
	}{
		{"empty", nil},
		{"short header", []byte{wireVersion, byte(kindDial), 0}},
		{"version 0", append(hdr(0, byte(kindDial), id1...), 0, 80)},
		{"version 2", append(hdr(2, byte(kindDial), id1...), 0, 80)},
		{"unknown kind", hdr(wireVersion, 9, id1...)},
		{"kind 0", hdr(wireVersion, 0, id1...)},
		{"id 0", append(hdr(wireVersion, byte(kindDial), 0, 0, 0, 0), 0, 80)},
		{"dial without port", hdr(wireVersion, byte(kindDial), id1...)},
		{"dial port 0", append(hdr(wireVersion, byte(kindDial), id1...), 0, 0)},
		{"dial trailing byte", append(hdr(wireVersion, byte(kindDial), id1...), 0, 80, 1)},
		{"ok with body", append(hdr(wireVersion, byte(kindOK), id1...), 1)},
		{"reason too long", append(hdr(wireVersion, byte(kindRefused), id1...), strings.Repeat("x", maxReason+1)...)},
		{"reason not UTF-8", append(hdr(wireVersion, byte(kindRefused), id1...), 0xff)},
		{"longer than maxMsg", append(hdr(wireVersion, byte(kindRefused), id1...), strings.Repeat("x", maxMsg)...)},
	} {
		if m, err := decode(tc.p); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: decode = %+v, %v; want ErrMalformed", tc.name, m, err)
		}
	}
}
