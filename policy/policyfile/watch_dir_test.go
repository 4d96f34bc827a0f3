package policyfile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/auditguard/auditguard/policy"
)

// The watcher follows its directory being removed and recreated, or
// replaced by a rename: the watch is re-armed on the new directory and
// later edits are seen. While the directory is gone it reports WatchFailed
// once and keeps the last good policy.
func TestWatchSurvivesItsDirectoryBeingReplaced(t *testing.T) {
	tests := []struct {
		name    string
		replace func(t *testing.T, dir, content string)
	}{
		{"removed and recreated", func(t *testing.T, dir, content string) {
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			writeAtomic(t, filepath.Join(dir, "policy.toml"), content)
		}},
		{"replaced by a rename", func(t *testing.T, dir, content string) {
			next := dir + ".next"
			if err := os.Mkdir(next, 0o755); err != nil {
				t.Fatal(err)
			}
			writeInPlace(t, filepath.Join(next, "policy.toml"), content)
			if err := os.Rename(dir, dir+".old"); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(next, dir); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startWatch(t, "a")
			c := filepath.Join(s.base, "c")

			tt.replace(t, s.dir, fsPolicy(s.b))
			s.wait(WatchReloaded, allows(s.b))
			// The re-armed watch sees an edit in the new directory.
			writeAtomic(t, s.path, fsPolicy(c))
			s.wait(WatchReloaded, allows(c))
			if !s.tg.p.Load().CheckPath(policy.OpWrite, c+"/x", "").Allowed {
				t.Fatal("the edit after the replacement is not in force")
			}
		})
	}
}

func TestWatchDirectoryGoneFailsOnceAndKeepsLastGood(t *testing.T) {
	s := startWatch(t, "a")
	good := s.tg.p.Load()
	if err := os.RemoveAll(s.dir); err != nil {
		t.Fatal(err)
	}
	ev := s.wait(WatchFailed, nil)
	if ev.Err == nil || ev.File.Policy != good || s.tg.p.Load() != good {
		t.Fatalf("WatchFailed: err %v, last good kept %v", ev.Err, s.tg.p.Load() == good)
	}
	// Put back later: watched again, loaded again, and no second failure.
	if err := os.Mkdir(s.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeAtomic(t, s.path, fsPolicy(s.b))
	for {
		ev := s.next()
		if ev.Kind == WatchFailed {
			t.Fatalf("a second WatchFailed: %v", ev.Err)
		}
		if ev.Kind == WatchReloaded && allows(s.b)(ev) {
			break
		}
	}
}
