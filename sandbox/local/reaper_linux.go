package local

import (
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

// Without bwrap, a command is started through a reaper: this same program,
// re-executed. The reaper is a child subreaper, so every process the command
// starts stays its descendant even after its parent dies or it leaves the
// process group (setsid). It receives SIGTERM when this process dies
// (Pdeathsig), when the command times out and when it is cancelled; then, and
// when the command's main process ends, it kills all its descendants, reaps
// them and exits. A process group kill alone would miss processes that left
// the group, and Pdeathsig alone would reach only the direct child.

// reaperEnv marks a process as a reaper. Its value is the pid of the process
// that started it, so a variable inherited by accident does nothing.
const reaperEnv = "HITCH_SANDBOX_REAPER"

// reaperExe is this program, as the kernel knows it: still valid if the file
// was replaced or removed since it started.
const reaperExe = "/proc/self/exe"

// reaperGrace bounds how long the reaper keeps killing and reaping
// descendants before it exits anyway.
const reaperGrace = 5 * time.Second

func init() {
	v, ok := os.LookupEnv(reaperEnv)
	if !ok || len(os.Args) < 3 {
		return
	}
	if v != strconv.Itoa(os.Getppid()) {
		// The starter is already gone, so nobody waits for the command.
		os.Exit(137)
	}
	os.Exit(reap(os.Args[1], os.Args[2:]))
}

// reaperUsable reports whether commands can run through the reaper.
func reaperUsable() bool {
	_, err := os.Stat(reaperExe)
	return err == nil
}

// reaperArgv wraps a command, whose program is path, in the reaper.
func reaperArgv(path string, args []string) []string {
	return append([]string{reaperExe, path}, args...)
}

// reap runs the program at path with args and returns its exit status, or
// 128+n for a signal, once no descendant is left.
func reap(path string, args []string) int {
	os.Unsetenv(reaperEnv)
	const prSetChildSubreaper = 36
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 {
		fmt.Fprintf(os.Stderr, "hitch: reaper: set child subreaper: %v\n", e)
		return 126
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
	pid, err := syscall.ForkExec(path, args, &syscall.ProcAttr{Env: os.Environ(), Files: []uintptr{0, 1, 2}})
	if err != nil {
		fmt.Fprintf(os.Stderr, "hitch: start %s: %v\n", args[0], err)
		return 127
	}

	// One goroutine does all the waiting: orphans are reparented here, and
	// a wait for any child must not steal the main one's status.
	mainDone := make(chan int, 1)
	allDone := make(chan struct{})
	go func() {
		defer close(allDone)
		for {
			var ws syscall.WaitStatus
			got, err := syscall.Wait4(-1, &ws, 0, nil)
			if err == syscall.EINTR {
				continue
			}
			if err != nil {
				return // ECHILD: nothing left
			}
			if got == pid {
				code := ws.ExitStatus()
				if ws.Signaled() {
					code = 128 + int(ws.Signal())
				}
				mainDone <- code
			}
		}
	}()

	var code int
	select {
	case code = <-mainDone:
	case sig := <-sigs:
		code = 128 + int(sig.(syscall.Signal))
	}
	deadline := time.Now().Add(reaperGrace)
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		killDescendants(os.Getpid())
		select {
		case <-allDone:
			return code
		case <-time.After(pause):
		}
		if time.Now().After(deadline) {
			return code
		}
	}
}

// killDescendants sends SIGKILL to every process below pid.
func killDescendants(pid int) {
	children := map[int][]int{}
	for _, p := range procStats() {
		children[p.ppid] = append(children[p.ppid], p.pid)
	}
	queue := children[pid]
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		_ = syscall.Kill(p, syscall.SIGKILL)
		queue = append(queue, children[p]...)
	}
}
