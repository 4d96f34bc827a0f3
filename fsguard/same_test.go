package fsguard_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/spf13/afero"

	"github.com/auditguard/auditguard/fsguard"
	"github.com/auditguard/auditguard/policy"
)

// TestSameAsOsFs runs one script of allowed calls on raw afero.OsFs in one
// directory and on the guarded Fs in another, and checks that every call
// fails or succeeds alike (same errno) and that both trees end up the same:
// inside its roots the guard is afero.OsFs.
func TestSameAsOsFs(t *testing.T) {
	for _, v := range pathVariants {
		t.Run(v.name, func(t *testing.T) {
			defer fsguard.SetFastPaths(v.fast)()
			rawDir, guardDir := tempDir(t), tempDir(t)
			ctx, _, _ := enter(t, policy.Spec{WriteRoots: []string{guardDir}}, variantOpts(v.onCall)...)
			raw := afero.NewOsFs()
			g := fsguard.New(ctx, afero.NewOsFs())

			script := []struct {
				name string
				call func(fsys afero.Fs, dir string) (string, error)
			}{
				{"create", func(fsys afero.Fs, d string) (string, error) {
					return "", afero.WriteFile(fsys, d+"/a.txt", []byte("hello"), 0o640)
				}},
				{"truncate", func(fsys afero.Fs, d string) (string, error) {
					return "", afero.WriteFile(fsys, d+"/a.txt", []byte("hi"), 0o600)
				}},
				{"append", func(fsys afero.Fs, d string) (string, error) {
					return writeWith(fsys, d+"/a.txt", os.O_WRONLY|os.O_APPEND, "+more")
				}},
				{"excl existing", func(fsys afero.Fs, d string) (string, error) {
					return writeWith(fsys, d+"/a.txt", os.O_WRONLY|os.O_CREATE|os.O_EXCL, "x")
				}},
				{"excl new", func(fsys afero.Fs, d string) (string, error) {
					return writeWith(fsys, d+"/b.txt", os.O_RDWR|os.O_CREATE|os.O_EXCL, "b")
				}},
				{"write without create", func(fsys afero.Fs, d string) (string, error) {
					return writeWith(fsys, d+"/none.txt", os.O_WRONLY, "x")
				}},
				{"create in missing dir", func(fsys afero.Fs, d string) (string, error) {
					return writeWith(fsys, d+"/missing/x.txt", os.O_WRONLY|os.O_CREATE, "x")
				}},
				{"write a dir", func(fsys afero.Fs, d string) (string, error) {
					return writeWith(fsys, d, os.O_WRONLY, "x")
				}},
				{"mkdir", func(fsys afero.Fs, d string) (string, error) { return "", fsys.Mkdir(d+"/dir", 0o750) }},
				{"mkdir existing", func(fsys afero.Fs, d string) (string, error) { return "", fsys.Mkdir(d+"/dir", 0o750) }},
				{"mkdir missing parent", func(fsys afero.Fs, d string) (string, error) { return "", fsys.Mkdir(d+"/no/dir", 0o750) }},
				{"mkdirall", func(fsys afero.Fs, d string) (string, error) { return "", fsys.MkdirAll(d+"/dir/x/y", 0o755) }},
				{"mkdirall existing", func(fsys afero.Fs, d string) (string, error) { return "", fsys.MkdirAll(d+"/dir/x", 0o755) }},
				{"mkdirall over a file", func(fsys afero.Fs, d string) (string, error) { return "", fsys.MkdirAll(d+"/a.txt/x", 0o755) }},
				{"file in dir", func(fsys afero.Fs, d string) (string, error) {
					return "", afero.WriteFile(fsys, d+"/dir/x/f.txt", []byte("f"), 0o644)
				}},
				{"remove non-empty dir", func(fsys afero.Fs, d string) (string, error) { return "", fsys.Remove(d + "/dir/x") }},
				{"remove missing", func(fsys afero.Fs, d string) (string, error) { return "", fsys.Remove(d + "/nothing") }},
				{"remove empty dir", func(fsys afero.Fs, d string) (string, error) { return "", fsys.Remove(d + "/dir/x/y") }},
				{"rename file", func(fsys afero.Fs, d string) (string, error) { return "", fsys.Rename(d+"/b.txt", d+"/dir/b2.txt") }},
				{"rename over file", func(fsys afero.Fs, d string) (string, error) { return "", fsys.Rename(d+"/dir/b2.txt", d+"/a.txt") }},
				{"rename missing", func(fsys afero.Fs, d string) (string, error) { return "", fsys.Rename(d+"/gone", d+"/x") }},
				{"rename dir", func(fsys afero.Fs, d string) (string, error) { return "", fsys.Rename(d+"/dir/x", d+"/moved") }},
				{"symlink", func(fsys afero.Fs, d string) (string, error) {
					return "", fsys.(afero.Linker).SymlinkIfPossible("a.txt", d+"/link")
				}},
				{"symlink existing", func(fsys afero.Fs, d string) (string, error) {
					return "", fsys.(afero.Linker).SymlinkIfPossible("a.txt", d+"/link")
				}},
				{"readlink", func(fsys afero.Fs, d string) (string, error) {
					return fsys.(afero.LinkReader).ReadlinkIfPossible(d + "/link")
				}},
				{"lstat", func(fsys afero.Fs, d string) (string, error) {
					fi, _, err := fsys.(afero.Lstater).LstatIfPossible(d + "/link")
					if err != nil {
						return "", err
					}
					return fi.Name() + " " + fi.Mode().Type().String(), nil
				}},
				{"stat through link", func(fsys afero.Fs, d string) (string, error) {
					fi, err := fsys.Stat(d + "/link")
					if err != nil {
						return "", err
					}
					return fmt.Sprint(fi.Name(), " ", fi.Size()), nil
				}},
				{"write through link", func(fsys afero.Fs, d string) (string, error) {
					return writeWith(fsys, d+"/link", os.O_WRONLY|os.O_APPEND, "!")
				}},
				{"excl through link", func(fsys afero.Fs, d string) (string, error) {
					return writeWith(fsys, d+"/link", os.O_WRONLY|os.O_CREATE|os.O_EXCL, "!")
				}},
				{"nofollow through link", func(fsys afero.Fs, d string) (string, error) {
					return writeWith(fsys, d+"/link", os.O_WRONLY|fsguard.ONoFollow, "!")
				}},
				{"dangling link inside", func(fsys afero.Fs, d string) (string, error) {
					return "", fsys.(afero.Linker).SymlinkIfPossible("target.txt", d+"/dl")
				}},
				{"excl through dangling link", func(fsys afero.Fs, d string) (string, error) {
					return writeWith(fsys, d+"/dl", os.O_WRONLY|os.O_CREATE|os.O_EXCL, "!")
				}},
				{"create through dangling link", func(fsys afero.Fs, d string) (string, error) {
					return writeWith(fsys, d+"/dl", os.O_WRONLY|os.O_CREATE, "via link")
				}},
				{"read-only create", func(fsys afero.Fs, d string) (string, error) {
					f, err := fsys.OpenFile(d+"/ro.txt", os.O_RDONLY|os.O_CREATE, 0o600)
					if err == nil {
						f.Close()
					}
					return "", err
				}},
				{"mkdir trailing slash", func(fsys afero.Fs, d string) (string, error) { return "", fsys.Mkdir(d+"/dir2/", 0o700) }},
				{"stat file with slash", func(fsys afero.Fs, d string) (string, error) { _, err := fsys.Stat(d + "/a.txt/"); return "", err }},
				{"remove file with slash", func(fsys afero.Fs, d string) (string, error) { return "", fsys.Remove(d + "/a.txt/") }},
				{"stat dotdot", func(fsys afero.Fs, d string) (string, error) {
					fi, err := fsys.Stat(d + "/dir/../a.txt")
					if err != nil {
						return "", err
					}
					return fi.Name(), nil
				}},
				{"rename dir into itself", func(fsys afero.Fs, d string) (string, error) { return "", fsys.Rename(d+"/dir", d+"/dir/x/in") }},
				{"rename dir over empty dir", func(fsys afero.Fs, d string) (string, error) { return "", fsys.Rename(d+"/dir2", d+"/dir/x/y") }},
				{"chmod", func(fsys afero.Fs, d string) (string, error) { return "", fsys.Chmod(d+"/a.txt", 0o604) }},
				{"chtimes", func(fsys afero.Fs, d string) (string, error) { return "", fsys.Chtimes(d+"/a.txt", t0, t0) }},
				{"chmod missing", func(fsys afero.Fs, d string) (string, error) { return "", fsys.Chmod(d+"/nothing", 0o604) }},
				{"stat missing", func(fsys afero.Fs, d string) (string, error) { _, err := fsys.Stat(d + "/nothing"); return "", err }},
				{"open missing", func(fsys afero.Fs, d string) (string, error) { _, err := fsys.Open(d + "/nothing"); return "", err }},
				{"read dir", func(fsys afero.Fs, d string) (string, error) {
					names, err := afero.ReadDir(fsys, d)
					var out []string
					for _, fi := range names {
						out = append(out, fi.Name())
					}
					return strings.Join(out, ","), err
				}},
				{"removeall", func(fsys afero.Fs, d string) (string, error) { return "", fsys.RemoveAll(d + "/moved") }},
				{"removeall missing", func(fsys afero.Fs, d string) (string, error) { return "", fsys.RemoveAll(d + "/moved") }},
				{"remove link", func(fsys afero.Fs, d string) (string, error) { return "", fsys.Remove(d + "/link") }},
			}
			for _, step := range script {
				rOut, rErr := step.call(raw, rawDir)
				gOut, gErr := step.call(g, guardDir)
				if errnoOf(rErr) != errnoOf(gErr) || (rErr == nil) != (gErr == nil) || rOut != gOut {
					t.Errorf("%s: raw gave (%q, %v), guarded gave (%q, %v)", step.name, rOut, rErr, gOut, gErr)
				}
			}
			rawTree, guardTree := relSnapshot(t, rawDir), relSnapshot(t, guardDir)
			if !slices.Equal(rawTree, guardTree) {
				t.Fatalf("trees differ:\nraw:     %v\nguarded: %v", rawTree, guardTree)
			}
		})
	}
}

