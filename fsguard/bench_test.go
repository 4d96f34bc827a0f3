package fsguard_test

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/fsguard"
	"github.com/auditguard/auditguard/policy"
)

// benchBlock is how many calls one side makes in a row per iteration: long
// enough that the clock's resolution does not matter, short enough that
// load changes rarely fall inside one round of blocks.
const benchBlock = 16

// side is one way of making a benchmarked call. The benchmark runs a block
// of calls on every side per iteration, the first side rotating from one
// iteration to the next, so every side sees the same machine load.
type side struct {
	name  string
	setup func() (restore func()) // around each block, untimed (optional)
	prep  func()                  // before each block, untimed (optional)
	call  func(k int) error       // call k of the block

	ns      []float64 // ns per call, one sample per block
	mallocs uint64
}

// interleave runs the sides and reports, for each: its median ns per call
// (NAME-ns), its allocations per call (NAME-allocs) and, for every side
// but the first (raw), the median of its per-round ratio to the first
// (NAME/raw). The ratios pair blocks run under the same load, which is
// what makes them comparable on a shared machine; ns/op is the sum of
// every side's block plus the bookkeeping between them.
func interleave(b *testing.B, sides []*side) {
	b.Helper()
	// One untimed block each: warms caches and fails early.
	for _, s := range sides {
		runBlock(b, s, false)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		for j := range sides {
			runBlock(b, sides[(i+j)%len(sides)], true)
		}
	}
	b.StopTimer()
	n := len(sides[0].ns)
	if n == 0 {
		return
	}
	for _, s := range sides {
		b.ReportMetric(median(s.ns), s.name+"-ns")
		b.ReportMetric(float64(s.mallocs)/float64(n*benchBlock), s.name+"-allocs")
	}
	for _, s := range sides[1:] {
		r := make([]float64, n)
		for i := range r {
			r[i] = s.ns[i] / sides[0].ns[i]
		}
		b.ReportMetric(median(r), s.name+"/"+sides[0].name)
	}
}

