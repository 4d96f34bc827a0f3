package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/auditguard/auditguard/internal/benchhook"
	"github.com/auditguard/auditguard/policy"
	"github.com/auditguard/auditguard/procguard/sandbox"
)

// The workload rows run real work in the sandbox twice, interleaved: with
// the file-call supervisor (every create, write, delete, rename and link
// resolved, judged and performed by the supervisor) and without it
// (Spec.NoSeccomp), the same namespaces, mounts and policy otherwise. The
// ratio is what the supervisor costs that work. Every row has a third
// side, the trap floor: the same calls trapped, each answered at once with
// "go on" (benchhook.TrapFloor), which is what the trap's round trip alone
// costs, under any supervisor of this design.

// workloadFiles is how many files the archive row extracts and commits.
const workloadFiles = 5000

func workloadRows(e *env) ([]*row, error) {
	tarRow, err := tarCommitRow(e)
	if err != nil {
		return nil, err
	}
	buildRow, err := goBuildRow(e)
	if err != nil {
		return nil, err
	}
	loopRow, err := execLoopRow(e)
	if err != nil {
		return nil, err
	}
	judgedBuild, err := goBuildJudgedRow(e)
	if err != nil {
		return nil, err
	}
	return []*row{tarRow, buildRow, loopRow, judgedBuild}, nil
}

// execSides returns the two sides of an exec-judgement row: script run
// by sh in dir (a write root) in the sandbox with the supervisor, every
// exec after sh's judged by a host judge that allows it as a host without
// OnCall does (the trap, the round trip to the host for a call not seen
// before, a report of a repeat, the check at the exec stop), and the same
// without exec judgement.
func execSides(dir, script string, env []string, prep func(int) error) (on, off, floor *side, skip string) {
	return workSides(dir, script, env, prep, func(spec *sandbox.Spec, on bool) {
		if on {
			// A host without OnCall: the policy alone allows, and the
			// sandbox lets repeats of an allowed call run (recorded, not
			// asked).
			spec.JudgeExec = func(ec *sandbox.ExecCall) bool { ec.Cacheable = true; return true }
		}
	}, func(l *sandbox.Launch, on bool) error {
		if on && !l.Report.Exec {
			return errors.New("execs were not judged")
		}
		return nil
	}, sideNames{"exec judged", "not judged", "exec trap floor",
		"in the sandbox, every exec judged by the host and checked at its exec stop",
		"the same without exec judgement (file calls supervised on both sides)",
		"the same, every trapped call (execs and file calls) answered at once with \"go on\", nothing read or judged: the trap's round trip alone",
		"the sandbox does not judge execs here: "})
}

// sideNames name a workload row's two sides and say what they run.
type sideNames struct{ on, off, floor, onNote, offNote, floorNote, skip string }

// workSides returns the two sides of a workload row: script run by sh in
// dir (a write root) in the sandbox, set by configure for the side on or
// off, each run checked by check. prep runs before each side's block,
// untimed. The on side is run once first: where it fails, the row is
// skipped with names.skip and the error. floor is the on side with every
// trapped call answered at once (benchhook.TrapFloor).
func workSides(dir, script string, env []string, prep func(int) error,
	configure func(*sandbox.Spec, bool), check func(*sandbox.Launch, bool) error, names sideNames) (on, off, floor *side, skip string) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		return nil, nil, nil, "no sh"
	}
	sh, _ = filepath.EvalSymlinks(sh)
	run := func(onSide, floorSide bool) func(int) error {
		return func(int) error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*childTimeout)
			defer cancel()
			spec := &sandbox.Spec{
				Path: sh, Args: []string{"sh", "-c", script}, Env: env, Dir: dir,
				Files: []policy.Spec{{WriteRoots: []string{dir}, Home: dir}},
			}
			configure(spec, onSide)
			if floorSide {
				if benchhook.TrapFloor == nil {
					return errors.New("no trap floor on this system")
				}
				benchhook.TrapFloor(spec)
			}
			var out bytes.Buffer
			l, err := sandbox.Start(ctx, spec, sandbox.Stdio{Stdout: &out, Stderr: &out, WaitDelay: time.Second}, nil, nil)
			if err != nil {
				return err
			}
			st, err := l.Wait()
			if err != nil || !st.Success() {
				return fmt.Errorf("%s: %v %v: %.2000s", script, st, err, out.Bytes())
			}
			return check(l, onSide)
		}
	}
	on = &side{name: names.on, prep: prep, op: run(true, false), note: "sh -c '" + script + "' " + names.onNote}
	off = &side{name: names.off, prep: prep, op: run(false, false), note: names.offNote}
	floor = &side{name: names.floor, prep: prep, op: run(true, true), note: names.floorNote}
	if err := on.op(0); err != nil {
		return on, off, floor, names.skip + err.Error()
	}
	return on, off, floor, ""
}

