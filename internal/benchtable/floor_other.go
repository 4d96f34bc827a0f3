//go:build !linux

package main

import "os"

// statFloor is the Stat row's floor side (floor_linux.go), Linux only.
func statFloor(*env, string) *side {
	return &side{name: sideFloor, skip: "the floor is measured with openat2, a Linux call"}
}

// rawLstat is the decision row's base side (floor_linux.go); here it is
// os.Lstat, which also makes an os.FileInfo.
func rawLstat(name string) *side {
	return &side{
		name: sideLstat,
		op:   func(int) error { _, err := os.Lstat(name); return err },
		note: "os.Lstat(" + name + ")",
	}
}
