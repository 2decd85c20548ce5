package mcp

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/hitch-dev/hitch/tool/mcp/internal/testserver"
)

func TestMain(m *testing.M) {
	testserver.Main() // serves over stdio when this binary is started as the test server
	goleak.VerifyTestMain(m)
}
