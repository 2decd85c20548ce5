//go:build race

package hitch_test

// raceEnabled: the race detector slows processes several times, so the
// chaos tests do less.
const raceEnabled = true
