package fsguard

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSysOpenat2MatchesUnix: sysOpenat2 answers as unix.Openat2 for names
// kept on the stack, names too long for the buffer (which take
// unix.Openat2 itself) and names the kernel cannot take.
func TestSysOpenat2MatchesUnix(t *testing.T) {
	dir := t.TempDir()
	// A name of more than stackName bytes, made of short components.
	long := dir
	for len(long) <= stackName+20 {
		long = filepath.Join(long, strings.Repeat("d", 40))
	}
	if err := os.MkdirAll(long, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("f", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	how := unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_NO_SYMLINKS}
	for _, tc := range []struct{ name, path string }{
		{"short", filepath.Join(dir, "f")},
		{"as long as fits", strings.Repeat("/", stackName-1-len(dir)) + dir},
		{"one byte too long", strings.Repeat("/", stackName-len(dir)) + dir},
		{"long", long},
		{"long and missing", filepath.Join(long, "missing")},
		{"missing", filepath.Join(dir, "missing")},
		{"a link", filepath.Join(dir, "link")},
		{"a NUL", filepath.Join(dir, "f\x00x")},
		{"empty", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fd1, err1 := sysOpenat2(unix.AT_FDCWD, tc.path, &how)
			fd2, err2 := unix.Openat2(unix.AT_FDCWD, tc.path, &how)
			for _, fd := range []int{fd1, fd2} {
				if fd >= 0 {
					unix.Close(fd)
				}
			}
			if err1 != err2 || (fd1 >= 0) != (fd2 >= 0) {
				t.Fatalf("sysOpenat2 = %d, %v; unix.Openat2 = %d, %v", fd1, err1, fd2, err2)
			}
		})
	}
}
