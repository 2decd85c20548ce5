// Package testproc holds what tests that start hitch processes share.
package testproc

import (
	"os/exec"

	"github.com/hitch-dev/hitch/internal/childproc"
)

// DieWithParent is childproc.DieWithParent, named here so that tests
// reach every process helper through one package.
func DieWithParent(cmd *exec.Cmd) { childproc.DieWithParent(cmd) }
