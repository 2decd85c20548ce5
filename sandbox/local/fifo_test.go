//go:build unix

package local_test

import (
	"context"
	"errors"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/hitch-dev/hitch/sandbox"
	"github.com/hitch-dev/hitch/sandbox/local"
)

// A FIFO would block a reader forever; it is refused instead.
func TestOpenRefusesFIFO(t *testing.T) {
	t.Parallel()
	sb := open(t, local.Config{DisableExec: true})
	if err := syscall.Mkfifo(filepath.Join(sb.Root(), "pipe"), 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if _, err := sb.ReadFile(context.Background(), "pipe"); !errors.Is(err, sandbox.ErrInvalidPath) {
		t.Fatalf("read of a FIFO: %v", err)
	}
}
