package hitch_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/hitchtest"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/tool"
)

// The drain test stops a worker process with SIGTERM while its tool bodies
// run: the bodies finish, their results are journaled, and the leases are
// given back, so a second process resumes every run at once — with a lease
// TTL far longer than the test may take.

const (
	drainRuns     = 4
	drainLeaseTTL = 10 * time.Minute
)

// drainAgent calls one non-replayable tool whose body records itself in
// effects and then holds until release is closed (or its context ends),
// then answers.
func drainAgent(effects string, release <-chan struct{}, marker func(string)) (*hitch.Agent, error) {
	effect, err := tool.New("effect", "Acts once, slowly.", func(ctx context.Context, _ struct{}) (string, error) {
		info, _ := tool.CallFrom(ctx)
		f, err := os.OpenFile(effects, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(f, "%s %s\n", info.RunID, info.Call)
		f.Close()
		marker("IN_BODY")
		select {
		case <-release:
			return "effect ok", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
	if err != nil {
		return nil, err
	}
	m := scripted.New("drain", scripted.Script{Turns: []scripted.Turn{
		{Calls: []scripted.Call{{Name: "effect", Args: `{}`}}},
		{Text: "done"},
	}})
	return hitch.Build(hitch.Spec{Name: "drain", Model: m, Tools: []tool.Tool{effect}, Policy: policy.AllowAll()})
}

// drainChild is a worker: it starts the runs, sweeps until SIGTERM, then
// closes the runtime with the default drain window. Tool bodies hold until
// its stdin is closed.
func drainChild(db, effects string) int {
	sigCtx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	release := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(release)
	}()
	var mu sync.Mutex
	marker := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Println(s)
	}
	a, err := drainAgent(effects, release, marker)
	if err != nil {
		return childFail(err)
	}
	rt, err := childOpen(context.Background(), db, hitch.Config{Agents: []*hitch.Agent{a}, LeaseTTL: drainLeaseTTL})
	if err != nil {
		return childFail(err)
	}
	for i := range drainRuns {
		if _, err := rt.Start(context.Background(), a, "go", hitch.WithID(fmt.Sprintf("drain-%d", i)), hitch.Detached()); err != nil {
			return childFail(err)
		}
	}
	if err := rt.Sweep(sigCtx, 10*time.Millisecond); err != nil {
		return childFail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hitch.DefaultDrainWindow)
	defer cancel()
	closed := make(chan error, 1)
	go func() { closed <- rt.Close(ctx) }()
	<-hitch.Closing(rt)
	marker("DRAINING")
	if err := <-closed; err != nil {
		return childFail(err)
	}
	return 0
}

func TestGracefulStopDrainsAndReleases(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	t.Parallel()
	dir := t.TempDir()
	db, effects := filepath.Join(dir, "drain.db"), filepath.Join(dir, "effects.log")
	stdin, release, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	cmd, lines := startChild(t, stdin, "HITCH_CRASH_MODE=drain", "HITCH_CRASH_DB="+db, "HITCH_CRASH_EFFECTS="+effects)
	waitFor := func(marker string, n int) {
		t.Helper()
		awaitLine(t, cmd, lines, marker, n, func(l string) bool { return l == marker })
	}
	waitFor("IN_BODY", drainRuns)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitFor("DRAINING", 1)
	// The bodies finish only now, inside the drain window.
	release.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the worker did not stop cleanly: %v", err)
	}

	// A second process resumes every run at once: waiting for the leases
	// (10 minutes) would outlast the test.
	a, err := drainAgent(effects, nil, func(string) { t.Error("a body ran again after the drain") })
	if err != nil {
		t.Fatal(err)
	}
	st := hitchtest.OpenStore(t, db)
	rt := hitchtest.Open(t, hitch.Config{Store: st, Agents: []*hitch.Agent{a}, LeaseTTL: drainLeaseTTL})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n, err := rt.RecoverAll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != drainRuns {
		for i := range drainRuns {
			id := fmt.Sprintf("drain-%d", i)
			r, _ := st.RunGet(ctx, id)
			t.Logf("%s: %s %s %s %s", id, r.Status, r.LeaseOwner, r.LeaseExpires, kinds(journal(t, rt, id)))
		}
		t.Fatalf("the second process claimed %d runs at once, want %d", n, drainRuns)
	}
	uncertain := 0
	for i := range drainRuns {
		id := fmt.Sprintf("drain-%d", i)
		run, err := rt.Await(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		es := journal(t, rt, id)
		uncertain += strings.Count(kinds(es), "call.uncertain")
		if run.Status != hitchtype.StatusCompleted || run.Outcome.Answer != "done" {
			t.Errorf("%s: %s %+v; journal %s", id, run.Status, run.Outcome, kinds(es))
		}
	}
	if uncertain != 0 {
		t.Errorf("%d uncertain calls after a graceful stop, want 0", uncertain)
	}
	b, err := os.ReadFile(effects)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(b), "\n"); got != drainRuns {
		t.Errorf("%d bodies ran, want %d:\n%s", got, drainRuns, b)
	}
}
