package fsguard_test

import (
	"archive/zip"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/spf13/afero"

	"github.com/auditguard/auditguard/audit"
	"github.com/auditguard/auditguard/fsguard"
	"github.com/auditguard/auditguard/policy"
)

// These tests drive the guarded Fs with code nobody here wrote: afero's own
// helpers, io/fs and testing/fstest through afero's IOFS adapter, and a
// zip extractor written the way such code usually is.
// (spf13/viper is left out: it would pull a dozen modules into the
// library's go.mod for one test.)

func TestAferoHelpers(t *testing.T) {
	base, root := layout(t)
	ctx, _, _ := enter(t, policy.Spec{WriteRoots: []string{root}})
	g := fsguard.New(ctx, afero.NewOsFs(), fsguard.WithDir(root))
	a := afero.Afero{Fs: g}

	if err := a.WriteFile("notes/today.md", []byte("# hi"), 0o644); !errors.Is(err, fs.ErrNotExist) || isDenial(err) {
		t.Fatalf("write into a missing directory: want the OS's not-exist error, got %v", err)
	}
	mustDo(t, a.MkdirAll("notes", 0o755))
	mustDo(t, a.WriteFile("notes/today.md", []byte("# hi"), 0o644))
	if b, err := a.ReadFile("notes/today.md"); err != nil || string(b) != "# hi" {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
	if ok, err := a.Exists("notes/today.md"); !ok || err != nil {
		t.Fatalf("Exists = %v, %v", ok, err)
	}
	if ok, err := a.DirExists("notes"); !ok || err != nil {
		t.Fatalf("DirExists = %v, %v", ok, err)
	}
	infos, err := a.ReadDir("sub")
	mustDo(t, err)
	var names []string
	for _, fi := range infos {
		names = append(names, fi.Name())
	}
	if !slices.Equal(names, []string{".Env.Local", "inner.txt"}) {
		t.Fatalf("ReadDir = %v", names)
	}

	dir, err := a.TempDir("", "work-")
	if err == nil {
		t.Fatalf("TempDir in the system temp dir (%s) should be outside the roots", dir)
	}
	if !isDenial(err) {
		t.Fatalf("TempDir outside: want a denial, got %v", err)
	}
	dir, err = a.TempDir(root, "work-")
	mustDo(t, err)
	tf, err := a.TempFile(dir, "tmp-*.txt")
	mustDo(t, err)
	if !strings.HasPrefix(tf.Name(), dir+"/tmp-") {
		t.Fatalf("TempFile name %q", tf.Name())
	}
	_, err = tf.WriteString("temp")
	mustDo(t, err, tf.Close())
	mustDo(t, a.SafeWriteReader("fresh.txt", strings.NewReader("fresh")))
	if err := a.SafeWriteReader("fresh.txt", strings.NewReader("again")); err == nil {
		t.Fatal("SafeWriteReader overwrote an existing file")
	}

	// Walk lists links without following them, and sees chain/ as the link it is.
	var walked []string
	mustDo(t, a.Walk(".", func(p string, info fs.FileInfo, err error) error {
		if err != nil {
			return err
		}
		walked = append(walked, p)
		return nil
	}))
	for _, want := range []string{"chain", "link_mid", "notes/today.md", "fresh.txt", ".git/hooks/pre-commit"} {
		if !slices.Contains(walked, want) {
			t.Errorf("Walk missed %s (got %v)", want, walked)
		}
	}
	if slices.Contains(walked, "link_mid/secret.txt") {
		t.Error("Walk followed a link out")
	}

	// Writes outside, through the helpers, are refused and leave nothing.
	before := snapshot(t, base)
	for name, err := range map[string]error{
		"WriteFile outside":    a.WriteFile("../outside/x.txt", []byte("x"), 0o644),
		"WriteFile via link":   a.WriteFile("link_mid/x.txt", []byte("x"), 0o644),
		"WriteReader outside":  a.WriteReader("../outside/y/z.txt", strings.NewReader("x")),
		"WriteFile .git hook":  a.WriteFile(".git/hooks/post-checkout", []byte("x"), 0o755),
		"WriteFile dangling":   a.WriteFile("dangling", []byte("x"), 0o644),
		"WriteFile hard link":  a.WriteFile("hard.txt", []byte("x"), 0o644),
		"WriteFile sibling":    a.WriteFile("../root_evil/x.txt", []byte("x"), 0o644),
		"TempFile outside":     tempFileErr(a, filepath.Join(base, "outside")),
		"RemoveAll whole root": a.RemoveAll(root),
	} {
		if !isDenial(err) {
			t.Errorf("%s: want a denial, got %v", name, err)
		}
	}
	if d := diffSnapshots(before, snapshot(t, base)); len(d) > 0 {
		t.Fatalf("refused helper calls changed the disk: %v", d)
	}
}

func tempFileErr(a afero.Afero, dir string) error {
	f, err := a.TempFile(dir, "x")
	if err == nil {
		f.Close()
	}
	return err
}

// TestIOFS: the guarded Fs, seen as an io/fs.FS through afero's adapter,
// passes testing/fstest.TestFS.
func TestIOFS(t *testing.T) {
	root := tempDir(t)
	write(t, filepath.Join(root, "a.txt"), "a")
	write(t, filepath.Join(root, "dir", "b.txt"), "bb")
	write(t, filepath.Join(root, "dir", "deeper", "c.txt"), "ccc")
	ctx, _, _ := enter(t, policy.Spec{WriteRoots: []string{root}})
	g := fsguard.New(ctx, afero.NewOsFs(), fsguard.WithDir(root))
	fsys := afero.NewIOFS(g)
	if err := fstest.TestFS(fsys, "a.txt", "dir/b.txt", "dir/deeper/c.txt"); err != nil {
		t.Fatal(err)
	}
	var files []string
	mustDo(t, fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	}))
	if !slices.Equal(files, []string{"a.txt", "dir/b.txt", "dir/deeper/c.txt"}) {
		t.Fatalf("WalkDir = %v", files)
	}
}

