//go:build linux

package sandbox

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The spawner makes the pool's trampolines, so that the host does not fork
// itself.
//
// A trampoline's clone makes a user namespace, and Go's os.StartProcess
// then forks rather than vforks (the child must wait for its uid map):
// the kernel copies the forking process's page tables, and every page the
// process writes afterwards takes a copy-on-write fault. In a host that
// makes a trampoline per command this was about half of the host's own
// CPU per start (a profile of 30 starts back to back put the fork and the
// faults it leaves behind, on fresh heap memory, at the top), and it
// grows with the host's memory. The spawner is the host binary
// re-executed once with no namespaces of its own, which Go starts with a
// vfork; it waits on a socket, and for each request clones a trampoline
// exactly as the host would, with CLONE_PARENT, so the trampoline is the
// host's child: the host waits for it, signals it and reads its
// ProcessState as before, and its parent-death signal is tied to the same
// host thread that started the spawner. The spawner is small and idle,
// so its forks are cheap and leave nothing to fault.
//
// The spawner is a convenience, never a requirement: when it cannot be
// started, or dies, or fails a request, the host makes the trampoline
// itself. It runs only while the pool is on (SetPrewarm), and dies with
// the host (parent-death signal, and EOF on its socket).

// spawnerArg0 is the spawner's argv[0].
const spawnerArg0 = "auditguard-sandbox-spawner"

// fdSpawner is the spawner's end of its socket.
const fdSpawner = 3

// spawner is the host's handle on the spawner process.
type spawner struct {
	mu   sync.Mutex // one request at a time
	proc *os.Process
	sock *os.File
	// ready: the spawner said it serves. Until then (its runtime starts
	// in about the time a trampoline's does) the host clones trampolines
	// itself, so a host's first command does not wait for the spawner.
	ready atomic.Bool
}

var spawners struct {
	sync.Mutex
	s      *spawner
	broken bool // it could not be started, or failed maxSpawnerFailures times in a row: do not try again
	failed int  // spawners dropped since one last made a trampoline
}

// maxSpawnerFailures is how many spawners in a row may fail before the
// host stops starting them (each costs a re-execution of the host binary).
const maxSpawnerFailures = 3

// theSpawner returns the spawner once it serves, starting it on first
// use; nil while it starts and when there is none (the pool is off, or
// it cannot run here).
func theSpawner() *spawner {
	spawners.Lock()
	defer spawners.Unlock()
	if s := spawners.s; s != nil || spawners.broken {
		if s != nil && !s.ready.Load() {
			return nil
		}
		return s
	}
	pool.Lock()
	off := pool.off
	pool.Unlock()
	if off {
		return nil
	}
	s, err := startSpawner()
	if err != nil {
		spawners.broken = true
		return nil
	}
	spawners.s = s
	go s.awaitReady()
	return nil
}

// awaitReady waits, at most spawnerTimeout, for the spawner's first
// message, which says it serves; a spawner that does not say so is
// dropped.
func (s *spawner) awaitReady() {
	s.mu.Lock()
	var b [1]byte
	n, err := s.recv(b[:])
	s.mu.Unlock()
	if err != nil || n != 1 {
		dropSpawner(s)
		return
	}
	s.ready.Store(true)
}

// stopSpawner ends the spawner (SetPrewarm(false)); a later use starts
// another, even after spawners were given up on.
func stopSpawner() {
	spawners.Lock()
	s := spawners.s
	spawners.s = nil
	spawners.broken, spawners.failed = false, 0
	spawners.Unlock()
	if s != nil {
		s.stop()
	}
}

// dropSpawner forgets a spawner that failed, so the next use starts a new
// one, and ends it.
func dropSpawner(s *spawner) {
	spawners.Lock()
	mine := spawners.s == s
	if mine {
		spawners.s = nil
		spawners.failed++
		spawners.broken = spawners.failed >= maxSpawnerFailures
	}
	spawners.Unlock()
	if mine { // else whoever took it from spawners.s stops it
		s.stop()
	}
}

// spawned notes that a spawner made a trampoline.
func spawned() {
	spawners.Lock()
	spawners.failed = 0
	spawners.Unlock()
}

// stop kills the spawner, which ends a request under way (its answer
// never comes: EOF), then closes the host's end and reaps it.
func (s *spawner) stop() {
	_ = s.proc.Kill()
	s.mu.Lock()
	s.sock.Close()
	s.mu.Unlock()
	_, _ = s.proc.Wait()
}

func startSpawner() (*spawner, error) {
	host, peer, err := socketPair("sandbox-spawner", unix.SOCK_SEQPACKET)
	if err != nil {
		return nil, err
	}
	defer peer.Close()
	null, err := os.Open(os.DevNull)
	if err != nil {
		host.Close()
		return nil, err
	}
	defer null.Close()
	attr := &os.ProcAttr{
		Dir:   "/",
		Env:   []string{"GOMAXPROCS=1"},
		Files: []*os.File{null, null, null, peer},
		Sys: &syscall.SysProcAttr{
			Pdeathsig: syscall.SIGKILL,
			Setpgid:   true,
		},
	}
	var proc *os.Process
	spawn(func() { proc, err = os.StartProcess("/proc/self/exe", []string{spawnerArg0}, attr) })
	if err != nil {
		host.Close()
		return nil, err
	}
	return &spawner{proc: proc, sock: host}, nil
}

