package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/store"
)

// slowPrepare holds a runner's first read of a run's journal until the
// run's lease has been renewed, or until hold has passed: the read of a
// long journal on a busy node, which must not outlast the lease.
type slowPrepare struct {
	store.Store
	runID string
	hold  time.Duration

	once    sync.Once
	renewed chan struct{}
	mu      sync.Mutex
	held    bool // the read waited out hold with no renewal
}

func (s *slowPrepare) JournalRead(ctx context.Context, p store.JournalReadParams) ([]store.Entry, error) {
	if p.RunID == s.runID && p.After == 0 {
		select {
		case <-s.renewed:
		case <-time.After(s.hold):
			s.mu.Lock()
			s.held = true
			s.mu.Unlock()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return s.Store.JournalRead(ctx, p)
}

func (s *slowPrepare) LeaseRenewMany(ctx context.Context, p store.LeaseRenewManyParams) ([]store.LeaseRenewal, error) {
	got, err := s.Store.LeaseRenewMany(ctx, p)
	for _, r := range got {
		if r.Renewed && r.RunID == s.runID {
			s.once.Do(func() { close(s.renewed) })
		}
	}
	return got, err
}

// TestLeaseRenewedWhileRunnerPrepares: a runner renews its lease from the
// claim on, while it reads the journal, folds it and opens the workspace,
// not only once it is ready to step. Otherwise a slow start lets the lease
// lapse, the run is claimed again, and each lost runner spends one of a
// replayable call's attempts until the call is uncertain.
func TestLeaseRenewedWhileRunnerPrepares(t *testing.T) {
	ctx := context.Background()
	base, _ := openClock(t)
	st := &slowPrepare{Store: base, runID: "r1", hold: 5 * time.Second, renewed: make(chan struct{})}
	a := testAgent(scripted.New("m", scripted.Script{Turns: []scripted.Turn{{Text: "done"}}}))
	e := testEngine(st, "node-a", a, time.Minute, 5*time.Millisecond)
	defer e.Close(ctx)
	if _, err := e.Start(ctx, a, StartParams{ID: "r1", Input: "hi", Detached: true}); err != nil {
		t.Fatal(err)
	}
	if err := e.Drive(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	run, err := e.Await(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != hitchtype.StatusCompleted {
		t.Fatalf("status %s", run.Status)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.held {
		t.Errorf("the runner read the journal for %s without renewing its lease", st.hold)
	}
}
