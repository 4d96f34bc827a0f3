// Package shellguard is a guarded shell session for an agent's Bash tool,
// on mvdan.cc/sh/v3's interpreter: the agent keeps one Session like a
// terminal, and every call's programs and file work are decided by the
// guard scope the session was made from.
//
//	s, _ := shellguard.New(ctx, shellguard.Options{Dir: work, Recorder: rec}) // ctx: an entered scope
//	defer s.Close()
//	res, err := s.Run(ctx, `for f in *.go; do gofmt -l "$f"; done`)
//	// res.Stdout, res.Stderr, res.ExitCode, res.Dir, res.TimedOut, res.Records
//
// # What runs where
//
// The interpreter runs in the host process: builtins (echo, printf, cd,
// pwd, test, read, true, false, export...), variables, functions, loops,
// subshells, pipelines' plumbing and command substitutions are Go code and
// start no process. Every other command is a program started through
// procguard with its expanded argv, in the interpreter's working directory,
// with its exported variables, its stdio wired to the interpreter's (a
// pipe's end, a redirection's file): so a loop's gofmt -l "$f" is judged
// as gofmt -l a.go, each time, and nothing is refused for being opaque.
// The shell's own file work goes through fsguard: redirections and
// here-documents' targets, source, globs (directory reads), cd, and
// test's file operators (stat, and access for -r/-w/-x, where -w also asks
// the policy). Handlers holds these handlers for hosts that embed
// mvdan.cc/sh themselves.
//
// # Guaranteed
//
//   - No program starts without a procguard decision: the interpreter's
//     default exec handler is never called. A refused program prints the
//     denial's teaching text (what, which rule, how to allow it) on the
//     call's stderr, prefixed with its line:col in the script, and gives
//     exit status 126; the script and the session go on. A program the
//     policy's PATH lacks gives 127.
//   - The shell opens, stats and lists files only through fsguard, except
//     the standard devices (/dev/null, /dev/zero, /dev/std{in,out,err},
//     /dev/fd/0-2) and the FIFOs of process substitution (below). A
//     refused redirection prints the teaching text and fails its statement
//     with status 1, creating nothing: a write to .git/hooks/pre-commit
//     leaves no file.
//   - State persists across calls: working directory, variables (exported
//     or not), functions, aliases and shell options; a failing call, an
//     exit, a timeout or a refusal ends the call, not the session.
//   - A script that does not parse returns a *ParseError with line:col and
//     runs nothing.
//   - Nothing a call started outlives it: when the script ends, its
//     Timeout passes, its context is cancelled or the session is closed,
//     every program it started (background jobs included) is killed with
//     its whole tree (procguard kills each program's process group,
//     cgroup and sandbox when its context ends), and Run returns once they
//     are reaped. A timed-out call has TimedOut set and exit status 137.
//   - Each stream is capped at Options.MaxOutput: the first and last
//     halves are kept and a line "[output truncated: N bytes omitted]"
//     stands where the cut is; StdoutCut and StderrCut count the bytes
//     cut. Programs past the cap keep running (their output drains).
//   - Every call runs under an audit.Call (the caller's, or Tool#N), so
//     every record says which call decided; Result.Records lists the
//     records of the call (from Options.Recorder; allowed calls only with
//     audit.WithLogAllows).
//   - Run is safe for concurrent use; calls on one session run one at a
//     time.
//
// # Not guaranteed, and how it differs from bash
//
//   - The interpreter is mvdan.cc/sh's, close to bash but not bash: what it
//     lacks (job control, coproc, ulimit, some shopt options) fails with
//     its error. $! is the interpreter's job id ("g1"), not a process id.
//   - Programs are looked up in the policy's PATH, and children get the
//     policy's PATH, HOME and TMPDIR: setting PATH in the session changes
//     which names the interpreter's type and command -v report (plain,
//     unguarded stats), not what runs. Exported variables reach children
//     filtered by the policy (policy.ExecEnv).
//   - A script without a #! line run by its path fails with 126 (no shell
//     re-reads it); run it as sh script.sh, which procguard judges as a
//     shell script.
//   - Process substitution (<(...), >(...)) makes a FIFO in the session's
//     TMPDIR (os.TempDir() when unset) with plain os calls; the program
//     reading it must be able to open it there.
//   - Programs read an empty stdin: there is no interactive input.
//   - exec >file redirects the rest of the call; each call starts with its
//     own streams. An EXIT trap runs at the end of every call.
//   - Files a redirection opens are handed to programs as real descriptors
//     (fsguard.WithRawFiles): decided at open, not re-checked.
//   - The cap counts what reached the session: a program's output past the
//     policy's OutputLimit (16 MiB by default) is dropped by procguard
//     first.
//   - Result.Records is found by the call's name in a copy of the
//     Recorder's whole history (Recorder.Records), so its cost grows with
//     that history; a host that keeps a long one should Reset it between
//     calls now and then. Calls given the same audit.Call name at the same
//     time cannot be told apart.
//
// # Cost
//
// A session's programs run one after another in one sandbox
// (procguard.Session): the first program of the session builds it, and
// every later one is forked from its init, which kills whatever a program
// left before the next starts. Each program is still decided, confined,
// limited and recorded as one with a sandbox of its own (procguard's
// Session says what differs: a timeout ends the shared sandbox, and the
// next program builds a new one). A program started while another of the
// session runs (a pipeline's other side, a background job) gets a sandbox
// of its own. Measured with
//
//	go test -run '^$' -bench RunCost -benchtime 7x ./shellguard/
//
// on the 2-core development VM (load average 4 to 7), every side once per
// round, interleaved, so the ratios compare runs under the same load
// (medians of 7 rounds; "own sandbox" is the same session with the
// shared sandbox off, as programs ran before):
//
//	call                                                ms    x raw sh -c
//	sh -c /bin/true (raw)                              9.0
//	session: /bin/true                                13.7    1.31
//	session, own sandbox: /bin/true                   18.0    1.96
//	procguard alone: /bin/true (no interpreter)       22.1
//	session, no namespace sandbox: /bin/true          14.8
//	sh -c 'loop of 100 /bin/true' (raw)                291
//	session: the loop                                  793    2.04
//	session, own sandbox: the loop                    5096   16.5
//	session, no namespace sandbox: the loop            479    1.17
//	session: a loop of 100 builtins (:)               0.66
//
// A loop's programs start back to back: with a sandbox each, every one
// waits for a whole start (procguard keeps one sandbox ready at a time,
// made by re-executing the host binary); sharing the session's, the loop
// costs 0.14x of that. What is left over raw is the exec judged in the
// sandbox (a trap, a ptrace stop) and the per-program cgroup; without
// the namespace sandbox (Landlock and cgroups only) the loop is within
// 1.2x of raw, so the interpreter, the decisions and the handlers are not
// the cost.
package shellguard
