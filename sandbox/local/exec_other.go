//go:build !unix

package local

import (
	"context"
	"errors"
	"fmt"

	"github.com/hitch-dev/hitch/sandbox"
)

const execSupported = false

func findBwrap([]string, bool) (string, error) {
	return "", errors.New("bwrap does not run on this system")
}

func findBwrapIn(string, []string, bool) (string, error) {
	return "", errors.New("bwrap does not run on this system")
}

// SystemDirs is empty: there is no bwrap here.
func SystemDirs() []string { return nil }

// Exec is not available on this system.
func (s *Sandbox) Exec(context.Context, sandbox.Cmd) (sandbox.Result, error) {
	return sandbox.Result{}, fmt.Errorf("exec: %w", sandbox.Unsupported(sandbox.CapExec))
}

func reaperUsable() bool { return false }

func bwrapView([]string) []string { return nil }
