package policy

import (
	"net/netip"
	"testing"
)

func TestUnlocksNoMore(t *testing.T) {
	mp := netip.MustParsePrefix
	tests := []struct {
		w, o string
		ok   bool
	}{
		{"127.0.0.1/32", "127.0.0.0/8", true},
		{"127.0.0.1/32", "0.0.0.0/0", false},
		{"169.254.169.254/32", "169.254.0.0/16", false}, // metadata needs its exact address
		{"169.254.169.0/24", "169.254.0.0/16", true},
		{"10.1.0.0/16", "10.0.0.0/8", true},
		{"93.184.215.0/24", "0.0.0.0/0", true},
		{"2606:4700::/32", "2000::/3", true},
		{"::1/128", "::/0", false},
		{"2002:7f00:1::/48", "2002::/16", false}, // 6to4 embedding 127.0.0.1
		{"2002::/16", "2002::/16", true},
	}
	for _, tt := range tests {
		why := unlocksNoMore(mp(tt.w), mp(tt.o))
		if (why == "") != tt.ok {
			t.Errorf("unlocksNoMore(%s, %s) = %q, want ok=%v", tt.w, tt.o, why, tt.ok)
		}
	}
}

func TestPortsCover(t *testing.T) {
	tests := []struct {
		union []portRange
		want  portRange
		ok    bool
	}{
		{[]portRange{{443, 443}}, portRange{443, 443}, true},
		{[]portRange{{8000, 8099}, {8100, 8200}}, portRange{8050, 8150}, true},
		{[]portRange{{8000, 8099}, {8101, 8200}}, portRange{8050, 8150}, false},
		{[]portRange{{0, 65535}}, portRange{0, 65535}, true},
		{[]portRange{{1, 65535}}, portRange{0, 65535}, false},
		{[]portRange{{80, 80}, {443, 443}}, portRange{80, 443}, false},
	}
	for _, tt := range tests {
		if got := portsCover(append([]portRange(nil), tt.union...), tt.want); got != tt.ok {
			t.Errorf("portsCover(%v, %v) = %v", tt.union, tt.want, got)
		}
	}
}
