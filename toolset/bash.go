package toolset

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/auditguard/auditguard/shellguard"
)

// BashInput is the bash tool's input.
type BashInput struct {
	Command string `json:"command"`
	// TimeoutSeconds shortens this call's timeout (never lengthens it
	// past the session's).
	TimeoutSeconds int `json:"timeout_seconds,omitempty"`
}

func (s *Set) bashTool() *Tool {
	return newTool("bash", fmt.Sprintf("Run a shell script (bash syntax: pipes, loops, functions, redirections, globs) in a persistent session: the working directory, exported variables and functions carry over from one call to the next. Every program is started under the policy with its expanded arguments; a refused program exits 126 with the reason on stderr. Each call is killed, with everything it started, after its timeout (%v at most); output is capped and says what was cut. Returns the exit code, the working directory after the call, stdout and stderr.", s.shellTimeout()),
		[]param{
			{name: "command", typ: "string", desc: "the script to run", required: true},
			{name: "timeout_seconds", typ: "integer", desc: "a shorter timeout for this call, in seconds", min: minimum(1)},
		}, s.Bash)
}

func (s *Set) shellTimeout() time.Duration {
	if t := s.opts.Shell.Timeout; t > 0 {
		return t
	}
	return shellguard.DefaultTimeout
}

// newShell starts the Set's shell session in the workspace.
func (s *Set) newShell() error {
	o := *s.opts.Shell
	if o.Dir == "" {
		o.Dir = s.ws
	}
	if o.Logger == nil {
		o.Logger = s.opts.Logger
	}
	sh, err := shellguard.New(s.scope, o)
	if err != nil {
		return err
	}
	s.shell = sh
	return nil
}

// Bash is the bash tool: one Run of the Set's shell session
// (shellguard.Session), under this call's audit.Call. A script that does
// not parse is a KindInput error and nothing of it ran; a script that
// fails is a Result with its exit code.
func (s *Set) Bash(ctx context.Context, in BashInput) (Result, error) {
	return call(s, ctx, "bash", in, func(e *env, in BashInput) (string, error) {
		if s.shell == nil {
			return "", inputErr("this tool set has no shell session")
		}
		if strings.TrimSpace(in.Command) == "" {
			return "", inputErr("command is empty; give the script to run")
		}
		if in.TimeoutSeconds < 0 {
			return "", inputErr("timeout_seconds must be positive")
		}
		ctx := e.ctx
		if in.TimeoutSeconds > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, time.Duration(in.TimeoutSeconds)*time.Second)
			defer cancel()
		}
		res, err := s.shell.Run(ctx, in.Command)
		var pe *shellguard.ParseError
		switch {
		case errors.As(err, &pe):
			return "", inputErr("%s", strings.TrimPrefix(pe.Error(), "shellguard: "))
		case res == nil && err != nil:
			return "", err
		}
		var b strings.Builder
		fmt.Fprintf(&b, "exit code %d, working directory %s", res.ExitCode, s.display(res.Dir))
		if res.TimedOut {
			b.WriteString(", timed out (everything the call started was killed)")
		}
		b.WriteByte('\n')
		if res.Stdout != "" {
			b.WriteString("--- stdout ---\n")
			b.WriteString(res.Stdout)
			if !strings.HasSuffix(res.Stdout, "\n") {
				b.WriteByte('\n')
			}
		}
		if res.Stderr != "" {
			b.WriteString("--- stderr ---\n")
			b.WriteString(res.Stderr)
			if !strings.HasSuffix(res.Stderr, "\n") {
				b.WriteByte('\n')
			}
		}
		if res.Stdout == "" && res.Stderr == "" {
			b.WriteString("(no output)\n")
		}
		if err != nil {
			// The session was closed or the caller went away: what the
			// call did so far, and why it ended.
			return "", &Error{Kind: KindFailed, Msg: b.String() + "the call ended early: " + err.Error(), Err: err}
		}
		return b.String(), nil
	})
}
