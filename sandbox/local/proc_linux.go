package local

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
	"time"
)

// sysProcAttr puts a command in a session of its own, away from this
// process's terminal, and ends it if this process dies first: the reaper
// with SIGTERM, so that it takes the command's tree down, anything else
// with SIGKILL.
func sysProcAttr(reaper bool) *syscall.SysProcAttr {
	sig := syscall.SIGKILL
	if reaper {
		sig = syscall.SIGTERM
	}
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: sig}
}

// waitGone waits, up to grace, until no live process is left in the group:
// SIGKILL is delivered asynchronously, and a caller told that a command has
// ended must be able to rely on it. Zombies count as gone; their parent may
// be an init that reaps late.
func waitGone(pgid int, grace time.Duration) {
	deadline := time.Now().Add(grace)
	pause := time.Millisecond
	for groupAlive(pgid) && time.Now().Before(deadline) {
		killGroup(pgid)
		time.Sleep(pause)
		pause = min(2*pause, 50*time.Millisecond)
	}
}

func groupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); err == syscall.ESRCH {
		return false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// Fields after the command name, which may hold spaces and parens:
		// state ppid pgrp ...
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(stat[i+1:])
		if len(f) < 3 || f[0][0] == 'Z' || f[0][0] == 'X' {
			continue
		}
		if g, _ := strconv.Atoi(string(f[2])); g == pgid {
			return true
		}
	}
	return false
}
