//go:build !linux

package landlock

import "errors"

var errNotLinux = errors.New("landlock: Landlock is Linux-only")

// ABI reports that there is no Landlock outside Linux.
func ABI() (int, error) { return 0, errNotLinux }

// Start fails outside Linux; start is not called.
func Start(rs *Ruleset, start func() error) (Status, error) { return Status{}, errNotLinux }

// StartReused fails outside Linux; start is not called.
func StartReused(rs *Ruleset, start func() error) (Status, error) { return Status{}, errNotLinux }
