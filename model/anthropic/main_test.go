package anthropic_test

import (
	"testing"

	"go.uber.org/goleak"
)

// Streams that end early, by cancellation, a cut or a consumer that stops
// reading, must not leave readers behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
