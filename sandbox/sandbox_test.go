package sandbox_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/hitch-dev/hitch/sandbox"
)

func TestCapabilitiesHas(t *testing.T) {
	t.Parallel()
	c := sandbox.Capabilities{Exec: true, Write: true}
	for name, want := range map[string]bool{
		sandbox.CapExec: true, sandbox.CapWrite: true, sandbox.CapRead: false,
		sandbox.CapNetwork: false, sandbox.CapSnapshot: false, "teleport": false,
	} {
		if got := c.Has(name); got != want {
			t.Errorf("Has(%q) = %v, want %v", name, got, want)
		}
	}
	err := sandbox.Unsupported(sandbox.CapSnapshot)
	if !errors.Is(err, sandbox.ErrUnsupported) || !strings.Contains(err.Error(), `"snapshot"`) {
		t.Errorf("Unsupported = %v", err)
	}
}
