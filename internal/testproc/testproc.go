// Package testproc holds what tests that start hitch processes share.
package testproc

import (
	"os/exec"
	"testing"

	"github.com/hitch-dev/hitch/internal/childproc"
)

// DieWithParent is childproc.DieWithParent, named here so that tests
// reach every process helper through one package.
func DieWithParent(cmd *exec.Cmd) { childproc.DieWithParent(cmd) }

// Heavy marks a test that builds the binary or drives real processes:
// with -short it is skipped, saying why; otherwise it runs in parallel
// with the others.
func Heavy(t *testing.T, why string) {
	t.Helper()
	if testing.Short() {
		t.Skip(why)
	}
	t.Parallel()
}
