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
	for _, p := range procStats() {
		if p.pgrp == pgid && p.state != 'Z' && p.state != 'X' {
			return true
		}
	}
	return false
}

// procStat is what /proc/PID/stat tells of a process.
type procStat struct {
	pid, ppid, pgrp int
	state           byte
}

// procStats reads the stat of every process; one that ends while they are
// read is left out.
func procStats() []procStat {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []procStat
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
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
		if len(f) < 3 {
			continue
		}
		ppid, _ := strconv.Atoi(string(f[1]))
		pgrp, _ := strconv.Atoi(string(f[2]))
		out = append(out, procStat{pid: pid, ppid: ppid, pgrp: pgrp, state: f[0][0]})
	}
	return out
}
