package engine

import (
	"testing"

	"go.uber.org/goleak"
)

// Runners, heartbeats, tool bodies and the sweeper are goroutines: every
// test must leave none behind.
func TestMain(m *testing.M) {
	checkValues = true // every value the runner folds is checked against its encoding
	goleak.VerifyTestMain(m)
}
