package audit

import (
	"context"
	"errors"
	"testing"
)

// A Guard New did not make is a programmer error that returns an error,
// as os/exec does for a zero Cmd, and never panics.
func TestInvalidGuardsReturnErrors(t *testing.T) {
	var typedNil *Guard
	for name, g := range map[string]*Guard{"zero Guard{}": {}, "typed nil": typedNil} {
		t.Run(name, func(t *testing.T) {
			if _, release, err := g.Enter(context.Background()); !errors.Is(err, ErrInvalidGuard) {
				t.Fatalf("Enter: %v", err)
			} else {
				release() // a usable no-op
			}
			if err := g.SetData(context.Background(), 1); !errors.Is(err, ErrInvalidGuard) {
				t.Fatalf("SetData: %v", err)
			}
			if err := g.SetMode(context.Background(), FS, Warn); !errors.Is(err, ErrInvalidGuard) {
				t.Fatalf("SetMode: %v", err)
			}
			if g.Policy() != nil || g.Data() != nil || g.Mode(FS) != Enforce {
				t.Fatal("accessors of an invalid guard")
			}
		})
	}
	if _, err := New(nil); !errors.Is(err, ErrNilPolicy) {
		t.Fatalf("New((*Policy)(nil)): %v", err)
	}
}
