package mcp

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/hitch-dev/hitch/internal/mcptest"
)

func TestMain(m *testing.M) {
	mcptest.Main() // serves over stdio when this binary is started as the test server
	goleak.VerifyTestMain(m)
}
