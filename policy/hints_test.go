package policy

import (
	"strings"
	"testing"
)

// Every hint topic names a hint the core gives: a front end that words
// each topic (policyfile) then covers every built-in hint.
func TestHintTopicsCoverCoreHints(t *testing.T) {
	seen := map[HintTopic]bool{}
	for hint, topic := range hintTopics {
		if hint == "" {
			t.Errorf("topic %v has an empty hint", topic)
		}
		if seen[topic] {
			t.Errorf("topic %v named by two hints", topic)
		}
		seen[topic] = true
	}
	for topic := HintNone + 1; topic < hintTopicEnd; topic++ {
		if !seen[topic] {
			t.Errorf("topic %v names no hint of the core", topic)
		}
		if strings.HasPrefix(topic.String(), "hint(") {
			t.Errorf("topic %d has no name", topic)
		}
	}
	if (&Rule{Hint: "a host's own hint"}).HintTopic() != HintNone || (*Rule)(nil).HintTopic() != HintNone {
		t.Error("a hint the core does not give has a topic")
	}
	if ruleNoWriteRoot.HintTopic() != HintNoWriteRoot {
		t.Errorf("ruleNoWriteRoot: %v", ruleNoWriteRoot.HintTopic())
	}
}

// Builder.Hints words hints by topic; a policy built without it keeps the
// core's words, and a nil policy answers too.
func TestHintForUsesBuilderHints(t *testing.T) {
	dir := t.TempDir()
	b := Builder{Hints: map[HintTopic]string{HintNoWriteRoot: "add it to the list"}}
	b.WriteRoot(dir, "test:1")
	p, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	b.Hints[HintNoWriteRoot] = "changed after Build" // a built policy is immutable
	d := p.CheckPath(OpWrite, "/nowhere/x", "")
	if d.Allowed {
		t.Fatal("write outside the root allowed")
	}
	if h := p.HintFor(d.Rule); h != "add it to the list" {
		t.Errorf("HintFor = %q", h)
	}
	plain, err := New(Spec{WriteRoots: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	if h := plain.HintFor(d.Rule); h != d.Rule.Hint {
		t.Errorf("code-built HintFor = %q, want the rule's own", h)
	}
	if h := (*Policy)(nil).HintFor(d.Rule); h != d.Rule.Hint {
		t.Errorf("nil policy HintFor = %q", h)
	}
}