// execLoopRow is a script that starts 1,000 short programs.
func execLoopRow(e *env) (*row, error) {
	dir, err := e.mkdir("workload-exec")
	if err != nil {
		return nil, err
	}
	// The table's own test (a reduced table: few write roots) runs 50.
	n := 1000
	if e.roots != 0 {
		n = 50
	}
	r := &row{group: "workload", call: fmt.Sprintf("sh loop starting %d short programs", n), base: "not judged",
		n: 1, minRounds: 5, maxRounds: 40,
		targets: []target{{side: "exec judged", vs: "not judged", maxRatio: 1.15, text: "<= 1.15x not judged"}}}
	on, off, floor, skip := execSides(dir, fmt.Sprintf("i=0; while [ $i -lt %d ]; do /bin/true; i=$((i+1)); done", n), []string{"PATH=/usr/bin:/bin"}, nil)
	r.sides, r.skip = []*side{off, on, floor}, skip
	r.cleanup = func() { _ = os.RemoveAll(dir) }
	return r, nil
}

// sandboxSides returns the two sides of a workload row: script run by sh
// in dir, a write root, with and without the supervisor (Spec.NoSeccomp).
// prep runs before each side's block, untimed.
func sandboxSides(dir, script string, env []string, prep func(int) error) (on, off, floor *side, skip string) {
	return workSides(dir, script, env, prep, func(spec *sandbox.Spec, on bool) { spec.NoSeccomp = !on },
		func(l *sandbox.Launch, on bool) error {
			if on && !l.Report.Seccomp {
				return errors.New("the supervisor did not run")
			}
			return nil
		}, sideNames{"supervised", "unsupervised", "trap floor", "in the sandbox, file calls supervised",
			"the same with Spec.NoSeccomp",
			"the supervised sandbox with every trapped call answered at once with \"go on\", nothing read, judged or performed by the supervisor: the trap's round trip alone",
			"the sandbox does not run it here: "})
}

// tarCommitRow extracts an archive of workloadFiles small files into a
// fresh repository and commits them.
func tarCommitRow(e *env) (*row, error) {
	dir, err := e.mkdir("workload-tar")
	if err != nil {
		return nil, err
	}
	r := &row{group: "workload", call: "tar -x of 5,000 files + git add + git commit", base: "unsupervised",
		n: 1, minRounds: 5, maxRounds: 40,
		targets: []target{{side: "supervised", vs: "unsupervised", maxRatio: 1.5, text: "<= 1.5x unsupervised"}}}
	if _, err := exec.LookPath("git"); err != nil {
		r.skip = "git is not installed"
		return r, nil
	}
	if _, err := exec.LookPath("tar"); err != nil {
		r.skip = "tar is not installed"
		return r, nil
	}
	src := filepath.Join(dir, "src")
	for i := range workloadFiles {
		sub := filepath.Join(src, "d"+strconv.Itoa(i/100))
		if i%100 == 0 {
			if err := os.MkdirAll(sub, 0o755); err != nil {
				return nil, err
			}
		}
		if err := os.WriteFile(filepath.Join(sub, "f"+strconv.Itoa(i)+".txt"), []byte("line "+strconv.Itoa(i)+"\n"), 0o644); err != nil {
			return nil, err
		}
	}
	if out, err := exec.Command("tar", "-cf", filepath.Join(dir, "files.tar"), "-C", src, ".").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("tar: %v: %s", err, out)
	}
	if err := os.RemoveAll(src); err != nil {
		return nil, err
	}
	repo := filepath.Join(dir, "repo")
	// Each block gets an empty repository, made outside the sandbox.
	prep := func(int) error {
		if err := os.RemoveAll(repo); err != nil {
			return err
		}
		out, err := exec.Command("git", "init", "-q", "--template=", repo).CombinedOutput()
		if err != nil {
			return fmt.Errorf("git init: %v: %s", err, out)
		}
		return nil
	}
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=b", "GIT_AUTHOR_EMAIL=b@example.com",
		"GIT_COMMITTER_NAME=b", "GIT_COMMITTER_EMAIL=b@example.com"}
	if err := prep(0); err != nil {
		return nil, err
	}
	on, off, floor, skip := sandboxSides(dir, "cd repo && tar -xf ../files.tar && git add -A && git commit -qm files", env, prep)
	r.sides, r.skip = []*side{off, on, floor}, skip
	r.cleanup = func() { _ = os.RemoveAll(dir) }
	return r, nil
}