func runBlock(b *testing.B, s *side, record bool) {
	if s.prep != nil {
		s.prep()
	}
	if s.setup != nil {
		defer s.setup()()
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	before := ms.Mallocs
	t0 := time.Now()
	for k := range benchBlock {
		if err := s.call(k); err != nil {
			b.Fatalf("%s: %v", s.name, err)
		}
	}
	d := time.Since(t0)
	runtime.ReadMemStats(&ms)
	if record {
		s.ns = append(s.ns, float64(d.Nanoseconds())/benchBlock)
		s.mallocs += ms.Mallocs - before
	}
}

// median is the middle value of s (the mean of the two middle ones for an
// even count); s is left as it is.
func median(s []float64) float64 {
	s = slices.Clone(s)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// fsImpl is one filesystem the sides call, with the names it takes.
type fsImpl struct {
	name   string
	setup  func() func() // around each block (fast paths off)
	path   func(rel string) string
	create func(string) (io.WriteCloser, error)
	open   func(string) (io.ReadCloser, error)
	stat   func(string) (fs.FileInfo, error)
	remove func(string) error
	rename func(string, string) error
}

func aferoImpl(name string, fsys afero.Fs, path func(string) string) fsImpl {
	return fsImpl{
		name: name, path: path,
		create: func(n string) (io.WriteCloser, error) { return fsys.Create(n) },
		open:   func(n string) (io.ReadCloser, error) { return fsys.Open(n) },
		stat:   fsys.Stat, remove: fsys.Remove, rename: fsys.Rename,
	}
}

// benchSecret is the read-denied file each benchmark directory holds; the
// read-deny policies also deny "*.pem" at any depth, so a read decision
// walks both kinds of entry.
const benchSecret = "secret.txt"

// guardedFs enters a guard over spec and returns a handle on the OS.
func guardedFs(b *testing.B, spec policy.Spec, opts ...audit.Option) *fsguard.Fs {
	b.Helper()
	pol, err := policy.New(spec)
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

// mustDenyReads proves that f checks reads: a read of the denied file
// must be refused, so the side really does the guard work it is named for.
func mustDenyReads(b *testing.B, f *fsguard.Fs, dir string) {
	b.Helper()
	if _, err := f.Stat(filepath.Join(dir, benchSecret)); !isDenial(err) {
		b.Fatalf("a read-deny side read the denied file: %v", err)
	}
	if _, err := f.Open(filepath.Join(dir, benchSecret)); !isDenial(err) {
		b.Fatalf("a read-deny side opened the denied file: %v", err)
	}
}

// benchImpls returns the filesystems compared, raw first:
//   - raw: afero.OsFs;
//   - guarded: fsguard with a silent scope (no OnCall, allows not logged)
//     and a policy with read-deny entries, so reads are checked: the
//     common host set-up with every check on;
//   - guarded-noreadrules: the same without read rules, where a read's
//     decision cannot depend on its path and reads skip resolution;
//   - guarded-oncall: an OnCall callback that returns Continue, so every
//     call builds an event and runs the pipeline (read-deny on);
//   - guarded-slow: the openat2 fast paths off (read-deny on): resolution
//     component by component and os.Root;
//   - basepath: afero.BasePathFs; osroot: os.Root, for reference.
//
// calls counts the OnCall side's callbacks, so the benchmark can show that
// side was asked.
func benchImpls(b *testing.B, dir string) (impls []fsImpl, calls *atomic.Int64) {
	calls = new(atomic.Int64)
	onCall := audit.WithOnCall(func(context.Context, *audit.Event) audit.Verdict {
		calls.Add(1)
		return audit.Continue
	})
	root, err := os.OpenRoot(dir)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { root.Close() })
	abs := func(rel string) string { return dir + "/" + rel }
	denying := policy.Spec{WriteRoots: []string{dir}, Home: dir, ReadDeny: []string{filepath.Join(dir, benchSecret), "*.pem"}}
	free := policy.Spec{WriteRoots: []string{dir}, Home: dir}

	guarded := guardedFs(b, denying)
	oncall := guardedFs(b, denying, onCall)
	slow := guardedFs(b, denying)
	for _, f := range []*fsguard.Fs{guarded, oncall, slow} {
		mustDenyReads(b, f, dir)
	}
	slowImpl := aferoImpl("guarded-slow", slow, abs)
	slowImpl.setup = func() func() { return fsguard.SetFastPaths(false) }
	return []fsImpl{
		aferoImpl("raw", afero.NewOsFs(), abs),
		aferoImpl("guarded", guarded, abs),
		aferoImpl("guarded-noreadrules", guardedFs(b, free), abs),
		aferoImpl("guarded-oncall", oncall, abs),
		slowImpl,
		aferoImpl("basepath", afero.NewBasePathFs(afero.NewOsFs(), dir), func(rel string) string { return "/" + rel }),
		{
			name: "osroot", path: func(rel string) string { return rel },
			create: func(n string) (io.WriteCloser, error) { return root.Create(n) },
			open:   func(n string) (io.ReadCloser, error) { return root.Open(n) },
			stat:   root.Stat, remove: root.Remove, rename: root.Rename,
		},
	}, calls
}

// benchDirs are the directories benchmarked: tmpfs when there is one (the
// guard's own cost hides behind a slow disk) and the default temp dir.
func benchDirs() map[string]string {
	dirs := map[string]string{"tempdir": ""}
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		dirs["tmpfs"] = "/dev/shm"
	}
	return dirs
}

// benchDir makes a fresh benchmark directory under parent, its symbolic
// links resolved.
func benchDir(b *testing.B, parent string) string {
	b.Helper()
	dir, err := os.MkdirTemp(parent, "fsguard-bench-")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) })
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkFS runs the same calls on raw afero.OsFs, the guarded Fs (in
// the set-ups benchImpls lists), afero.BasePathFs and os.Root, interleaved
// (see interleave). The files sit two directories below the root
// ("a/b/"), as project files usually do. The guarded-noreadrules side runs
// only the reads, the one place it differs from guarded.
func BenchmarkFS(b *testing.B) {
	payload := make([]byte, 4096)
	for where, parent := range benchDirs() {
		b.Run(where, func(b *testing.B) {
			dir := benchDir(b, parent)
			if err := os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755); err != nil {
				b.Fatal(err)
			}
			for _, n := range []string{"a/b/read.txt", benchSecret} {
				if err := os.WriteFile(filepath.Join(dir, n), payload, 0o644); err != nil {
					b.Fatal(err)
				}
			}
			impls, calls := benchImpls(b, dir)
			buf := make([]byte, len(payload))
			sides := func(reads bool, mk func(im fsImpl) *side) []*side {
				var out []*side
				for _, im := range impls {
					if im.name == "guarded-noreadrules" && !reads {
						continue
					}
					s := mk(im)
					s.name, s.setup = im.name, im.setup
					out = append(out, s)
				}
				return out
			}
			run := func(b *testing.B, ss []*side) {
				before := calls.Load()
				interleave(b, ss)
				if calls.Load() == before {
					b.Fatal("the OnCall side was never asked")
				}
			}

			b.Run("CreateWriteClose", func(b *testing.B) {
				run(b, sides(false, func(im fsImpl) *side {
					name := im.path("a/b/w-" + im.name)
					return &side{call: func(int) error {
						f, err := im.create(name)
						if err != nil {
							return err
						}
						if _, err := f.Write(payload); err != nil {
							return err
						}
						return f.Close()
					}}
				}))
			})
			b.Run("OpenReadClose", func(b *testing.B) {
				run(b, sides(true, func(im fsImpl) *side {
					name := im.path("a/b/read.txt")
					return &side{call: func(int) error {
						f, err := im.open(name)
						if err != nil {
							return err
						}
						if _, err := io.ReadFull(f, buf); err != nil {
							return err
						}
						return f.Close()
					}}
				}))
			})
			b.Run("Stat", func(b *testing.B) {
				run(b, sides(true, func(im fsImpl) *side {
					name := im.path("a/b/read.txt")
					return &side{call: func(int) error {
						_, err := im.stat(name)
						return err
					}}
				}))
			})
			b.Run("Remove", func(b *testing.B) {
				// The names removed are made untimed before each block, as
				// hard links to a template: ~100x cheaper than new files on
				// a slow disk, and ordinary entries all the same.
				tmpl := filepath.Join(dir, "a", "rm-template")
				if err := os.WriteFile(tmpl, nil, 0o644); err != nil {
					b.Fatal(err)
				}
				run(b, sides(false, func(im fsImpl) *side {
					var names [benchBlock]string
					return &side{
						prep: func() {
							for k := range names {
								rel := fmt.Sprintf("a/b/rm-%s-%d", im.name, k)
								if err := os.Link(tmpl, filepath.Join(dir, rel)); err != nil {
									b.Fatal(err)
								}
								names[k] = im.path(rel)
							}
						},
						call: func(k int) error { return im.remove(names[k]) },
					}
				}))
			})
			b.Run("Rename", func(b *testing.B) {
				run(b, sides(false, func(im fsImpl) *side {
					x, y := im.path("a/b/mv1-"+im.name), im.path("a/b/mv2-"+im.name)
					if err := os.WriteFile(filepath.Join(dir, "a/b/mv1-"+im.name), nil, 0o644); err != nil {
						b.Fatal(err)
					}
					return &side{call: func(int) error {
						err := im.rename(x, y)
						x, y = y, x
						return err
					}}
				}))
			})
		})
	}
}

