package policy_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/auditguard/auditguard/policy"
)

// TestProtectedDocTable keeps the tables of docs/policy.md ("Protected
// names by class") equal to the built-in tables, row for row.
func TestProtectedDocTable(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "docs", "policy.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	for _, n := range policy.ProtectedNames() {
		row := fmt.Sprintf("| `%s` | %s | %s | %s |\n", n.Pattern, n.Class, n.What, n.Source)
		if !strings.Contains(doc, row) {
			t.Errorf("docs/policy.md lacks the row\n%s", row)
		}
	}
	for _, d := range policy.DependencyTrees() {
		row := fmt.Sprintf("| `%s` | %s | %s |\n", d.Pattern, d.What, d.Source)
		if !strings.Contains(doc, row) {
			t.Errorf("docs/policy.md lacks the row\n%s", row)
		}
	}
}
