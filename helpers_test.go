package hitch_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/hitchtest"
	"github.com/hitch-dev/hitch/internal/testproc"
	"github.com/hitch-dev/hitch/store/sqlite"
)

// aheadBy is a store clock d ahead of the real one: a process on it finds
// the leases a killed process held already expired.
func aheadBy(d time.Duration) func() time.Time {
	return func() time.Time { return time.Now().Add(d) }
}

// reopenAhead opens db, left by a killed process, on a store clock ahead
// of the leases it held, and a runtime for agents on it.
func reopenAhead(t testing.TB, db string, ahead time.Duration, agents ...*hitch.Agent) (*hitch.Runtime, *sqlite.Store) {
	t.Helper()
	st := hitchtest.OpenStore(t, db, sqlite.WithClock(aheadBy(ahead)))
	return hitchtest.Open(t, hitch.Config{Store: st, Agents: agents}), st
}

// recoverAhead reopens db, left by a killed process, a minute past its
// lease, recovers the one run it left and waits for run id to complete.
func recoverAhead(t testing.TB, ctx context.Context, db, id string, a *hitch.Agent) (*hitch.Runtime, *sqlite.Store, hitch.Run) {
	t.Helper()
	rt, st := reopenAhead(t, db, time.Minute, a)
	if n, err := rt.Recover(ctx); n != 1 || err != nil {
		t.Fatalf("recovered %d runs: %v, want 1", n, err)
	}
	run, err := rt.Await(ctx, id)
	if err != nil || run.Status != hitchtype.StatusCompleted {
		t.Fatalf("recovered run: %+v %v", run, err)
	}
	return rt, st, run
}

// The crash tests run this test binary again as a child process (a mode
// TestMain dispatches on), which runs real runs until it is killed.

// childFail tells why a child process gives up and returns its exit code.
func childFail(why ...any) int {
	fmt.Fprintln(os.Stderr, why...)
	return 1
}

// childOpen opens db and a runtime with cfg on it, in a child process.
func childOpen(ctx context.Context, db string, cfg hitch.Config) (*hitch.Runtime, error) {
	st, err := sqlite.Open(ctx, db)
	if err != nil {
		return nil, err
	}
	cfg.Store = st
	return hitch.Open(cfg)
}

// childStart opens db in a child process, starts one run of a (the only
// agent unless cfg names others), and blocks until the process is killed.
func childStart(ctx context.Context, db string, cfg hitch.Config, a *hitch.Agent, input string, opts ...hitch.StartOption) int {
	if cfg.Agents == nil {
		cfg.Agents = []*hitch.Agent{a}
	}
	rt, err := childOpen(ctx, db, cfg)
	if err != nil {
		return childFail(err)
	}
	if _, err := rt.Start(ctx, a, input, opts...); err != nil {
		return childFail(err)
	}
	select {}
}

// startChild starts this test binary as a child process with env added
// (and stdin, if not nil), and returns it and the lines it prints.
func startChild(t *testing.T, stdin *os.File, env ...string) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	testproc.DieWithParent(cmd)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	if stdin != nil {
		cmd.Stdin = stdin
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		for range lines { // until the reader above ends
		}
	})
	return cmd, lines
}

// awaitLine reads lines until one satisfies match n times, and returns
// the last; it kills the child if that takes over 20 seconds.
func awaitLine(t *testing.T, cmd *exec.Cmd, lines <-chan string, what string, n int, match func(string) bool) string {
	t.Helper()
	timeout := time.NewTimer(20 * time.Second)
	defer timeout.Stop()
	for seen := 0; ; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the child exited before %s (%d of %d seen)", what, seen, n)
			}
			if match(l) {
				if seen++; seen == n {
					return l
				}
			}
		case <-timeout.C:
			_ = cmd.Process.Kill()
			t.Fatalf("the child never reached %s", what)
		}
	}
}

// killChild SIGKILLs the child and reaps it.
func killChild(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
}
