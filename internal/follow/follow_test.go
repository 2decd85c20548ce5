package follow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/sqlite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// writer appends to one run of a real SQLite store as its runner would,
// one commit at a time, telling the hub after each.
type writer struct {
	t     testing.TB
	st    *sqlite.Store
	hub   *Hub
	id    string
	token int64
	pos   int64
}

func newStore(t testing.TB) *sqlite.Store {
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "f.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func newWriter(t testing.TB, st *sqlite.Store, hub *Hub, id string) *writer {
	t.Helper()
	ctx := t.Context()
	if _, _, err := st.RunCreate(ctx, store.RunCreateParams{ID: id, Agent: "a", Version: 1,
		Entries: []store.EntryInput{{Kind: hitchtype.KindRunStarted, Data: json.RawMessage(`{}`)}}}); err != nil {
		t.Fatal(err)
	}
	ls, err := st.LeaseClaim(ctx, store.LeaseClaimParams{Owner: "w", TTL: time.Minute, RunID: id})
	if err != nil {
		t.Fatal(err)
	}
	return &writer{t: t, st: st, hub: hub, id: id, token: ls[0].Token, pos: 1}
}

// commit appends n entries in one commit; end makes the last run.ended.
func (w *writer) commit(n int, end bool) {
	w.t.Helper()
	p := store.JournalAppendParams{RunID: w.id, Token: w.token, After: w.pos}
	for i := range n {
		kind := "note"
		if end && i == n-1 {
			kind, p.Status = hitchtype.KindRunEnded, hitchtype.StatusCompleted
			p.Outcome = json.RawMessage(`{"status":"completed"}`)
		}
		p.Entries = append(p.Entries, store.EntryInput{Kind: kind, Data: json.RawMessage(fmt.Sprintf(`{"n":%d}`, w.pos+int64(i)+1))})
	}
	a, err := w.st.JournalAppend(w.t.Context(), p)
	if err != nil {
		w.t.Fatal(err)
	}
	w.pos = a.Position
	w.hub.Notify(w.id)
}

// countingReader counts the hub's reads of the store.
type countingReader struct {
	st    *sqlite.Store
	mu    sync.Mutex
	reads int
}

func (c *countingReader) JournalRead(ctx context.Context, p store.JournalReadParams) ([]store.Entry, error) {
	c.mu.Lock()
	c.reads++
	c.mu.Unlock()
	return c.st.JournalRead(ctx, p)
}

func (c *countingReader) RunGet(ctx context.Context, id string) (store.Run, error) {
	return c.st.RunGet(ctx, id)
}

func startHub(t testing.TB, cfg Config) *Hub {
	t.Helper()
	h := New(cfg)
	if err := h.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := h.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return h
}

// collect follows and returns the positions seen, and the error that
// ended the follow.
// It gives the journal's length as the store has it, as Runtime.Follow does.
func collect(ctx context.Context, h *Hub, id string, after int64) ([]int64, error) {
	run, err := h.cfg.Store.(interface {
		RunGet(context.Context, string) (store.Run, error)
	}).RunGet(ctx, id)
	if err != nil {
		return nil, err
	}
	var got []int64
	for e, err := range h.Follow(ctx, id, after, run.Position) {
		if err != nil {
			return got, err
		}
		got = append(got, e.Pos)
	}
	return got, nil
}

// TestManyFollowersOneReader: fifty followers of one run, some joining
// late and some from a cursor, each see every entry after their cursor in
// order exactly once, and the store is read about once a commit, not once
// a follower.
func TestManyFollowersOneReader(t *testing.T) {
	st := newStore(t)
	cr := &countingReader{st: st}
	h := startHub(t, Config{Store: cr, Buffer: 1000, Poll: time.Minute, Page: 100})
	w := newWriter(t, st, h, "r1")
	const followers, commits = 50, 40
	type result struct {
		after int64
		got   []int64
		err   error
	}
	results := make([]result, followers)
	var wg sync.WaitGroup
	join := func(i int, after int64) {
		wg.Go(func() {
			got, err := collect(t.Context(), h, "r1", after)
			results[i] = result{after, got, err}
		})
	}
	for i := range followers / 2 {
		join(i, int64(i%3))
	}
	for c := range commits {
		w.commit(2, c == commits-1)
		if c == commits/2 {
			for i := followers / 2; i < followers; i++ {
				join(i, int64(i%7))
			}
		}
	}
	wg.Wait()
	last := w.pos
	for i, r := range results {
		if r.err != nil {
			t.Fatalf("follower %d: %v", i, r.err)
		}
		if int64(len(r.got)) != last-r.after {
			t.Fatalf("follower %d after %d: got %d entries, want %d: %v", i, r.after, len(r.got), last-r.after, r.got)
		}
		for k, pos := range r.got {
			if pos != r.after+int64(k)+1 {
				t.Fatalf("follower %d after %d: entry %d is %d: %v", i, r.after, k, pos, r.got)
			}
		}
	}
	// The feed reads at most once a commit, plus its first read and the
	// late followers' catch-up reads (one each).
	if max := commits + 1 + followers; cr.reads > max {
		t.Fatalf("the store was read %d times for %d commits and %d followers: want at most %d", cr.reads, commits, followers, max)
	}
}

