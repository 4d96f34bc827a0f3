//go:build race

package isolate_test

// raceEnabled: under the race detector each start of the test binary (the
// sandbox's init and the child) takes about a second, so tests that start
// many children start fewer.
const raceEnabled = true
