package isolate

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"time"

	"github.com/auditguard/auditguard/audit"
)

// Kind is how an isolated call failed. Hosts branch on it (or on the
// sentinel errors, with errors.Is); the message is for people and models.
type Kind uint8

const (
	// Failed: the function returned an error; Msg is its text.
	Failed Kind = iota + 1
	// Panicked: the function (or a goroutine it started) panicked; Msg is
	// the panic value, Stack the child's stack.
	Panicked
	// TimedOut: the call ran past its timeout and was killed.
	TimedOut
	// Canceled: the caller's context ended, or its guard scope was
	// released, and the call was killed; Err says which.
	Canceled
	// Crashed: the child died of a signal (Signal) or exited without a
	// result (ExitCode), e.g. a runtime fatal error or os.Exit; or the
	// sandbox's init died under it (Err matches sandbox.ErrInitDied, Msg
	// says how).
	Crashed
	// OutOfMemory: the child reached its memory limit and was killed, or
	// the Go runtime could not get more memory.
	OutOfMemory
	// BadResult: the result is not valid JSON for the caller's out value,
	// or the function's Out could not be encoded.
	BadResult
	// BadInput: the input could not be encoded, or decoded as the
	// function's In.
	BadInput
	// Unknown: no function of that name is registered.
	Unknown
	// Setup: the child could not be started or set up (no sandbox on this
	// host, no guard scope, a policy that does not rebuild); Err says why.
	Setup
)

var kindNames = [...]string{Failed: "failed", Panicked: "panicked", TimedOut: "timed out", Canceled: "canceled",
	Crashed: "crashed", OutOfMemory: "out of memory", BadResult: "bad result", BadInput: "bad input",
	Unknown: "unknown", Setup: "setup"}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Sentinels matched by errors.Is on an *Error of the kind.
var (
	ErrFailed      = errors.New("isolate: the function returned an error")
	ErrPanicked    = errors.New("isolate: the function panicked")
	ErrTimeout     = errors.New("isolate: timed out")
	ErrCanceled    = errors.New("isolate: canceled")
	ErrCrashed     = errors.New("isolate: the child crashed")
	ErrOutOfMemory = errors.New("isolate: out of memory")
	ErrBadResult   = errors.New("isolate: bad result")
	ErrBadInput    = errors.New("isolate: bad input")
	ErrUnknown     = errors.New("isolate: no such function")
	ErrSetup       = errors.New("isolate: setup failed")
)

var kindErrs = [...]error{Failed: ErrFailed, Panicked: ErrPanicked, TimedOut: ErrTimeout, Canceled: ErrCanceled,
	Crashed: ErrCrashed, OutOfMemory: ErrOutOfMemory, BadResult: ErrBadResult, BadInput: ErrBadInput,
	Unknown: ErrUnknown, Setup: ErrSetup}

// Error is every failure of an isolated call: a value, whatever the
// function did. errors.Is(err, ErrTimeout) (and the other sentinels)
// match by Kind; errors.Is(err, fs.ErrPermission) and audit.ErrDenied hold
// when the function's error was a guard denial in the child; Unwrap gives
// Err (the context's error for Canceled, the start error for Setup).
type Error struct {
	Name string // the registered function
	Kind Kind
	// Msg is the function's error text (Failed), the panic value
	// (Panicked), or what went wrong (BadResult, BadInput, Crashed).
	Msg string
	// Stack is the child's stack of a panic.
	Stack string
	// Denied: the function's error was (or wrapped) a guard denial.
	Denied bool
	// Timeout is the limit a TimedOut call ran into.
	Timeout time.Duration
	// Signal killed the child (Crashed, OutOfMemory), 0 if none;
	// ExitCode is its exit code otherwise (-1 unknown).
	Signal   syscall.Signal
	ExitCode int
	// MemoryLimit is the limit an OutOfMemory call reached (0: unknown).
	MemoryLimit uint64
	// Stderr is the end of the child's standard error (at most 64 KiB),
	// where the Go runtime writes fatal errors.
	Stderr string
	Err    error
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "isolate: tool %q ", e.Name)
	switch e.Kind {
	case Failed:
		b.WriteString("failed: " + e.Msg)
	case Panicked:
		b.WriteString("panicked: " + e.Msg)
	case TimedOut:
		fmt.Fprintf(&b, "killed after %v (timeout)", e.Timeout)
	case Canceled:
		b.WriteString("killed: canceled")
		if e.Err != nil {
			b.WriteString(" (" + e.Err.Error() + ")")
		}
	case Crashed:
		b.WriteString("crashed: ")
		switch {
		case e.Signal != 0:
			b.WriteString("killed by signal " + signalName(e.Signal))
		case e.Msg != "":
			b.WriteString(e.Msg)
		default:
			fmt.Fprintf(&b, "exited with code %d without a result", e.ExitCode)
		}
	case OutOfMemory:
		b.WriteString("ran out of memory")
		if e.MemoryLimit > 0 {
			fmt.Fprintf(&b, " (limit %s)", byteSize(e.MemoryLimit))
		}
		b.WriteString(" and was killed")
	case BadResult:
		b.WriteString("returned a bad result: " + e.Msg)
	case BadInput:
		b.WriteString("got a bad input: " + e.Msg)
	case Unknown:
		b.WriteString("is not registered (isolate.Register it in an init function)")
	case Setup:
		b.WriteString("could not start")
		if e.Err != nil {
			b.WriteString(": " + e.Err.Error())
		}
	default:
		b.WriteString(e.Kind.String())
	}
	return b.String()
}

func (e *Error) Is(target error) bool {
	if int(e.Kind) < len(kindErrs) && kindErrs[e.Kind] != nil && target == kindErrs[e.Kind] {
		return true
	}
	return e.Denied && (target == fs.ErrPermission || target == audit.ErrDenied)
}

func (e *Error) Unwrap() error { return e.Err }

func signalName(s syscall.Signal) string {
	names := map[syscall.Signal]string{syscall.SIGKILL: "SIGKILL", syscall.SIGSEGV: "SIGSEGV", syscall.SIGABRT: "SIGABRT",
		syscall.SIGBUS: "SIGBUS", syscall.SIGTERM: "SIGTERM", syscall.SIGILL: "SIGILL", syscall.SIGFPE: "SIGFPE"}
	if n, ok := names[s]; ok {
		return n + " (" + s.String() + ")"
	}
	return s.String()
}

func byteSize(n uint64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprintf("%dB", n)
}
