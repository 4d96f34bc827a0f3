package policy

import (
	"errors"
	"strings"
	"testing"
)

func TestHostWildcardPublicSuffix(t *testing.T) {
	for _, tc := range []struct {
		host string
		ok   bool
	}{
		{"*.com", false},
		{"*.co.uk", false},
		{"*.uk", false},
		{"*.github.io", false},             // private section: every user's pages
		{"*.githubusercontent.com", false}, // private section
		{"*.s3.amazonaws.com", false},      // every bucket
		{"*.example.com", true},
		{"*.example.co.uk", true},
		{"*.amazonaws.com", true}, // a registrable domain, not a suffix
		{"*.pkg.example.org", true},
		{"*.internal", true},          // not on the list: the default rule, private to a network
		{"*.svc.cluster.local", true}, // likewise
		{"com", true},                 // an exact host is one name, not a wildcard
		{"raw.githubusercontent.com", true},
	} {
		_, err := New(Spec{Net: NetSpec{Rules: []NetRule{{Host: tc.host, Source: "test:1"}}}})
		if (err == nil) != tc.ok {
			t.Errorf("%s: err = %v, want ok=%v", tc.host, err, tc.ok)
			continue
		}
		if err == nil {
			continue
		}
		var ee *EntryError
		if !errors.As(err, &ee) {
			t.Errorf("%s: %T is not an *EntryError", tc.host, err)
		}
		if msg := err.Error(); !strings.Contains(msg, "public suffix") || !strings.Contains(msg, "did you mean") || !strings.Contains(msg, "test:1") {
			t.Errorf("%s: message lacks the reason, hint or source: %s", tc.host, msg)
		}
	}
}