// TestSlowFollowerCut: a follower that does not take its entries is cut
// with ErrBehind while another goes on; following again from its last
// entry yields the rest with no gap.
func TestSlowFollowerCut(t *testing.T) {
	st := newStore(t)
	h := startHub(t, Config{Store: st, Buffer: 4, Poll: time.Minute, Page: 100})
	w := newWriter(t, st, h, "r1")
	h.testing.read.Init()

	fast := make(chan []int64, 1)
	go func() { fast <- collectResuming(t.Context(), h, "r1", 0) }()
	next, stop := iterPull(h.Follow(t.Context(), "r1", 0, 0))
	defer stop()
	first, err := next()
	if err != nil || first.Pos != 1 {
		t.Fatalf("slow follower's first entry: %v %v", first.Pos, err)
	}
	// Ten commits while the slow follower takes nothing: more than its
	// buffer of four.
	for range 10 {
		w.commit(1, false)
		if _, err := h.testing.read.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	var behind error
	last := first.Pos
	for {
		e, err := next()
		if err != nil {
			behind = err
			break
		}
		if e.Pos != last+1 {
			t.Fatalf("slow follower: entry %d after %d", e.Pos, last)
		}
		last = e.Pos
	}
	if !errors.Is(behind, ErrBehind) {
		t.Fatalf("slow follower ended with %v, want ErrBehind", behind)
	}
	if last >= w.pos {
		t.Fatalf("slow follower reached %d of %d before it was cut", last, w.pos)
	}
	w.commit(1, true)
	rest := collectResuming(t.Context(), h, "r1", last)
	for k, pos := range rest {
		if pos != last+int64(k)+1 {
			t.Fatalf("resumed after %d: %v", last, rest)
		}
	}
	if got := last + int64(len(rest)); got != w.pos {
		t.Fatalf("resumed follower reached %d, want %d", got, w.pos)
	}
	got := <-fast
	for k, pos := range got {
		if pos != int64(k)+1 {
			t.Fatalf("the other follower got %v", got)
		}
	}
	if int64(len(got)) != w.pos {
		t.Fatalf("the other follower got %d entries, want %d", len(got), w.pos)
	}
}

// TestCursorPastTheEnd: a follower that asks to start past the journal's
// end does not make the followers after it miss what lies before.
func TestCursorPastTheEnd(t *testing.T) {
	st := newStore(t)
	h := startHub(t, Config{Store: st, Buffer: 100, Poll: time.Minute, Page: 100})
	h.testing.read.Init()
	w := newWriter(t, st, h, "r1")
	var wg sync.WaitGroup
	var ahead []int64
	wg.Go(func() {
		for e, err := range h.Follow(t.Context(), "r1", 10, 1) {
			if err != nil {
				t.Error(err)
				return
			}
			ahead = append(ahead, e.Pos)
		}
	})
	if _, err := h.testing.read.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	var all []int64
	wg.Go(func() { all, _ = collect(t.Context(), h, "r1", 0) })
	w.commit(13, true)
	wg.Wait()
	if len(all) != 14 || all[13] != 14 {
		t.Fatalf("a follower from the start got %v", all)
	}
	if len(ahead) != 4 || ahead[0] != 11 {
		t.Fatalf("a follower after 10 got %v", ahead)
	}
}

// TestStopEndsFollowers: stopping the hub ends its followers with
// ErrStopped and leaves no goroutine behind; Follow after Stop says so.
func TestStopEndsFollowers(t *testing.T) {
	st := newStore(t)
	h := New(Config{Store: st, Buffer: 8, Poll: time.Minute, Page: 100})
	if err := h.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	newWriter(t, st, h, "r1")
	h.testing.read.Init()
	done := make(chan error, 1)
	go func() { _, err := collect(t.Context(), h, "r1", 0); done <- err }()
	if _, err := h.testing.read.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := h.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrStopped) {
		t.Fatalf("follower ended with %v, want ErrStopped", err)
	}
	if _, err := collect(t.Context(), h, "r1", 0); !errors.Is(err, ErrStopped) {
		t.Fatalf("follow after stop: %v, want ErrStopped", err)
	}
}

// TestOtherProcessCommits: a commit this process was not told of is seen
// at the next poll.
func TestOtherProcessCommits(t *testing.T) {
	st := newStore(t)
	h := startHub(t, Config{Store: st, Buffer: 8, Poll: 10 * time.Millisecond, Page: 100})
	silent := New(Config{}) // never started: its Notify reaches nobody
	w := newWriter(t, st, silent, "r1")
	done := make(chan []int64, 1)
	go func() { got, _ := collect(t.Context(), h, "r1", 0); done <- got }()
	w.commit(3, true)
	if got := <-done; len(got) != 4 {
		t.Fatalf("got %v, want entries 1 to 4", got)
	}
}

// collectResuming follows after after, following again from its last
// entry whenever it is cut, as a client does.
func collectResuming(ctx context.Context, h *Hub, id string, after int64) []int64 {
	var all []int64
	for {
		got, err := collect(ctx, h, id, after+int64(len(all)))
		all = append(all, got...)
		if !errors.Is(err, ErrBehind) {
			return all
		}
	}
}

func iterPull(seq func(func(store.Entry, error) bool)) (func() (store.Entry, error), func()) {
	next, stop := iter.Pull2(seq)
	return func() (store.Entry, error) {
		e, err, ok := next()
		if !ok {
			return store.Entry{}, errors.New("the follow ended without an error")
		}
		return e, err
	}, stop
}
