package fsguard_test

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/afero"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/fsguard"
	"github.com/auditguard/auditguard/policy"
)

// benchImpl is one way of doing the benchmarked calls: raw afero.OsFs,
// the guarded Fs, afero.BasePathFs and os.Root, each on names of its own
// form.
type benchImpl struct {
	name   string
	setup  func() (restore func()) // optional, around the sub-benchmark
	path   func(rel string) string
	create func(string) (io.WriteCloser, error)
	open   func(string) (io.ReadCloser, error)
	stat   func(string) (fs.FileInfo, error)
	remove func(string) error
	rename func(string, string) error
}

func aferoImpl(name string, fsys afero.Fs, path func(string) string) benchImpl {
	return benchImpl{
		name: name, path: path,
		create: func(n string) (io.WriteCloser, error) { return fsys.Create(n) },
		open:   func(n string) (io.ReadCloser, error) { return fsys.Open(n) },
		stat:   fsys.Stat, remove: fsys.Remove, rename: fsys.Rename,
	}
}

// guardedFs enters a guard whose only write root is dir.
func guardedFs(b *testing.B, dir string, opts ...audit.Option) *fsguard.Fs {
	pol, err := policy.New(policy.Spec{WriteRoots: []string{dir}, Home: dir})
	if err != nil {
		b.Fatal(err)
	}
	g, err := audit.New(pol, append([]audit.Option{audit.WithLogger(quiet)}, opts...)...)
	if err != nil {
		b.Fatal(err)
	}
	ctx, release, err := g.Enter(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(release)
	f := fsguard.New(ctx, afero.NewOsFs())
	b.Cleanup(func() { f.Close() })
	return f
}

// benchImpls returns the implementations compared:
//   - raw: afero.OsFs;
//   - guarded: fsguard with a silent scope (no OnCall, allows not logged),
//     the common host set-up;
//   - guarded-oncall: an OnCall callback that returns Continue, so every
//     call builds an event and runs the pipeline, and reads are resolved;
//   - guarded-slow: the openat2 fast paths off: policy.Resolve and os.Root;
//   - basepath: afero.BasePathFs; osroot: os.Root, for reference.
func benchImpls(b *testing.B, dir string) []benchImpl {
	onCall := audit.WithOnCall(func(context.Context, *audit.Event) audit.Verdict { return audit.Continue })
	root, err := os.OpenRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { root.Close() })
	abs := func(rel string) string { return dir + "/" + rel }
	slow := aferoImpl("guarded-slow", guardedFs(b, dir, onCall), abs)
	slow.setup = func() func() { return fsguard.SetFastPaths(false) }
	return []benchImpl{
		aferoImpl("raw", afero.NewOsFs(), abs),
		aferoImpl("guarded", guardedFs(b, dir), abs),
		aferoImpl("guarded-oncall", guardedFs(b, dir, onCall), abs),
		slow,
		aferoImpl("basepath", afero.NewBasePathFs(afero.NewOsFs(), dir), func(rel string) string { return "/" + rel }),
		{
			name: "osroot", path: func(rel string) string { return rel },
			create: func(n string) (io.WriteCloser, error) { return root.Create(n) },
			open:   func(n string) (io.ReadCloser, error) { return root.Open(n) },
			stat:   root.Stat, remove: root.Remove, rename: root.Rename,
		},
	}
}

// benchDirs are the directories benchmarked: tmpfs when there is one (the
// guard's own cost hides behind a slow disk) and the default temp dir.
func benchDirs(b *testing.B) map[string]string {
	dirs := map[string]string{"tempdir": ""}
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		dirs["tmpfs"] = "/dev/shm"
	}
	return dirs
}

