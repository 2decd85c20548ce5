//go:build !race

package hitch_test

const raceEnabled = false
