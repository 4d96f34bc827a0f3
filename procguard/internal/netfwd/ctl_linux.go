package netfwd

import (
	"fmt"
	"net"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// maxFDs is how many descriptors a read makes room for. One is the most any
// message may carry; room for a few more lets a reader see (and close) the
// extras instead of only learning they were cut off. Descriptors beyond
// the room are never installed: the kernel drops them and sets MSG_CTRUNC.
const maxFDs = 4

// aLongTimeAgo is a deadline in the past: setting it fails every pending
// and future read and write on the control socket at once.
var aLongTimeAgo = time.Unix(1, 0)

// ctl is one end of the control socket, duplicated from the caller's
// *os.File (which the caller keeps and closes).
type ctl struct {
	uc  *net.UnixConn
	buf []byte
	oob []byte
}

func openCtl(f *os.File) (*ctl, error) {
	if f == nil {
		return nil, fmt.Errorf("netfwd: no control socket")
	}
	typ, err := sockType(f)
	if err != nil {
		return nil, fmt.Errorf("netfwd: control socket: %w", err)
	}
	if typ != unix.SOCK_SEQPACKET {
		return nil, fmt.Errorf("netfwd: control socket %s is socket type %d, want SOCK_SEQPACKET", f.Name(), typ)
	}
	// A descriptor from exec.Cmd.ExtraFiles arrives without close-on-exec;
	// a command the namespace side starts must not inherit the session.
	if err := closeOnExec(f); err != nil {
		return nil, fmt.Errorf("netfwd: control socket: %w", err)
	}
	c, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("netfwd: control socket: %w", err)
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, fmt.Errorf("netfwd: control socket %s is a %T, want a unix socket", f.Name(), c)
	}
	return &ctl{
		uc:  uc,
		buf: make([]byte, maxMsg+1),
		oob: make([]byte, unix.CmsgSpace(4*maxFDs)),
	}, nil
}

func closeOnExec(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		_, serr = unix.FcntlInt(fd, unix.F_SETFD, unix.FD_CLOEXEC)
	}); err != nil {
		return err
	}
	if serr != nil {
		return os.NewSyscallError("fcntl F_SETFD", serr)
	}
	return nil
}

func sockType(f *os.File) (int, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return 0, err
	}
	var typ int
	var serr error
	if err := rc.Control(func(fd uintptr) {
		typ, serr = unix.GetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TYPE)
	}); err != nil {
		return 0, err
	}
	if serr != nil {
		return 0, os.NewSyscallError("getsockopt SO_TYPE", serr)
	}
	return typ, nil
}

// recv reads one message. One goroutine at a time may call it. fds are the
// descriptors that came along, now owned by the caller; when err is
// non-nil there are none (recv closed them).
func (c *ctl) recv() (m msg, fds []int, err error) {
	n, oobn, flags, _, err := c.uc.ReadMsgUnix(c.buf, c.oob)
	if err != nil {
		return msg{}, nil, err
	}
	fds, err = parseRights(c.oob[:oobn])
	if err == nil && flags&unix.MSG_CTRUNC != 0 {
		err = malformed("control data truncated (more than %d descriptors?)", maxFDs)
	}
	if err == nil && (flags&unix.MSG_TRUNC != 0 || n > maxMsg) {
		err = malformed("packet longer than %d bytes", maxMsg)
	}
	if err == nil {
		m, err = decode(c.buf[:n])
	}
	if err != nil {
		closeFDs(fds)
		return msg{}, nil, err
	}
	return m, fds, nil
}

// parseRights returns every descriptor in oob. Anything other than
// SCM_RIGHTS is malformed; the descriptors found are still returned so the
// caller can close them.
func parseRights(oob []byte) ([]int, error) {
	if len(oob) == 0 {
		return nil, nil
	}
	cmsgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, malformed("control data: %v", err)
	}
	var fds []int
	var bad error
	for _, cm := range cmsgs {
		if cm.Header.Level != unix.SOL_SOCKET || cm.Header.Type != unix.SCM_RIGHTS {
			bad = malformed("control message level %d type %d", cm.Header.Level, cm.Header.Type)
			continue
		}
		got, err := unix.ParseUnixRights(&cm)
		if err != nil {
			bad = malformed("SCM_RIGHTS: %v", err)
			continue
		}
		fds = append(fds, got...)
	}
	return fds, bad
}

func closeFDs(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}

// send writes one message, with fd as SCM_RIGHTS when fd >= 0. Sends are
// safe from many goroutines: each is one packet.
func (c *ctl) send(m msg, fd int) error {
	var oob []byte
	if fd >= 0 {
		oob = unix.UnixRights(fd)
	}
	b := m.encode(make([]byte, 0, maxMsg))
	n, _, err := c.uc.WriteMsgUnix(b, oob, nil)
	if err == nil && n != len(b) {
		err = fmt.Errorf("netfwd: short write on the control socket: %d of %d bytes", n, len(b))
	}
	return err
}

// abort fails every pending and future read and write.
func (c *ctl) abort() { c.uc.SetDeadline(aLongTimeAgo) }

func (c *ctl) close() { c.uc.Close() }
