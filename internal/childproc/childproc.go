// Package childproc holds what a program that starts helper processes
// needs of them, without the testing package: the chaos harness is
// linked into the hitch binary, so what it shares with the tests lives
// here rather than in testproc.
package childproc

import "os/exec"

// DieWithParent arranges for cmd, not yet started, to be killed when the
// process that starts it dies, so a test binary or a chaos run that times
// out or is killed leaves no server, worker or child behind. Where the
// system offers no such arrangement it does nothing.
func DieWithParent(cmd *exec.Cmd) { dieWithParent(cmd) }
