package policyfile

import (
	"strings"
	"testing"

	"github.com/auditguard/auditguard/policy"
)

// Every hint the core words in Go API terms has a TOML wording, and none
// of them names the Go API's builder types.
func TestTOMLHintsCoverEveryTopic(t *testing.T) {
	for topic := policy.HintNone + 1; !strings.HasPrefix(topic.String(), "hint("); topic++ {
		h, ok := tomlHints[topic]
		if !ok || h == "" {
			t.Errorf("no TOML wording for hint topic %v", topic)
		}
		for _, goTerm := range []string{"Builder.", "ExecSpec", "ExecRule", "allow rule's Args"} {
			if strings.Contains(h, goTerm) {
				t.Errorf("%v: the TOML hint names %s: %s", topic, goTerm, h)
			}
		}
	}
}
