package childproc_test

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/internal/childproc"
)

// TestChildDiesWithParent starts a middle process that starts a sleeping
// grandchild with DieWithParent and then exits; the grandchild must be
// gone once the middle process is.
func TestChildDiesWithParent(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("DieWithParent acts on Linux only")
	}
	if os.Getenv("CHILDPROC_MIDDLE") == "1" {
		child := exec.Command("sleep", "60")
		childproc.DieWithParent(child)
		if err := child.Start(); err != nil {
			os.Exit(3)
		}
		os.Stdout.WriteString(strconv.Itoa(child.Process.Pid) + "\n")
		os.Exit(0)
	}
	middle := exec.Command(os.Args[0], "-test.run=^TestChildDiesWithParent$")
	middle.Env = append(os.Environ(), "CHILDPROC_MIDDLE=1")
	out, err := middle.Output()
	if err != nil {
		t.Fatalf("middle process: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0]))
	if err != nil {
		t.Fatalf("middle process said %q", out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := syscall.Kill(pid, 0)
		if errors.Is(err, syscall.ESRCH) || zombie(pid) {
			return
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the grandchild %d outlived its parent by 10 s", pid)
		}
		time.Sleep(10 * time.Millisecond) // polling another process's end; nothing to wait on
	}
}

// zombie reports whether pid has exited and waits for its reaper.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	return len(f) > 0 && f[0] == "Z"
}
