// Package testproc holds what tests that start hitch processes share.
package testproc

import "os/exec"

// DieWithParent arranges for cmd, not yet started, to be killed when the
// process that starts it dies, so a test binary that times out or is
// killed leaves no server, worker or child behind. Where the system
// offers no such arrangement it does nothing.
func DieWithParent(cmd *exec.Cmd) { dieWithParent(cmd) }
