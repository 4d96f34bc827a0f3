package procguard

import (
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// conn returns the host end of a new proxied connection: one end of a
// socket pair goes into the sandbox (netfwd passes its descriptor), the
// other is served by the proxy until either side closes or the command
// ends.
func (e *egress) conn() (net.Conn, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socketpair", err)
	}
	serve, err := fileConn(fds[0], "egress-proxy")
	if err != nil {
		unix.Close(fds[1])
		return nil, err
	}
	child, err := fileConn(fds[1], "egress-child")
	if err != nil {
		serve.Close()
		return nil, err
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		_ = e.proxy.ServeConn(e.ctx, serve)
	}()
	return child, nil
}

// fileConn wraps fd in a net.Conn and closes fd (FileConn dups it).
func fileConn(fd int, name string) (net.Conn, error) {
	f := os.NewFile(uintptr(fd), name)
	defer f.Close()
	return net.FileConn(f)
}