// BenchmarkFS runs the same calls on guarded, raw afero.OsFs,
// afero.BasePathFs and os.Root, side by side in one run. The files sit two
// directories below the root ("a/b/"), as project files usually do.
func BenchmarkFS(b *testing.B) {
	payload := make([]byte, 4096)
	for where, parent := range benchDirs(b) {
		b.Run(where, func(b *testing.B) {
			dir, err := os.MkdirTemp(parent, "fsguard-bench-")
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { os.RemoveAll(dir) })
			if dir, err = filepath.EvalSymlinks(dir); err != nil {
				b.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "a", "b", "read.txt"), payload, 0o644); err != nil {
				b.Fatal(err)
			}
			impls := benchImpls(b, dir)
			buf := make([]byte, len(payload))

			b.Run("CreateWriteClose", func(b *testing.B) {
				for _, im := range impls {
					name := im.path("a/b/w-" + im.name)
					b.Run(im.name, func(b *testing.B) {
						if im.setup != nil {
							defer im.setup()()
						}
						for b.Loop() {
							f, err := im.create(name)
							if err != nil {
								b.Fatal(err)
							}
							f.Write(payload)
							f.Close()
						}
					})
				}
			})
			b.Run("OpenReadClose", func(b *testing.B) {
				for _, im := range impls {
					name := im.path("a/b/read.txt")
					b.Run(im.name, func(b *testing.B) {
						if im.setup != nil {
							defer im.setup()()
						}
						for b.Loop() {
							f, err := im.open(name)
							if err != nil {
								b.Fatal(err)
							}
							io.ReadFull(f, buf)
							f.Close()
						}
					})
				}
			})
			b.Run("Stat", func(b *testing.B) {
				for _, im := range impls {
					name := im.path("a/b/read.txt")
					b.Run(im.name, func(b *testing.B) {
						if im.setup != nil {
							defer im.setup()()
						}
						for b.Loop() {
							if _, err := im.stat(name); err != nil {
								b.Fatal(err)
							}
						}
					})
				}
			})
			b.Run("Remove", func(b *testing.B) {
				// Files are made in batches with the timer stopped, so the
				// stop-the-world of StartTimer is paid once per batch.
				const batch = 1000
				tmpl := filepath.Join(dir, "a", "rm-template")
				if err := os.WriteFile(tmpl, nil, 0o644); err != nil {
					b.Fatal(err)
				}
				for _, im := range impls {
					b.Run(im.name, func(b *testing.B) {
						if im.setup != nil {
							defer im.setup()()
						}
						names := make([]string, batch)
						i := 0
						for b.Loop() {
							if i%batch == 0 {
								b.StopTimer()
								for j := range names {
									rel := fmt.Sprintf("a/b/rm-%s-%d", im.name, j)
									// A hard link to a template is ~100x cheaper to
									// make than a new file on a slow disk; the names
									// removed are ordinary entries all the same.
									if err := os.Link(tmpl, filepath.Join(dir, rel)); err != nil {
										b.Fatal(err)
									}
									names[j] = im.path(rel)
								}
								b.StartTimer()
							}
							if err := im.remove(names[i%batch]); err != nil {
								b.Fatal(err)
							}
							i++
						}
						b.StopTimer()
						for j := i % batch; j > 0 && j < batch; j++ {
							os.Remove(filepath.Join(dir, fmt.Sprintf("a/b/rm-%s-%d", im.name, j)))
						}
					})
				}
			})
			b.Run("Rename", func(b *testing.B) {
				for _, im := range impls {
					x, y := im.path("a/b/mv1-"+im.name), im.path("a/b/mv2-"+im.name)
					if err := os.WriteFile(filepath.Join(dir, "a/b/mv1-"+im.name), nil, 0o644); err != nil {
						b.Fatal(err)
					}
					b.Run(im.name, func(b *testing.B) {
						if im.setup != nil {
							defer im.setup()()
						}
						for b.Loop() {
							if err := im.rename(x, y); err != nil {
								b.Fatal(err)
							}
							x, y = y, x
						}
					})
				}
			})
		})
	}
}
