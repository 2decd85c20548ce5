package childproc

import (
	"os/exec"
	"syscall"
)

// dieWithParent asks the kernel for SIGKILL when the parent goes. The
// signal follows the thread that forked, and Go's threads outlive the
// goroutines of a test, so it comes when the test binary exits.
func dieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
