package didyoumean

import "testing"

func TestOSADistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"abc", "abc", 0},
		{"", "abc", 3},
		{"write_root", "write_roots", 1},
		{"wirte_roots", "write_roots", 1}, // a swap counts once
		{"protcted", "protected", 1},
		{"kitten", "sitting", 3},
		{"ca", "abc", 3}, // optimal string alignment, not full Damerau
	}
	for _, tt := range tests {
		if got := osaDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("osaDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := osaDistance(tt.b, tt.a); got != tt.want {
			t.Errorf("osaDistance(%q, %q) = %d, want %d (symmetry)", tt.b, tt.a, got, tt.want)
		}
	}
}

func TestClosestName(t *testing.T) {
	fsKeys := []string{"write_roots", "read_roots", "read_deny", "protected", "replace_protected"} // the keys of a policy file's [fs] table
	tests := []struct {
		word string
		want string
	}{
		{"write_root", "write_roots"},
		{"WRITE_ROOTS", "write_roots"},
		{"write-roots", "write_roots"},
		{"readroots", "read_roots"},
		{"read_denny", "read_deny"},
		{"protect", "protected"},
		{"replace_protect", "replace_protected"},
		{"roots", ""},
		{"xyzzy", ""},
		{"", ""},
	}
	for _, tt := range tests {
		if got := Closest(tt.word, fsKeys); got != tt.want {
			t.Errorf("Closest(%q) = %q, want %q", tt.word, got, tt.want)
		}
	}
	// Short words allow one edit only.
	if got := Closest("nt", []string{"net"}); got != "net" {
		t.Errorf("Closest(nt) = %q", got)
	}
	if got := Closest("xy", []string{"fs"}); got != "" {
		t.Errorf("Closest(xy) = %q, want none", got)
	}
}
