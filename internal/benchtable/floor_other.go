//go:build !linux

package main

// statFloor is the Stat row's floor side (floor_linux.go), Linux only.
func statFloor(*env, string) *side {
	return &side{name: "floor", skip: "the floor is measured with openat2, a Linux call"}
}
