package audit

import (
	"reflect"
	"runtime"
	"testing"
)

// TestPipelineEntryNamesTheEntry: the caller walk stops early only at the
// frame named pipelineEntry; were it renamed away, every denial would
// unwind the whole stack again (correct, but twice the cost).
func TestPipelineEntryNamesTheEntry(t *testing.T) {
	got := runtime.FuncForPC(reflect.ValueOf((*Scope).check).Pointer()).Name()
	if got != pipelineEntry {
		t.Fatalf("pipelineEntry = %q, the entry every check runs through is %q", pipelineEntry, got)
	}
}