// BenchmarkFSManyRoots is a guarded create+write+close with 10,000 write
// roots against the raw call, interleaved: finding the root a write goes
// through must not grow with the number of roots. The file sits in one
// root in the middle of the list.
func BenchmarkFSManyRoots(b *testing.B) {
	const nRoots = 10_000
	dir := benchDir(b, benchDirs()["tmpfs"])
	roots := make([]string, nRoots)
	for i := range roots {
		roots[i] = filepath.Join(dir, fmt.Sprintf("r%05d", i))
		if err := os.Mkdir(roots[i], 0o755); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(roots[nRoots/2], "a"), 0o755); err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, 4096)
	spec := policy.Spec{WriteRoots: roots, Home: dir}
	create := func(fsys afero.Fs, name string) *side {
		return &side{call: func(int) error {
			f, err := fsys.Create(name)
			if err != nil {
				return err
			}
			if _, err := f.Write(payload); err != nil {
				return err
			}
			return f.Close()
		}}
	}
	var calls atomic.Int64
	onCall := audit.WithOnCall(func(context.Context, *audit.Event) audit.Verdict {
		calls.Add(1)
		return audit.Continue
	})
	name := func(s string) string { return filepath.Join(roots[nRoots/2], "a", "w-"+s) }
	raw := create(afero.NewOsFs(), name("raw"))
	raw.name = "raw"
	g := create(guardedFs(b, spec), name("guarded"))
	g.name = "guarded"
	oc := create(guardedFs(b, spec, onCall), name("oncall"))
	oc.name = "guarded-oncall"
	interleave(b, []*side{raw, g, oc})
	if calls.Load() == 0 {
		b.Fatal("the OnCall side was never asked")
	}
}