// spawnerTimeout bounds the wait for the spawner's answer. A request
// takes a few milliseconds; one that takes spawnerTimeout finds the
// spawner wedged (stopped, say): it is killed, and the host clones the
// trampoline itself, on descriptors of its own (newTrampoline). Should
// the spawner have cloned one for that request after all, it is a child
// the host does not know of: it reads EOF on its control socket (closed
// by the host), exits, and stays a zombie until the host exits (as a
// child whose exec failed in the spawner's os.StartProcess does, which
// its Wait4 cannot reap).
const spawnerTimeout = 5 * time.Second

// errSpawnerTimeout: the spawner did not answer within spawnerTimeout.
var errSpawnerTimeout = errors.New("the spawner did not answer in time")

// recv reads one message of the spawner's into buf, waiting at most
// spawnerTimeout. A signal does not end the wait (Go's runtime signals
// its threads all the time to preempt them): poll is made again for the
// time left. A socket timeout (SO_RCVTIMEO) would not do: a blocking
// call on such a socket is never restarted after a signal handler, so
// the wait would end in EINTR with the answer still to come.
func (s *spawner) recv(buf []byte) (int, error) {
	fd := int(s.sock.Fd())
	deadline := time.Now().Add(spawnerTimeout)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return 0, errSpawnerTimeout
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		ms := int((left + time.Millisecond - 1) / time.Millisecond)
		if _, err := unix.Poll(fds, ms); err != nil {
			if err == unix.EINTR {
				continue
			}
			return 0, os.NewSyscallError("poll", err)
		}
		if fds[0].Revents == 0 {
			continue // the deadline, checked above
		}
		n, _, _, _, err := unix.Recvmsg(fd, buf, nil, unix.MSG_DONTWAIT)
		switch err {
		case nil:
			return n, nil
		case unix.EINTR, unix.EAGAIN:
			continue
		}
		return 0, os.NewSyscallError("recvmsg", err)
	}
}

// maxSpawnerReply bounds an answer of the spawner: a 4-byte pid, or 0 and
// the error's text.
const maxSpawnerReply = 512

// start asks the spawner for a trampoline whose descriptors 3 and 4 are
// ctl and status, and returns it as a process of the host's.
func (s *spawner) start(hostNet bool, ctl, status *os.File) (*os.Process, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	req := []byte{0}
	if hostNet {
		req[0] = 1
	}
	oob := unix.UnixRights(int(ctl.Fd()), int(status.Fd()))
	if err := unix.Sendmsg(int(s.sock.Fd()), req, oob, nil, unix.MSG_NOSIGNAL); err != nil {
		return nil, os.NewSyscallError("sendmsg", err)
	}
	buf := make([]byte, maxSpawnerReply)
	n, err := s.recv(buf)
	switch {
	case err != nil:
		return nil, err
	case n < 4:
		return nil, errors.New("the spawner ended")
	}
	pid := int(int32(binary.LittleEndian.Uint32(buf)))
	if pid <= 0 {
		return nil, &cloneError{msg: string(buf[4:n])}
	}
	// The trampoline is the host's child (CLONE_PARENT) and cannot be
	// reaped by anyone else, so its pid names it until the host waits.
	return os.FindProcess(pid)
}

// cloneError is the spawner's word that its clone failed: the spawner
// itself is fine, and the host's own clone reports the cause.
type cloneError struct{ msg string }

func (e *cloneError) Error() string { return "the spawner could not clone: " + e.msg }

// runSpawner serves the host's requests until its socket ends.
func runSpawner() int {
	// Go's runtime would end the spawner on the signals a terminal sends
	// its group; it is in a group of its own, and the host's death
	// reaches it as SIGKILL or EOF.
	if _, err := unix.Write(fdSpawner, []byte{1}); err != nil {
		return 0
	}
	buf := make([]byte, 16)
	oob := make([]byte, unix.CmsgSpace(2*4))
	for {
		n, oobn, _, _, err := unix.Recvmsg(fdSpawner, buf, oob, unix.MSG_CMSG_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		if err != nil || n == 0 {
			return 0
		}
		files := rightsFiles(oob[:oobn], "fd")
		var proc *os.Process
		if len(files) == 2 {
			proc, err = startInit(buf[0] == 1, files[0], files[1], true)
		} else {
			err = fmt.Errorf("%d descriptors, want 2", len(files))
		}
		for _, f := range files {
			f.Close()
		}
		// The pid, or 0 and why not.
		var reply []byte
		if err != nil {
			reply = append(binary.LittleEndian.AppendUint32(nil, 0), err.Error()...)
			reply = reply[:min(len(reply), maxSpawnerReply)]
		} else {
			reply = binary.LittleEndian.AppendUint32(nil, uint32(proc.Pid))
			_ = proc.Release() // the host's child, not the spawner's
		}
		if _, err := unix.Write(fdSpawner, reply); err != nil {
			return 0
		}
	}
}
