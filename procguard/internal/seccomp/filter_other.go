//go:build !linux || !(amd64 || arm64)

package seccomp

import "errors"

// Install is supported on linux/amd64 and linux/arm64 only.
func Install(f Filter) (listener int, err error) {
	return -1, errors.ErrUnsupported
}
