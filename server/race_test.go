//go:build race

package server_test

// raceEnabled builds the hitch command under test with the race detector
// when the tests run with it.
const raceEnabled = true