// goBuildRow builds a small module (its main package changed before each
// block, so it compiles and links; the standard library comes from a warm
// cache in the write root), with and without the file-call supervisor.
func goBuildRow(e *env) (*row, error) {
	r := &row{group: "workload", call: "go build of a small module (warm cache)", base: "unsupervised",
		n: 1, minRounds: 5, maxRounds: 40,
		targets: []target{{side: "supervised", vs: "unsupervised", maxRatio: 1.10, text: "<= 1.10x unsupervised"}}}
	return goBuild(e, r, "workload-go", sandboxSides)
}

// goBuildJudgedRow is the same build with and without exec judgement:
// go build starts compile, asm and link, each judged when it starts.
func goBuildJudgedRow(e *env) (*row, error) {
	r := &row{group: "workload", call: "go build of a small module, execs judged", base: "not judged",
		n: 1, minRounds: 5, maxRounds: 40,
		targets: []target{{side: "exec judged", vs: "not judged", maxRatio: 1.05, text: "<= 1.05x not judged"}}}
	if e.roots != 0 {
		// The reduced table of the package's test: one cold build of the
		// standard library is enough there.
		r.skip = "skipped in the reduced table (go build already runs above)"
		return r, nil
	}
	return goBuild(e, r, "workload-go-exec", execSides)
}

func goBuild(e *env, r *row, name string, sides func(dir, script string, env []string, prep func(int) error) (on, off, floor *side, skip string)) (*row, error) {
	dir, err := e.mkdir(name)
	if err != nil {
		return nil, err
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		r.skip = "go is not on PATH"
		return r, nil
	}
	goBin, _ = filepath.EvalSymlinks(goBin)
	mod := filepath.Join(dir, "mod")
	if err := os.MkdirAll(mod, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(mod, "go.mod"), []byte("module example.com/small\n\ngo 1.22\n"), 0o644); err != nil {
		return nil, err
	}
	round := 0
	prep := func(int) error {
		round++
		src := fmt.Sprintf("package main\n\nimport (\n\t\"encoding/json\"\n\t\"fmt\"\n\t\"os\"\n)\n\nfunc main() {\n\tb, _ := json.Marshal(map[string]int{\"round\": %d})\n\tfmt.Fprintln(os.Stdout, string(b))\n}\n", round)
		return os.WriteFile(filepath.Join(mod, "main.go"), []byte(src), 0o644)
	}
	env := []string{"PATH=" + filepath.Dir(goBin) + ":/usr/bin:/bin", "HOME=" + dir, "GOCACHE=" + filepath.Join(dir, "cache"),
		"GOPATH=" + filepath.Join(dir, "gopath"), "GOENV=off", "GOTOOLCHAIN=local", "GOTELEMETRY=off", "GOFLAGS=-mod=mod", "CGO_ENABLED=0", "TMPDIR=" + filepath.Join(dir, "tmp")}
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o755); err != nil {
		return nil, err
	}
	if err := prep(0); err != nil {
		return nil, err
	}
	// Warm the cache (the standard library) before measuring.
	warm := exec.Command(goBin, "build", "-o", filepath.Join(dir, "out"), ".")
	warm.Dir, warm.Env = mod, env
	if out, err := warm.CombinedOutput(); err != nil {
		r.skip = fmt.Sprintf("go build does not run here: %v: %s", err, out)
		return r, nil
	}
	on, off, floor, skip := sides(dir, "cd mod && go build -o ../out .", env, prep)
	r.sides, r.skip = []*side{off, on, floor}, skip
	r.cleanup = func() { _ = os.RemoveAll(dir) }
	return r, nil
}
