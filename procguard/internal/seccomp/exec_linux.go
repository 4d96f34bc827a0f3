//go:build amd64 || arm64

package seccomp

import (
	"bytes"
	"encoding/binary"
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The limits execve(2) puts on what it copies (fs/exec.c): one string of
// at most MAX_ARG_STRLEN bytes, all of them within a quarter of the stack
// limit and never more than 3/4 of _STK_LIM (6 MiB). Past them the kernel
// fails with E2BIG, and so does the supervisor, without asking decide.
const (
	maxArgStrlen = 32 * 4096
	maxArgTotal  = 6 << 20
	// maxInterpDepth is how many "#!" levels the kernel follows before
	// ELOOP (fs/exec.c, exec_binprm: 5 rewrites).
	maxInterpDepth = 4
	// binprmBufSize is BINPRM_BUF_SIZE: the bytes of a file the kernel
	// reads to tell its format, so the longest "#!" line it sees.
	binprmBufSize = 256
)

// exec reads an execve or execveat's argv and envp, once, and finds what
// the kernel will run: the program (r.targets[0], already resolved), the
// "#!" interpreters of a script, and the program the dynamic loader maps
// when it is run as a program.
func (t *task) exec(r *request, name string) unix.Errno {
	a := &r.args
	at := r.s.paths[0].name
	budget := maxArgTotal
	argv, e := t.strArray(a[at+1], &budget)
	if e != 0 {
		return e
	}
	env, e := t.strArray(a[at+2], &budget)
	if e != 0 {
		return e
	}
	if len(argv) == 0 {
		argv = []string{""} // Linux 5.18: an empty argv gets "" as argv[0]
	}
	x := &Exec{Argv: argv, Env: env, Filename: name}
	if r.s.name == "execveat" {
		// alloc_bprm: how the kernel names a program reached from a
		// descriptor (what a script's interpreter gets as its file).
		dirfd := int32(uint32(a[0]))
		switch {
		case name == "":
			x.Filename = "/dev/fd/" + strconv.Itoa(int(dirfd))
		case name[0] != '/' && dirfd != unix.AT_FDCWD:
			x.Filename = "/dev/fd/" + strconv.Itoa(int(dirfd)) + "/" + name
		}
	}
	if n, err := unix.Readlink(t.proc+"cwd", t.buf); err == nil && n < len(t.buf) {
		x.Dir = string(t.buf[:n])
	}
	r.call.Exec = x

	prog := &r.targets[0]
	switch {
	case prog.mode == 0:
		return unix.ENOENT
	case prog.mode == unix.S_IFLNK:
		return unix.ELOOP // execveat with AT_SYMLINK_NOFOLLOW
	case prog.mode != unix.S_IFREG:
		return unix.EACCES
	case prog.path == "":
		// An anonymous file (a memfd, an O_TMPFILE) or a deleted one,
		// reached through a descriptor: it has no name a rule could
		// allow, and nothing but the descriptor can reach it again.
		return unix.EACCES
	}
	head, e := readHead(prog)
	if e != 0 {
		return e
	}
	for len(x.Interp) <= maxInterpDepth {
		iname, iarg, ok := shebang(head)
		if !ok {
			break
		}
		if len(x.Interp) == maxInterpDepth {
			return unix.ELOOP
		}
		tg, e := r.hold(iname)
		if e != 0 {
			return e
		}
		if tg.mode == 0 {
			return unix.ENOENT
		}
		if tg.mode != unix.S_IFREG || tg.path == "" {
			return unix.EACCES
		}
		x.Interp = append(x.Interp, Interp{Name: iname, Arg: iarg, Path: Path{Name: tg.path, Mode: tg.mode, Dev: tg.dev, Ino: tg.ino}})
		if head, e = readHead(tg); e != 0 {
			return e
		}
	}
	final := x.Final(r.call.Paths[0])
	if isLoader(final.Name) {
		return t.loaded(r, x)
	}
	return 0
}

// loaded finds the program the dynamic loader maps when it is run as a
// program: "ld.so [OPTIONS] PROGRAM [ARGS]" (ld.so(8)). PROGRAM is opened
// by the loader as named, relative to the working directory; a name
// without a slash is searched in the library directories, so it is left
// unnamed (decide refuses it).
func (t *task) loaded(r *request, x *Exec) unix.Errno {
	argv := x.KernelArgv()
	l := &Loaded{}
	argv0 := ""
	i := 1
	for ; i < len(argv); i++ {
		opt := argv[i]
		if !strings.HasPrefix(opt, "--") {
			break
		}
		switch opt {
		case "--":
			i++
		case "--library-path", "--inhibit-rpath", "--audit", "--preload", "--glibc-hwcaps-prepend", "--glibc-hwcaps-mask":
			l.Options = append(l.Options, opt)
			i++
			continue
		case "--argv0":
			if i+1 < len(argv) {
				argv0 = argv[i+1]
			}
			i++
			continue
		default:
			continue // --list, --verify, --inhibit-cache, --help...: no program, or none changed
		}
		break
	}
	if i >= len(argv) {
		return 0 // no program: the loader is judged as itself
	}
	x.Loaded = l
	prog := argv[i]
	l.Argv = append([]string{prog}, argv[i+1:]...)
	if argv0 != "" {
		l.Argv[0] = argv0
	}
	if !strings.ContainsRune(prog, '/') {
		return 0 // searched like a library: Path stays unnamed
	}
	tg, e := r.hold(prog)
	if e != 0 {
		return e
	}
	l.Path = Path{Name: tg.path, Mode: tg.mode, Dev: tg.dev, Ino: tg.ino}
	return 0
}

// hold resolves a name the kernel or the loader opens for the task (an
// interpreter, the loader's program): absolute from the task's root, else
// from its cwd, every link followed. The target is kept in r.targets, so
// it is closed with the request.
func (r *request) hold(name string) (*target, unix.Errno) {
	tg, e := r.w.resolve(unix.AT_FDCWD, name, true, scope{})
	if e != 0 {
		return nil, e
	}
	r.targets = append(r.targets, tg)
	return &r.targets[len(r.targets)-1], 0
}

// isLoader reports whether name is a dynamic loader (glibc's or musl's,
// every architecture Debian ships): run as a program, each maps the
// program its first argument names.
func isLoader(name string) bool {
	base := path.Base(name)
	return strings.HasPrefix(base, "ld-linux") && strings.Contains(base, ".so") ||
		strings.HasPrefix(base, "ld-musl-") ||
		base == "ld.so" || strings.HasPrefix(base, "ld64.so")
}

// readHead reads the first bytes of the file a target names, as the
// kernel does to tell a script from a binary. A file the supervisor may
// not read (mode --x) is no script: the kernel needs to read a script's
// interpreter line too, but the interpreter would then fail to read it.
func readHead(tg *target) ([]byte, unix.Errno) {
	var fd int
	var err error
	if tg.obj >= 0 {
		fd, err = unix.Open("/proc/self/fd/"+strconv.Itoa(tg.obj), unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	} else {
		fd, err = unix.Openat(tg.dir, tg.name, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	}
	if err != nil {
		if err == unix.EACCES {
			return nil, 0
		}
		return nil, errnoOf(err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Dev != tg.dev || st.Ino != tg.ino {
		return nil, unix.EAGAIN // another file was moved in since the walk
	}
	buf := make([]byte, binprmBufSize)
	n, err := unix.Pread(fd, buf, 0)
	if err != nil {
		return nil, errnoOf(err)
	}
	return buf[:n], 0
}

// shebang parses a "#!" line as binfmt_script does (Linux 5.1 and later):
// the interpreter's name up to the first blank, then one optional
// argument, the rest of the line with its outer blanks removed. A line
// longer than the buffer whose name does not end inside it is no script
// to the kernel (ENOEXEC), and not one here.
func shebang(head []byte) (name, arg string, ok bool) {
	if !bytes.HasPrefix(head, []byte("#!")) {
		return "", "", false
	}
	line := head[2:]
	complete := false
	if i := bytes.IndexByte(line, '\n'); i >= 0 {
		line, complete = line[:i], true
	}
	if i := bytes.IndexByte(line, 0); i >= 0 {
		line, complete = line[:i], true
	}
	blank := func(c byte) bool { return c == ' ' || c == '\t' }
	line = bytes.TrimLeftFunc(line, func(r rune) bool { return r == ' ' || r == '\t' })
	end := bytes.IndexFunc(line, func(r rune) bool { return r == ' ' || r == '\t' })
	if end < 0 {
		if !complete {
			return "", "", false
		}
		end = len(line)
	}
	name = string(line[:end])
	if name == "" {
		return "", "", false
	}
	rest := line[end:]
	for len(rest) > 0 && blank(rest[0]) {
		rest = rest[1:]
	}
	for len(rest) > 0 && blank(rest[len(rest)-1]) {
		rest = rest[:len(rest)-1]
	}
	return name, string(rest), true
}

// strArray reads a NULL-terminated array of string pointers (argv, envp)
// and the strings, charging their size with the terminating NULs to
// budget. A NULL array is empty, as the kernel takes it.
func (t *task) strArray(addr uint64, budget *int) ([]string, unix.Errno) {
	if addr == 0 {
		return nil, 0
	}
	var out []string
	var ptrs [64]byte
	for {
		n, err := t.read(ptrs[:], addr)
		if err != nil || n < 8 {
			return nil, unix.EFAULT
		}
		for off := 0; off+8 <= n; off += 8 {
			p := binary.NativeEndian.Uint64(ptrs[off:])
			if p == 0 {
				return out, 0
			}
			s, e := t.arg(p)
			if e != 0 {
				return nil, e
			}
			*budget -= len(s) + 1 + 8
			if *budget < 0 {
				return nil, unix.E2BIG
			}
			out = append(out, s)
		}
		addr += uint64(n - n%8)
	}
}

// arg reads one NUL-terminated argument string, of at most maxArgStrlen
// bytes with its NUL (E2BIG past it). Strings usually sit next to each
// other, so one read of a block often holds several: the block is kept
// for the next string.
func (t *task) arg(addr uint64) (string, unix.Errno) {
	if s, ok := t.fromBlock(addr); ok {
		return s, 0
	}
	var long []byte
	for {
		if t.blk == nil {
			t.blk = make([]byte, 16<<10)
		}
		n, err := t.read(t.blk, addr)
		if err != nil || n <= 0 {
			t.blkLen = 0
			return "", unix.EFAULT
		}
		t.blkAddr, t.blkLen = addr, n
		if i := bytes.IndexByte(t.blk[:n], 0); i >= 0 {
			if long == nil {
				return string(t.blk[:i]), 0
			}
			long = append(long, t.blk[:i]...)
			break
		}
		long = append(long, t.blk[:n]...)
		if len(long) >= maxArgStrlen {
			return "", unix.E2BIG
		}
		addr += uint64(n)
	}
	if len(long)+1 > maxArgStrlen {
		return "", unix.E2BIG
	}
	return string(long), 0
}

// fromBlock finds the string at addr in the block read last, if the
// block holds it whole.
func (t *task) fromBlock(addr uint64) (string, bool) {
	if t.blkLen == 0 || addr < t.blkAddr || addr >= t.blkAddr+uint64(t.blkLen) {
		return "", false
	}
	b := t.blk[addr-t.blkAddr : t.blkLen]
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return "", false
	}
	return string(b[:i]), true
}
