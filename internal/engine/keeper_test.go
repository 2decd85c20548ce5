package engine

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/store"
)

// counting counts the lease calls a node makes.
type counting struct {
	store.Store
	mu        sync.Mutex
	renew     int      // LeaseRenew calls
	gets      int      // RunGet calls
	many      []int    // leases in each LeaseRenewMany call
	cancels   []string // the owner of each RunCancelRequested call
	renewedAt chan int
}

func (s *counting) LeaseRenew(ctx context.Context, p store.LeaseRenewParams) (store.Run, error) {
	s.mu.Lock()
	s.renew++
	s.mu.Unlock()
	return s.Store.LeaseRenew(ctx, p)
}

func (s *counting) RunGet(ctx context.Context, id string) (store.Run, error) {
	s.mu.Lock()
	s.gets++
	s.mu.Unlock()
	return s.Store.RunGet(ctx, id)
}

func (s *counting) LeaseRenewMany(ctx context.Context, p store.LeaseRenewManyParams) ([]store.LeaseRenewal, error) {
	s.mu.Lock()
	s.many = append(s.many, len(p.Leases))
	s.mu.Unlock()
	got, err := s.Store.LeaseRenewMany(ctx, p)
	select {
	case s.renewedAt <- len(p.Leases):
	default:
	}
	return got, err
}

func (s *counting) RunCancelRequested(ctx context.Context, p store.RunCancelRequestedParams) ([]string, error) {
	s.mu.Lock()
	s.cancels = append(s.cancels, p.Owner)
	s.mu.Unlock()
	return s.Store.RunCancelRequested(ctx, p)
}

// TestKeeperRenewsEveryLeaseInOneCall: a node driving many runs that wait
// on their models renews all their leases in one store call a period, and
// asks for cancel requests in one call a poll, instead of one call per
// run; each run holds its runner's goroutine and its model call's, and
// nothing else. A cancel requested from elsewhere reaches the runner.
func TestKeeperRenewsEveryLeaseInOneCall(t *testing.T) {
	ctx := context.Background()
	base, _ := openClock(t)
	st := &counting{Store: base, renewedAt: make(chan int, 64)}
	const runs = 40
	entered, gate := make(chan struct{}, runs), make(chan struct{})
	a := testAgent(gated{Model: scripted.New("m", scripted.Script{Turns: []scripted.Turn{{Text: "over"}}}), entered: entered, gate: gate})
	e := New(Config{Store: st, Owner: "node", Agents: func(string, int) (*Agent, bool) { return a, true },
		LeaseTTL: time.Minute, RenewEvery: 20 * time.Millisecond, CancelPoll: 20 * time.Millisecond,
		ForceSettleGrace: time.Minute, AwaitPoll: 5 * time.Millisecond, MaxRunners: runs})
	before := runtime.NumGoroutine()
	for i := range runs {
		if _, err := e.Start(ctx, a, StartParams{ID: fmt.Sprintf("r%d", i), Input: "hi"}); err != nil {
			t.Fatal(err)
		}
	}
	for range runs {
		<-entered
	}
	// Each run: its runner and its model call; the node: its keeper, and
	// a few the store or runtime may start meanwhile. A third goroutine a
	// run would be 40 more.
	if n := runtime.NumGoroutine() - before; n > 2*runs+runs/4 {
		t.Errorf("%d goroutines for %d runs in flight, want at most %d", n, runs, 2*runs+runs/4)
	}
	for got := 0; got < runs; {
		got = <-st.renewedAt
	}
	st.mu.Lock()
	gets := st.gets
	st.mu.Unlock()
	if _, err := base.RunRequestCancel(ctx, store.RunRequestCancelParams{ID: "r7"}); err != nil {
		t.Fatal(err)
	}
	run, err := e.Await(ctx, "r7")
	if err != nil || run.Status != hitchtype.StatusCancelled {
		t.Fatalf("a cancel requested elsewhere: %+v %v", run, err)
	}
	close(gate)
	if err := e.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.renew != 0 || gets > 0 {
		t.Errorf("%d single renewals and %d run reads while the runs waited, want none", st.renew, gets)
	}
	if len(st.many) == 0 || len(st.cancels) == 0 {
		t.Fatalf("renewals %v, cancel polls %v", st.many, st.cancels)
	}
	for _, n := range st.many {
		if n > runs {
			t.Errorf("a renewal of %d leases, more than the %d runs", n, runs)
		}
	}
	for _, owner := range st.cancels {
		if owner != "node" {
			t.Errorf("a cancel poll for the runs of %q, want this node's", owner)
		}
	}
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
}
