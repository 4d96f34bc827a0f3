//go:build amd64 || arm64

package seccomp

import (
	"bytes"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// task reads what one notification needs from the calling task: its
// memory with process_vm_readv(2) (as the kernel reads a name: a page the
// task cannot read is EFAULT) and its cwd, root and fds through the
// /proc links. Methods return the errno the call fails with when they
// cannot answer (0 when they can). Nothing a task yields is trusted before
// the notification id is checked valid again afterwards.
type task struct {
	proc string // "/proc/<tid>/"
	tid  int
	buf  []byte      // scratch of pathMax bytes for memory
	lbuf []byte      // scratch of pathMax bytes for readlink, kept across calls
	caps *threadCaps // the serving thread's, raised to open the task's /proc entries
	// blk holds the block of memory an exec's argument strings were read
	// from last (blkLen bytes at blkAddr), for the strings after it.
	blk     []byte
	blkAddr uint64
	blkLen  int
	// fixedRoot: every task has the same root (Handler.FixedRoot), held
	// open in root (-1 until the first call that needs it).
	fixedRoot bool
	root      int
	// status holds the tasks' /proc/<tid>/status open, by tid, and sbuf
	// is where they are read (taskUmask).
	status map[int]int
	sbuf   [4096]byte
}

// sharedRoot is the root every task has under Handler.FixedRoot, opened
// from the first task that needs it and held by the server.
func (t *task) sharedRoot() (int, unix.Errno) {
	if t.root < 0 {
		fd, err := t.openProc("root", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC)
		if err != nil {
			return -1, unix.EACCES
		}
		t.root = fd
	}
	return t.root, 0
}

// close closes what the task state holds across calls: the shared root
// and the status files.
func (t *task) close() {
	if t.fixedRoot && t.root >= 0 {
		unix.Close(t.root)
		t.root = -1
	}
	t.closeStatus()
}

func (t *task) closeStatus() {
	for _, fd := range t.status {
		unix.Close(fd)
	}
	clear(t.status)
}

func (t *task) reset(tid uint32) {
	t.proc = "/proc/" + strconv.FormatUint(uint64(tid), 10) + "/"
	t.tid = int(tid)
	t.blkLen = 0
	if t.buf == nil {
		t.buf = make([]byte, pathMax)
	}
}

// read reads len(p) bytes at addr, or fewer up to the first page the task
// cannot read.
func (t *task) read(p []byte, addr uint64) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	t.caps.set(true)
	local := []unix.Iovec{{Base: &p[0]}}
	local[0].SetLen(len(p))
	remote := []unix.RemoteIovec{{Base: uintptr(addr), Len: len(p)}}
	return unix.ProcessVMReadv(t.tid, local, remote, 0)
}

// str reads the NUL-terminated string at addr, as the kernel's getname
// would: at most pathMax bytes with the NUL, else ENAMETOOLONG. Reads stop
// at page ends, so a name that ends just before an unmapped page reads
// fine; an unreadable byte before the NUL is EFAULT.
func (t *task) str(addr uint64) (string, unix.Errno) {
	page := uint64(os.Getpagesize())
	got := 0
	for got < pathMax {
		n := min(int(page-addr%page), pathMax-got)
		r, err := t.read(t.buf[got:got+n], addr)
		if err != nil || r <= 0 {
			return "", unix.EFAULT
		}
		if i := bytes.IndexByte(t.buf[got:got+r], 0); i >= 0 {
			return string(t.buf[:got+i]), 0
		}
		got += r
		addr += uint64(r)
	}
	return "", unix.ENAMETOOLONG
}

// bytes reads exactly n (at most pathMax) bytes at addr.
func (t *task) bytes(addr uint64, n int) ([]byte, unix.Errno) {
	r, err := t.read(t.buf[:n], addr)
	if err != nil || r != n {
		return nil, unix.EFAULT
	}
	return t.buf[:n], 0
}

// openProc opens the task's /proc/<tid>/rel with CAP_SYS_PTRACE raised:
// the task's own entries, which the supervisor may read whatever the
// task's dumpable flag says.
func (t *task) openProc(rel string, flags int) (int, error) {
	t.caps.set(true)
	return unix.Open(t.proc+rel, flags, 0)
}