func writeWith(fsys afero.Fs, name string, flag int, s string) (string, error) {
	f, err := fsys.OpenFile(name, flag, 0o644)
	if err != nil {
		return "", err
	}
	_, err = f.WriteString(s)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return "", err
}

func errnoOf(err error) syscall.Errno {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	if err != nil && errors.Is(err, fs.ErrNotExist) {
		return syscall.ENOENT
	}
	return 0
}

// relSnapshot lists the tree under dir relative to it, with type,
// permissions, size, content and link targets (not times or owners).
func relSnapshot(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for p, desc := range snapshot(t, dir) {
		fields := strings.Fields(desc)
		keep := []string{fields[0]}
		for _, f := range fields[1:] {
			if strings.HasPrefix(f, "size=") || strings.HasPrefix(f, "sha=") || strings.HasPrefix(f, "uid=") || strings.HasPrefix(f, "gid=") ||
				f == "->" || !strings.Contains(f, "=") {
				keep = append(keep, f)
			}
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "." {
			continue
		}
		out = append(out, rel+" "+strings.Join(keep, " "))
	}
	slices.Sort(out)
	return out
}

// TestSameAsMemMapFs: on another base the guard is that base, inside its
// roots: the same script on two MemMapFs instances, one guarded, gives the
// same results, errors included, and the same files.
func TestSameAsMemMapFs(t *testing.T) {
	ctx, _, _ := enter(t, policy.Spec{WriteRoots: []string{"/w"}})
	raw, mem := afero.NewMemMapFs(), afero.NewMemMapFs()
	for _, fsys := range []afero.Fs{raw, mem} {
		mustDo(t, fsys.MkdirAll("/w", 0o755))
	}
	g := fsguard.New(ctx, mem)
	script := []func(fsys afero.Fs) (string, error){
		func(fsys afero.Fs) (string, error) {
			return "", afero.WriteFile(fsys, "/w/a.txt", []byte("hello"), 0o640)
		},
		func(fsys afero.Fs) (string, error) { return "", afero.WriteFile(fsys, "/w/a.txt", []byte("hi"), 0o600) },
		func(fsys afero.Fs) (string, error) { return writeWith(fsys, "/w/a.txt", os.O_WRONLY|os.O_APPEND, "+") },
		func(fsys afero.Fs) (string, error) {
			return writeWith(fsys, "/w/a.txt", os.O_WRONLY|os.O_CREATE|os.O_EXCL, "x")
		},
		func(fsys afero.Fs) (string, error) { return writeWith(fsys, "/w/none.txt", os.O_WRONLY, "x") },
		func(fsys afero.Fs) (string, error) { return "", fsys.Mkdir("/w/dir", 0o750) },
		func(fsys afero.Fs) (string, error) { return "", fsys.Mkdir("/w/dir", 0o750) },
		func(fsys afero.Fs) (string, error) { return "", fsys.MkdirAll("/w/dir/x/y", 0o755) },
		func(fsys afero.Fs) (string, error) {
			return "", afero.WriteFile(fsys, "/w/dir/x/f", []byte("f"), 0o644)
		},
		func(fsys afero.Fs) (string, error) { return "", fsys.Rename("/w/dir/x", "/w/moved") },
		func(fsys afero.Fs) (string, error) { return "", fsys.Rename("/w/gone", "/w/x") },
		func(fsys afero.Fs) (string, error) { return "", fsys.Remove("/w/nothing") },
		func(fsys afero.Fs) (string, error) { return "", fsys.Chmod("/w/a.txt", 0o604) },
		func(fsys afero.Fs) (string, error) { return "", fsys.Chtimes("/w/a.txt", t0, t0) },
		func(fsys afero.Fs) (string, error) { _, err := fsys.Stat("/w/nothing"); return "", err },
		func(fsys afero.Fs) (string, error) {
			fi, err := fsys.Stat("/w/dir/../a.txt")
			if err != nil {
				return "", err
			}
			return fmt.Sprint(fi.Name(), fi.Size(), fi.Mode()), nil
		},
		func(fsys afero.Fs) (string, error) { return "", fsys.RemoveAll("/w/moved") },
		func(fsys afero.Fs) (string, error) {
			var out []string
			err := afero.Walk(fsys, "/w", func(p string, fi fs.FileInfo, err error) error {
				out = append(out, fmt.Sprint(p, " ", fi.Mode(), " ", fi.Size()))
				return err
			})
			return strings.Join(out, ";"), err
		},
	}
	for i, step := range script {
		rOut, rErr := step(raw)
		gOut, gErr := step(g)
		if rOut != gOut || fmt.Sprint(rErr) != fmt.Sprint(gErr) {
			t.Errorf("step %d: raw gave (%q, %v), guarded gave (%q, %v)", i, rOut, rErr, gOut, gErr)
		}
	}
}