// extract is a zip extractor written the way many are: join the entry name
// to the destination and write. It keeps going after an error.
func extract(fsys afero.Fs, dest string, zr *zip.Reader) []error {
	var errs []error
	for _, zf := range zr.File {
		p := filepath.Join(dest, zf.Name)
		if zf.FileInfo().IsDir() {
			if err := fsys.MkdirAll(p, 0o755); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		if err := fsys.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			errs = append(errs, err)
			continue
		}
		r, err := zf.Open()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		w, err := fsys.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			r.Close()
			errs = append(errs, err)
			continue
		}
		_, err = io.Copy(w, r)
		r.Close()
		errs = append(errs, err, w.Close())
	}
	return errs
}

func TestZipSlip(t *testing.T) {
	base := tempDir(t)
	root := filepath.Join(base, "root")
	mustDo(t, os.Mkdir(root, 0o755), os.Mkdir(filepath.Join(base, "outside"), 0o755))
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range []string{"pkg/README.md", "../../x", "pkg/../../../y", "../../outside/z", "pkg/.git/hooks/pre-commit", "pkg/lib/code.go"} {
		w, err := zw.Create(name)
		mustDo(t, err)
		_, err = w.Write([]byte("payload " + name))
		mustDo(t, err)
	}
	mustDo(t, zw.Close())
	zr, err := zip.NewReader(bytes.NewReader(buf.Bytes()), int64(buf.Len()))
	mustDo(t, err)

	ctx, _, rec := enter(t, policy.Spec{WriteRoots: []string{root}})
	g := fsguard.New(ctx, afero.NewOsFs())
	dest := filepath.Join(root, "extract")
	before := entries(t, filepath.Dir(base))
	denied := 0
	for _, err := range extract(g, dest, zr) {
		if err == nil {
			continue
		}
		if !isDenial(err) {
			t.Errorf("unexpected error: %v", err)
		}
		denied++
	}
	if denied < 4 {
		t.Errorf("%d calls denied, want the three slips and the hook refused", denied)
	}
	got := entries(t, root)
	// The hook is refused; the directories above it are git's own layout
	// (an empty hooks directory may be made).
	want := []string{"extract", "extract/pkg", "extract/pkg/.git", "extract/pkg/.git/hooks", "extract/pkg/README.md", "extract/pkg/lib", "extract/pkg/lib/code.go"}
	if !slices.Equal(got, want) {
		t.Fatalf("inside the root: %v, want %v", got, want)
	}
	if after := entries(t, filepath.Dir(base)); len(after) != len(before)+len(want) {
		t.Fatalf("something landed outside the root: before %d entries, after %d", len(before), len(after))
	}
	if got := entries(t, filepath.Join(base, "outside")); len(got) > 0 {
		t.Fatalf("zip slip wrote outside: %v", got)
	}
	var recorded int
	for _, r := range rec.Records() {
		if r.Outcome == audit.Denied {
			recorded++
		}
	}
	if recorded != denied {
		t.Errorf("%d denials recorded, %d returned", recorded, denied)
	}
}
