package policy

import "testing"

func TestToolTablesLoadCleanly(t *testing.T) {
	if err := toolTablesErr(); err != nil {
		t.Fatal(err)
	}
}
