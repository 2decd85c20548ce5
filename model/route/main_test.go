package route_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Attempts cut short by a member's timeout must not leave readers behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
