//go:build !linux || !(amd64 || arm64)

package seccomp

import (
	"errors"
	"syscall"
)

// Serve is supported on linux/amd64 and linux/arm64 only. (syscall.Errno
// is what golang.org/x/sys/unix.Errno aliases.)
func Serve(listener int, stop <-chan struct{}, decide func(*Call) syscall.Errno) error {
	return errors.ErrUnsupported
}

// ServeConfined is supported on linux/amd64 and linux/arm64 only.
func ServeConfined(listener int, stop <-chan struct{}, decide func(*Call) syscall.Errno, confine func() error) error {
	return errors.ErrUnsupported
}
