//go:build unix && !linux

package local

import (
	"syscall"
	"time"
)

func sysProcAttr(bool) *syscall.SysProcAttr { return &syscall.SysProcAttr{Setsid: true} }

// There is no reaper here: commands are bounded by their process group.
const reaperEnv = ""

func reaperUsable() bool { return false }

func reaperArgv(string, []string) []string { panic("local: no reaper on this system") }

// waitGone waits, up to grace, until the group no longer exists.
func waitGone(pgid int, grace time.Duration) {
	deadline := time.Now().Add(grace)
	pause := time.Millisecond
	for syscall.Kill(-pgid, 0) != syscall.ESRCH && time.Now().Before(deadline) {
		killGroup(pgid)
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Millisecond)
	}
}
