package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/testclock"
	"github.com/hitch-dev/hitch/store"
)

// Run runs the conformance suite on stores that keep their own clock. open
// must return a fresh, empty store for each call; the suite closes it when
// the calling test ends. Sub-tests run in parallel, each on its own store.
// Lease expiry is awaited on the store's clock, so some tests take a few
// milliseconds of real time; a driver that can take its clock from the
// caller should also run RunWithClock.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	t.Helper()
	run(t, func(t *testing.T) (store.Store, *testclock.Clock) { return open(t), nil })
}

// RunWithClock runs the conformance suite on stores whose clock the suite
// drives. open must return a fresh, empty store whose every reading of time
// (Now, lease expiry, wake times, entry times) is now(); the clock starts at
// 2030-01-01T00:00:00Z, stands still, and only moves forward when a test
// moves it, so lease expiry and wake times are reached without waiting.
// A driver plugs its own clock override in here (sqlite.WithClock, or a
// PostgreSQL driver's equivalent).
func RunWithClock(t *testing.T, open func(t *testing.T, now func() time.Time) store.Store) {
	t.Helper()
	run(t, func(t *testing.T) (store.Store, *testclock.Clock) {
		c := testclock.New(clockStart)
		return open(t, c.Now), c
	})
}

func run(t *testing.T, open opener) {
	t.Helper()
	groups := []struct {
		name string
		fn   func(*testing.T, opener)
	}{
		{"Now", testNow},
		{"RunCreate", testRunCreate},
		{"RunGet", testRunGet},
		{"JournalAppend", testJournalAppend},
		{"JournalRead", testJournalRead},
		{"JournalReadMany", testJournalReadMany},
		{"LeaseClaim", testLeaseClaim},
		{"LeaseRenew", testLeaseRenew},
		{"LeaseRenewMany", testLeaseRenewMany},
		{"LeaseRelease", testLeaseRelease},
		{"Family", testFamily},
		{"RunRequestCancel", testRunRequestCancel},
		{"RunList", testRunList},
		{"StaleRunner", testStaleRunner},
		{"Budget", testBudget},
		{"Sessions", testSessions},
		{"Leader", testLeader},
		{"Prune", testPrune},
		{"Tenants", testTenants},
		{"Triggers", testTriggers},
		{"RunFilters", testRunFilters},
		{"Scale", testScale},
		{"EntryBytes", testEntryBytes},
		{"Notifier", testNotifier},
		{"Batch", testBatch},
		{"ForkedFrom", testForkedFrom},
		{"Gauges", testGauges},
	}
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			g.fn(t, open)
		})
	}
}

func testNow(t *testing.T, open opener) {
	e := newEnv(t, open)
	a := e.now()
	if a.IsZero() {
		t.Fatal("now is the zero time")
	}
	run := e.create("r")
	b := e.now()
	if b.Before(a) {
		t.Fatalf("clock went back from %v to %v", a, b)
	}
	// The run was created between the two readings (to the microsecond).
	if run.CreatedAt.Before(a.Add(-time.Microsecond)) || run.CreatedAt.After(b.Add(time.Microsecond)) {
		t.Fatalf("created at %v, not within [%v, %v]", run.CreatedAt, a, b)
	}
}

func testRunCreate(t *testing.T, open opener) {
	t.Run("FirstEntries", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		es := entries("first", 3)
		run := e.createWith(store.RunCreateParams{ID: "r1", Agent: "writer", Version: 3, InputHash: "abc", Entries: es})
		if run.ID != "r1" || run.RootID != "r1" || run.ParentID != "" || run.Depth != 0 || run.Agent != "writer" ||
			run.Version != 3 || run.InputHash != "abc" {
			t.Fatalf("identity not kept: %+v", run)
		}
		if run.Status != hitchtype.StatusQueued || run.Position != 3 || run.LeaseOwner != "" || run.LeaseToken != 0 ||
			!run.LeaseExpires.IsZero() || !run.WakeAt.IsZero() || run.CancelRequested || run.Outcome != nil {
			t.Fatalf("not a fresh queued run: %+v", run)
		}
		if run.CreatedAt.IsZero() || run.UpdatedAt.IsZero() {
			t.Fatalf("times not set: %+v", run)
		}
		checkEntries(t, e.read("r1", 0, 0), "r1", 1, es)
		if got := e.get("r1"); got.Position != 3 || got.Status != hitchtype.StatusQueued || !sameTime(got.CreatedAt, run.CreatedAt) {
			t.Fatalf("run get disagrees with create: %+v", got)
		}
	})

	t.Run("ReturnsWhatIsStored", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		root := e.createWith(store.RunCreateParams{ID: "root", Agent: "a", Version: 2, InputHash: "h",
			Tenant: "acme", Title: strings.Repeat("é", store.MaxTitleRunes+5), Entries: entries("root", 2),
			Lease: &store.CreateLease{Owner: "n1", TTL: longTTL}})
		kid := e.createWith(store.RunCreateParams{ID: "kid", RootID: "root", ParentID: "root", Depth: 1, Agent: "b",
			Version: 1, InputHash: "k", Title: "kid", Entries: entries("kid", 1),
			ForkedFrom: &hitchtype.ForkedFrom{Run: "root", Pos: 1, Replay: true}})
		for _, made := range []store.Run{root, kid} {
			got := e.get(made.ID)
			if !sameTime(got.CreatedAt, made.CreatedAt) || !sameTime(got.UpdatedAt, made.UpdatedAt) ||
				!sameTime(got.LeaseExpires, made.LeaseExpires) || !sameTime(got.WakeAt, made.WakeAt) {
				t.Fatalf("%s: times created %+v, stored %+v", made.ID, made, got)
			}
			if (got.ForkedFrom == nil) != (made.ForkedFrom == nil) || got.ForkedFrom != nil && *got.ForkedFrom != *made.ForkedFrom {
				t.Fatalf("%s: forked from %+v created, %+v stored", made.ID, made.ForkedFrom, got.ForkedFrom)
			}
			got.CreatedAt, got.UpdatedAt, got.LeaseExpires, got.WakeAt = made.CreatedAt, made.UpdatedAt, made.LeaseExpires, made.WakeAt
			got.ForkedFrom = made.ForkedFrom
			if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", made) {
				t.Fatalf("%s: created\n%+v\nstored\n%+v", made.ID, made, got)
			}
		}
	})

	t.Run("Leased", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		run := e.createWith(store.RunCreateParams{ID: "r", Agent: "a", Entries: entries("a", 2),
			Lease: &store.CreateLease{Owner: "n1", TTL: longTTL}})
		if run.Status != hitchtype.StatusRunning || run.LeaseOwner != "n1" || run.LeaseToken != 1 ||
			!sameTime(run.LeaseExpires, run.CreatedAt.Add(longTTL)) {
			t.Fatalf("created leased: %+v, want running, owner n1, token 1, until created + %v", run, longTTL)
		}
		if got := e.get("r"); got.Status != hitchtype.StatusRunning || got.LeaseOwner != "n1" || got.LeaseToken != 1 {
			t.Fatalf("run get disagrees with create: %+v", got)
		}
		// Held as a claim's lease is: another owner cannot take it, a due
		// claim skips it, and its token fences appends.
		_, err := e.s.LeaseClaim(e.ctx, store.LeaseClaimParams{Owner: "n2", TTL: longTTL, RunID: "r"})
		var held *store.LeaseHeldError
		if !errors.As(err, &held) || held.Owner != "n1" {
			t.Fatalf("claim of a run created leased: %v, want *LeaseHeldError naming n1", err)
		}
		if ls, err := e.s.LeaseClaim(e.ctx, store.LeaseClaimParams{Owner: "n2", TTL: longTTL, Limit: 10}); err != nil || len(ls) != 0 {
			t.Fatalf("due claim: %v %v, want nothing", err, leaseIDs(ls))
		}
		e.append(store.Lease{Run: run, Token: run.LeaseToken, ExpiresAt: run.LeaseExpires},
			store.JournalAppendParams{After: 2, Entries: entries("b", 1)})
		// Once its lease runs out a run created leased is due like any other.
		short := e.createWith(store.RunCreateParams{ID: "s", Agent: "a", Entries: entries("s", 1),
			Lease: &store.CreateLease{Owner: "n1", TTL: shortTTL}})
		e.waitPast(short.LeaseExpires)
		ls, err := e.s.LeaseClaim(e.ctx, store.LeaseClaimParams{Owner: "n2", TTL: longTTL, Limit: 10})
		if err != nil || len(ls) != 1 || ls[0].Run.ID != "s" || ls[0].Token != 2 {
			t.Fatalf("claim after the lease ran out: %v %+v, want s at token 2", err, ls)
		}
		// Creating an existing id with a lease changes nothing.
		queued := e.create("q")
		again, created, err := e.s.RunCreate(e.ctx, store.RunCreateParams{ID: "q", Agent: "agent", Entries: entries("q", 1),
			Lease: &store.CreateLease{Owner: "n1", TTL: longTTL}})
		if err != nil || created || again.Status != hitchtype.StatusQueued || again.LeaseOwner != "" {
			t.Fatalf("create of an existing id with a lease: %v created=%v %+v, want it queued as it was", err, created, again)
		}
		e.unchanged(queued)
		for _, bad := range []store.CreateLease{{Owner: "", TTL: longTTL}, {Owner: "n1"}, {Owner: "n1", TTL: store.MaxLeaseTTL + time.Second}} {
			_, _, err := e.s.RunCreate(e.ctx, store.RunCreateParams{ID: "bad", Entries: entries("x", 1), Lease: &bad})
			if err == nil {
				t.Fatalf("create with lease %+v: no error", bad)
			}
		}
		if _, err := e.s.RunGet(e.ctx, "bad"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a refused create wrote a run: %v", err)
		}
	})

	t.Run("Idempotent", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		first := e.createWith(store.RunCreateParams{ID: "r", Agent: "a", InputHash: "one", Entries: entries("a", 2)})
		again, created, err := e.s.RunCreate(e.ctx, store.RunCreateParams{ID: "r", Agent: "b", InputHash: "two",
			Entries: entries("b", 5)})
		if err != nil {
			t.Fatalf("second create: %v", err)
		}
		if created {
			t.Fatal("second create reported created=true")
		}
		if again.InputHash != "one" || again.Agent != "a" || again.Position != 2 || !sameTime(again.CreatedAt, first.CreatedAt) {
			t.Fatalf("second create did not return the first run: %+v", again)
		}
		checkEntries(t, e.read("r", 0, 0), "r", 1, entries("a", 2))
	})

	t.Run("IdempotentConcurrent", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		const n = 8
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			winners int
			errs    []error
		)
		for i := range n {
			wg.Go(func() {
				_, created, err := e.s.RunCreate(e.ctx, store.RunCreateParams{ID: "same", Agent: "a",
					InputHash: fmt.Sprint(i), Entries: entries(fmt.Sprint(i), 1)})
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
				}
				if created {
					winners++
				}
			})
		}
		wg.Wait()
		if len(errs) > 0 {
			t.Fatalf("concurrent creates failed: %v", errors.Join(errs...))
		}
		if winners != 1 {
			t.Fatalf("%d creates reported created=true, want 1", winners)
		}
		if es := e.read("same", 0, 0); len(es) != 1 {
			t.Fatalf("journal has %d entries, want 1", len(es))
		}
	})

	t.Run("Child", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		e.create("root")
		child := e.createWith(store.RunCreateParams{ID: "child", RootID: "root", ParentID: "root", Depth: 1,
			Agent: "sub", Entries: entries("c", 1)})
		if child.RootID != "root" || child.ParentID != "root" || child.Depth != 1 {
			t.Fatalf("family not kept: %+v", child)
		}
		if got := e.get("child"); got.RootID != "root" || got.ParentID != "root" || got.Depth != 1 {
			t.Fatalf("family not stored: %+v", got)
		}
	})

	t.Run("Invalid", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		good := entries("x", 1)
		bad := []store.EntryInput{good[0], {Kind: "test.bad", Data: json.RawMessage(`{"unterminated"`)}}
		for _, tc := range []struct {
			name string
			p    store.RunCreateParams
		}{
			{"no id", store.RunCreateParams{Agent: "a", Entries: good}},
			{"no entries", store.RunCreateParams{ID: "x1", Agent: "a"}},
			{"bad json in second entry", store.RunCreateParams{ID: "x2", Agent: "a", Entries: bad}},
			{"entry without kind", store.RunCreateParams{ID: "x3", Agent: "a",
				Entries: []store.EntryInput{{Data: json.RawMessage(`{}`)}}}},
			{"negative depth", store.RunCreateParams{ID: "x4", Agent: "a", Depth: -1, Entries: good}},
		} {
			_, created, err := e.s.RunCreate(e.ctx, tc.p)
			if err == nil || created {
				t.Fatalf("%s: got created=%v err=%v, want an error", tc.name, created, err)
			}
			if tc.p.ID != "" {
				if _, err := e.s.RunGet(e.ctx, tc.p.ID); !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("%s: run exists after a failed create (err %v)", tc.name, err)
				}
			}
		}
	})
}

func testRunGet(t *testing.T, open opener) {
	e := newEnv(t, open)
	_, err := e.s.RunGet(e.ctx, "missing")
	wantErr(t, "run get of a missing run", err, store.ErrNotFound)
}

func testJournalAppend(t *testing.T, open opener) {
	// running returns a run claimed by "owner" with a long lease.
	running := func(e *env, id string) store.Lease {
		e.create(id)
		return e.claim(id, "owner", longTTL)
	}

	t.Run("Positions", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		l := running(e, "r")
		before := e.now()
		run := e.append(l, store.JournalAppendParams{After: 1, Entries: entries("two", 2)})
		if run.Position != 3 || run.Status != hitchtype.StatusRunning || run.LeaseOwner != "owner" {
			t.Fatalf("after append: %+v", run)
		}
		run = e.append(l, store.JournalAppendParams{After: 3, Entries: entries("one", 1)})
		if run.Position != 4 {
			t.Fatalf("position %d, want 4", run.Position)
		}
		es := e.read("r", 1, 0)
		checkEntries(t, es, "r", 2, append(entries("two", 2), entries("one", 1)...))
		for _, en := range es {
			if en.At.Before(before.Add(-time.Microsecond)) {
				t.Fatalf("entry %d stamped %v, before the append started at %v", en.Pos, en.At, before)
			}
		}
	})

	t.Run("Errors", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		l := running(e, "r")
		e.append(l, store.JournalAppendParams{After: 1, Entries: entries("a", 1)})
		before := e.get("r")
		for _, tc := range []struct {
			name string
			p    store.JournalAppendParams
			want error
		}{
			{"behind", store.JournalAppendParams{RunID: "r", Token: l.Token, After: 1}, store.ErrConflict},
			{"ahead", store.JournalAppendParams{RunID: "r", Token: l.Token, After: 3}, store.ErrConflict},
			{"at zero", store.JournalAppendParams{RunID: "r", Token: l.Token, After: 0}, store.ErrConflict},
			{"old token", store.JournalAppendParams{RunID: "r", Token: l.Token - 1, After: 2}, store.ErrFenced},
			{"future token", store.JournalAppendParams{RunID: "r", Token: l.Token + 1, After: 2}, store.ErrFenced},
			{"missing run", store.JournalAppendParams{RunID: "nope", Token: 1, After: 1}, store.ErrNotFound},
		} {
			tc.p.Entries = entries("bad", 2)
			_, err := e.s.JournalAppend(e.ctx, tc.p)
			wantErr(t, tc.name, err, tc.want)
			e.unchanged(before)
		}
		// Not a sentinel, but refused all the same.
		_, err := e.s.JournalAppend(e.ctx, store.JournalAppendParams{RunID: "r", Token: l.Token, After: 2,
			Entries: []store.EntryInput{{Kind: "test.bad", Data: json.RawMessage(`not json`)}}})
		if err == nil {
			t.Fatal("append of invalid JSON succeeded")
		}
		e.unchanged(before)
	})

	t.Run("Terminal", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		l := running(e, "r")
		outcome := json.RawMessage(`{"answer":"42"}`)
		run := e.append(l, store.JournalAppendParams{After: 1, Entries: entries("end", 1),
			Status: hitchtype.StatusCompleted, Outcome: outcome})
		if run != (store.Appended{Position: 2, Status: hitchtype.StatusCompleted}) {
			t.Fatalf("terminal append answered %+v", run)
		}
		for _, got := range []store.Run{e.get("r")} {
			if got.Status != hitchtype.StatusCompleted || !sameJSON(got.Outcome, outcome) || got.Position != 2 {
				t.Fatalf("terminal append: %+v", got)
			}
			if got.LeaseOwner != "" || !got.LeaseExpires.IsZero() {
				t.Fatalf("lease not cleared: owner %q expires %v", got.LeaseOwner, got.LeaseExpires)
			}
			if got.LeaseToken != l.Token {
				t.Fatalf("token changed from %d to %d", l.Token, got.LeaseToken)
			}
		}
		before := e.get("r")
		_, err := e.s.JournalAppend(e.ctx, store.JournalAppendParams{RunID: "r", Token: l.Token, After: 2,
			Entries: entries("late", 1)})
		wantErr(t, "append after the end", err, store.ErrEnded)
		_, err = e.s.JournalAppend(e.ctx, store.JournalAppendParams{RunID: "r", Token: l.Token, After: 2,
			Entries: entries("late", 1), Status: hitchtype.StatusFailed, Outcome: json.RawMessage(`{"other":true}`)})
		wantErr(t, "second terminal append", err, store.ErrEnded)
		e.unchanged(before)
		if got := e.get("r"); got.Status != hitchtype.StatusCompleted || !sameJSON(got.Outcome, outcome) {
			t.Fatalf("first outcome overwritten: %+v", got)
		}
	})

	t.Run("TerminalStatuses", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		for _, st := range []hitchtype.Status{hitchtype.StatusCompleted, hitchtype.StatusFailed, hitchtype.StatusCancelled,
			hitchtype.StatusAnswerInvalid, hitchtype.StatusBudgetExhausted} {
			l := running(e, string(st))
			run := e.append(l, store.JournalAppendParams{After: 1, Entries: entries("end", 1), Status: st,
				Outcome: json.RawMessage(`{"why":"test"}`)})
			if run.Status != st || run.LeaseOwner != "" {
				t.Fatalf("%s: %+v", st, run)
			}
			_, err := e.s.LeaseClaim(e.ctx, store.LeaseClaimParams{Owner: "o", TTL: longTTL, RunID: string(st)})
			wantErr(t, "claim of a "+string(st)+" run", err, store.ErrEnded)
		}
	})

	t.Run("Waiting", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		l := running(e, "r")
		wake := e.now().Add(time.Hour)
		run := e.append(l, store.JournalAppendParams{After: 1, Entries: entries("wait", 1),
			Status: hitchtype.StatusWaiting, WakeAt: wake})
		if run != (store.Appended{Position: 2, Status: hitchtype.StatusWaiting}) {
			t.Fatalf("waiting append answered %+v", run)
		}
		for _, got := range []store.Run{e.get("r")} {
			if got.Status != hitchtype.StatusWaiting || !sameTime(got.WakeAt, wake) || got.LeaseOwner != "" ||
				!got.LeaseExpires.IsZero() {
				t.Fatalf("waiting append: %+v (want wake %v)", got, wake)
			}
		}
		// The lease is released: the old token can no longer write.
		_, err := e.s.JournalAppend(e.ctx, store.JournalAppendParams{RunID: "r", Token: l.Token, After: 2,
			Entries: entries("x", 1)})
		wantErr(t, "append after the lease was released", err, store.ErrFenced)
	})

	t.Run("Queued", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		l := running(e, "r")
		run := e.append(l, store.JournalAppendParams{After: 1, Entries: entries("yield", 1), Status: hitchtype.StatusQueued})
		if run != (store.Appended{Position: 2, Status: hitchtype.StatusQueued}) {
			t.Fatalf("queued append answered %+v", run)
		}
		if got := e.get("r"); got.Status != hitchtype.StatusQueued || got.LeaseOwner != "" || !got.LeaseExpires.IsZero() {
			t.Fatalf("queued append: %+v", got)
		}
		ls, err := e.s.LeaseClaim(e.ctx, store.LeaseClaimParams{Owner: "next", TTL: longTTL})
		if err != nil || len(ls) != 1 || ls[0].Run.ID != "r" || ls[0].Token != l.Token+1 {
			t.Fatalf("claim after yield: %v %+v", err, ls)
		}
	})

	t.Run("RaceSamePosition", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		l := running(e, "r")
		const n = 16
		var (
			wg    sync.WaitGroup
			start = make(chan struct{})
			errs  = make([]error, n)
		)
		for i := range n {
			wg.Go(func() {
				<-start
				_, errs[i] = e.s.JournalAppend(e.ctx, store.JournalAppendParams{RunID: "r", Token: l.Token, After: 1,
					Entries: []store.EntryInput{{Kind: "test.race", Data: data("race", i)}}})
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner >= 0:
				t.Fatalf("appends %d and %d both won", winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, store.ErrConflict):
				t.Fatalf("append %d: got %v, want a conflict", i, err)
			}
		}
		if winner < 0 {
			t.Fatal("no append won")
		}
		es := e.read("r", 0, 0)
		if len(es) != 2 || !sameJSON(es[1].Data, data("race", winner)) {
			t.Fatalf("journal after the race has %d entries (last %s), want 2 ending with the winner's", len(es),
				es[len(es)-1].Data)
		}
		if got := e.get("r"); got.Position != 2 {
			t.Fatalf("position %d, want 2", got.Position)
		}
	})
}

func testJournalRead(t *testing.T, open opener) {
	e := newEnv(t, open)
	l := e.createClaimed("r", "owner", longTTL)
	// 1 + 11×100 = 1101 entries: more than the default limit.
	for i := range 11 {
		e.append(l, store.JournalAppendParams{After: 1 + int64(i)*100, Entries: entries(fmt.Sprint(i), 100)})
	}
	for _, tc := range []struct {
		after       int64
		limit       int
		first, want int64
	}{
		{0, 0, 1, store.DefaultReadLimit},
		{0, 10, 1, 10},
		{4, 3, 5, 3},
		{1000, 0, 1001, 101},
		{1099, 5, 1100, 2},
		{1101, 0, 0, 0},
		{5000, 10, 0, 0},
	} {
		es := e.read("r", tc.after, tc.limit)
		if int64(len(es)) != tc.want {
			t.Fatalf("read after %d limit %d: %d entries, want %d", tc.after, tc.limit, len(es), tc.want)
		}
		for i, en := range es {
			if en.Pos != tc.first+int64(i) || en.RunID != "r" {
				t.Fatalf("read after %d limit %d: entry %d at position %d, want %d", tc.after, tc.limit, i, en.Pos,
					tc.first+int64(i))
			}
		}
	}
	_, err := e.s.JournalRead(e.ctx, store.JournalReadParams{RunID: "missing"})
	wantErr(t, "read of a missing run", err, store.ErrNotFound)
	if _, err := e.s.JournalRead(e.ctx, store.JournalReadParams{RunID: "r", Limit: -1}); err == nil {
		t.Fatal("read with a negative limit succeeded")
	}
	if _, err := e.s.JournalRead(e.ctx, store.JournalReadParams{RunID: "r", After: -1}); err == nil {
		t.Fatal("read after a negative position succeeded")
	}
}

func testJournalReadMany(t *testing.T, open opener) {
	e := newEnv(t, open)
	l := e.createClaimed("long", "owner", longTTL)
	for i := range 11 { // 1101 entries: more than the default limit
		e.append(l, store.JournalAppendParams{After: 1 + int64(i)*100, Entries: entries(fmt.Sprint(i), 100)})
	}
	e.create("short")
	l = e.claim("short", "owner", longTTL)
	e.append(l, store.JournalAppendParams{After: 1, Entries: entries("s", 2)})
	ids := []string{"short", "missing", "long", "short"} // a run named twice is answered twice
	for _, tc := range []struct {
		limit int
		want  []int
	}{
		{0, []int{3, 0, store.DefaultReadLimit, 3}},
		{2, []int{2, 0, 2, 2}},
		{store.MaxReadLimit, []int{3, 0, 1101, 3}},
	} {
		got, err := e.s.JournalReadMany(e.ctx, store.JournalReadManyParams{RunIDs: ids, Limit: tc.limit})
		if err != nil {
			t.Fatalf("read many, limit %d: %v", tc.limit, err)
		}
		if len(got) != len(ids) {
			t.Fatalf("read many, limit %d: %d answers for %d runs", tc.limit, len(got), len(ids))
		}
		for i, es := range got {
			if len(es) != tc.want[i] {
				t.Fatalf("read many, limit %d: %d entries of %q, want %d", tc.limit, len(es), ids[i], tc.want[i])
			}
			// Each head is what JournalRead answers, entry for entry.
			if len(es) > 0 {
				one := e.read(ids[i], 0, len(es))
				for j := range es {
					if es[j].RunID != ids[i] || es[j].Pos != int64(j+1) || es[j].Kind != one[j].Kind ||
						string(es[j].Data) != string(one[j].Data) || !es[j].At.Equal(one[j].At) {
						t.Fatalf("read many, limit %d: entry %d of %q is %+v, JournalRead says %+v", tc.limit, j, ids[i], es[j], one[j])
					}
				}
			}
		}
	}
	if got, err := e.s.JournalReadMany(e.ctx, store.JournalReadManyParams{}); err != nil || len(got) != 0 {
		t.Fatalf("read many of no runs: %v, %v", got, err)
	}
	tooMany := make([]string, store.MaxReadMany+1)
	for i := range tooMany {
		tooMany[i] = fmt.Sprint("r", i)
	}
	for name, p := range map[string]store.JournalReadManyParams{
		"too many runs":   {RunIDs: tooMany},
		"negative limit":  {RunIDs: ids, Limit: -1},
		"limit too large": {RunIDs: ids, Limit: store.MaxReadLimit + 1},
		"empty id":        {RunIDs: []string{""}},
	} {
		if _, err := e.s.JournalReadMany(e.ctx, p); err == nil {
			t.Errorf("read many with %s succeeded", name)
		}
	}
}

func testLeaseClaim(t *testing.T, open opener) {
	t.Run("DueRuns", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		e.create("queued")
		e.expired("expired", "old")
		e.createClaimed("live", "holder", longTTL)
		for _, w := range []struct {
			id   string
			wake time.Duration // 0: no wake time
		}{{"wake-due", -time.Second}, {"wake-later", time.Hour}, {"wait-forever", 0}} {
			e.create(w.id)
			l := e.claim(w.id, "old", longTTL)
			var at time.Time
			if w.wake != 0 {
				at = e.now().Add(w.wake)
			}
			e.append(l, store.JournalAppendParams{After: 1, Entries: entries("w", 1), Status: hitchtype.StatusWaiting, WakeAt: at})
		}
		l := e.createClaimed("done", "old", longTTL)
		e.append(l, store.JournalAppendParams{After: 1, Entries: entries("d", 1), Status: hitchtype.StatusCompleted})

		before := e.get("expired")
		now := e.now()
		ls, err := e.s.LeaseClaim(e.ctx, store.LeaseClaimParams{Owner: "me", TTL: time.Minute, Limit: 50})
		if err != nil {
			t.Fatalf("claim: %v", err)
		}
		got := leaseIDs(ls)
		slices.Sort(got)
		if want := []string{"expired", "queued", "wake-due"}; !slices.Equal(got, want) {
			t.Fatalf("claimed %v, want %v", got, want)
		}
		for _, l := range ls {
			r := l.Run
			if r.Status != hitchtype.StatusRunning || r.LeaseOwner != "me" || !r.WakeAt.IsZero() ||
				l.Token != r.LeaseToken || !sameTime(l.ExpiresAt, r.LeaseExpires) {
				t.Fatalf("claimed run %s: %+v (lease token %d, expires %v)", r.ID, r, l.Token, l.ExpiresAt)
			}
			if l.ExpiresAt.Before(now.Add(time.Minute-time.Microsecond)) || l.ExpiresAt.After(now.Add(time.Minute+10*time.Second)) {
				t.Fatalf("claimed run %s expires at %v, want about %v", r.ID, l.ExpiresAt, now.Add(time.Minute))
			}
			stored := e.get(r.ID)
			if stored.LeaseOwner != "me" || stored.LeaseToken != l.Token || stored.Status != hitchtype.StatusRunning {
				t.Fatalf("claim of %s not stored: %+v", r.ID, stored)
			}
		}
		for _, l := range ls {
			want := int64(2)
			if l.Run.ID == "queued" {
				want = 1
			}
			if l.Token != want {
				t.Fatalf("%s: token %d, want %d", l.Run.ID, l.Token, want)
			}
		}
		if ls[slices.IndexFunc(ls, func(l store.Lease) bool { return l.Run.ID == "expired" })].Token != before.LeaseToken+1 {
			t.Fatal("claim did not increment the token")
		}
		// Nothing else is due now.
		ls, err = e.s.LeaseClaim(e.ctx, store.LeaseClaimParams{Owner: "me", TTL: time.Minute, Limit: 50})
		if err != nil || len(ls) != 0 {
			t.Fatalf("second claim: %v %v, want nothing", err, leaseIDs(ls))
		}
	})

	t.Run("Limit", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		for i := range 5 {
			e.create(fmt.Sprint("r", i))
		}
		for _, tc := range []struct{ limit, want int }{{0, 1}, {1, 1}, {2, 2}, {10, 1}, {10, 0}} {
			ls, err := e.s.LeaseClaim(e.ctx, store.LeaseClaimParams{Owner: "me", TTL: longTTL, Limit: tc.limit})
			if err != nil {
				t.Fatalf("claim limit %d: %v", tc.limit, err)
			}
			if len(ls) != tc.want {
				t.Fatalf("claim limit %d: %d runs, want %d", tc.limit, len(ls), tc.want)
			}
		}
	})

	t.Run("ByID", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		first := e.createClaimed("r", "a", longTTL)
		if first.Token != 1 || first.Run.Status != hitchtype.StatusRunning || first.Run.LeaseOwner != "a" {
			t.Fatalf("first claim: %+v", first)
		}
		before := e.get("r")
		_, err := e.s.LeaseClaim(e.ctx, store.LeaseClaimParams{Owner: "b", TTL: longTTL, RunID: "r"})
		var held *store.LeaseHeldError
		if !errors.As(err, &held) {
			t.Fatalf("claim of a leased run: got %v, want *LeaseHeldError", err)
		}
		if held.RunID != "r" || held.Owner != "a" || !sameTime(held.ExpiresAt, first.ExpiresAt) {
			t.Fatalf("lease held error %+v, want owner a until %v", held, first.ExpiresAt)
		}
		e.unchanged(before)

		_, err = e.s.LeaseClaim(e.ctx, store.LeaseClaimParams{Owner: "b", TTL: longTTL, RunID: "missing"})
		wantErr(t, "claim of a missing run", err, store.ErrNotFound)

		// A waiting run without a wake time is claimed only by its id.
		e.append(first, store.JournalAppendParams{After: 1, Entries: entries("w", 1), Status: hitchtype.StatusWaiting})
		ls, err := e.s.LeaseClaim(e.ctx, store.LeaseClaimParams{Owner: "b", TTL: longTTL, Limit: 10})
		if err != nil || len(ls) != 0 {
			t.Fatalf("claim of due runs: %v %v, want nothing", err, leaseIDs(ls))
		}
		second := e.claim("r", "b", longTTL)
		if second.Token != 2 || second.Run.Status != hitchtype.StatusRunning || !second.Run.WakeAt.IsZero() {
			t.Fatalf("claim of a waiting run: %+v", second)
		}

		// A waiting run with a later wake time is claimed by id at once.
		e.append(second, store.JournalAppendParams{After: 2, Entries: entries("w", 1), Status: hitchtype.StatusWaiting,
			WakeAt: e.now().Add(time.Hour)})
		third := e.claim("r", "c", shortTTL)
		if third.Token != 3 || !third.Run.WakeAt.IsZero() {
			t.Fatalf("claim of a sleeping run: %+v", third)
		}
		// An expired lease can be taken over by id.
		e.waitPast(third.ExpiresAt)
		if fourth := e.claim("r", "d", longTTL); fourth.Token != 4 || fourth.Run.LeaseOwner != "d" {
			t.Fatalf("claim over an expired lease: %+v", fourth)
		}
	})

	t.Run("Invalid", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		e.create("r")
		for _, p := range []store.LeaseClaimParams{
			{Owner: "", TTL: longTTL},
			{Owner: "me", TTL: 0},
			{Owner: "me", TTL: -time.Second},
			{Owner: "me", TTL: longTTL, Limit: -1},
			{Owner: "", TTL: longTTL, RunID: "r"},
		} {
			if ls, err := e.s.LeaseClaim(e.ctx, p); err == nil {
				t.Fatalf("claim %+v succeeded with %v", p, leaseIDs(ls))
			}
		}
		if got := e.get("r"); got.Status != hitchtype.StatusQueued || got.LeaseToken != 0 {
			t.Fatalf("invalid claims changed the run: %+v", got)
		}
	})

	t.Run("RaceDisjoint", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		const runs, claimers, batch = 120, 8, 7
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := w; i < runs; i += 8 {
					id := fmt.Sprintf("r%03d", i)
					if _, _, err := e.s.RunCreate(e.ctx, store.RunCreateParams{ID: id, Agent: "a",
						Entries: entries(id, 1)}); err != nil {
						t.Errorf("create %s: %v", id, err)
					}
				}
			})
		}
		wg.Wait()
		if t.Failed() {
			return
		}
		// Lease every run briefly and let the leases run out. The lease must
		// outlast the claiming loop, or the loop would claim forever.
		var last time.Time
		leased := map[string]int64{} // run → token of its latest setup lease
		// On a loaded machine early leases may run out and be taken again
		// before the loop ends; the map keeps each run's latest token.
		for range 10 * runs / 50 {
			ls, err := e.s.LeaseClaim(e.ctx, store.LeaseClaimParams{Owner: "crashed", TTL: 300 * time.Millisecond, Limit: 50})
			if err != nil {
				t.Fatalf("setup claim: %v", err)
			}
			for _, l := range ls {
				last = later(last, l.ExpiresAt)
				leased[l.Run.ID] = l.Token
			}
			if len(leased) == runs {
				break
			}
		}
		if len(leased) != runs {
			t.Fatalf("setup leased %d runs, want %d", len(leased), runs)
		}
		e.waitPast(last)

		got := make([][]string, claimers)
		start := make(chan struct{})
		for c := range claimers {
			wg.Go(func() {
				<-start
				for {
					ls, err := e.s.LeaseClaim(e.ctx, store.LeaseClaimParams{Owner: fmt.Sprint("c", c), TTL: longTTL,
						Limit: batch})
					if err != nil {
						t.Errorf("claimer %d: %v", c, err)
						return
					}
					if len(ls) == 0 {
						return
					}
					got[c] = append(got[c], leaseIDs(ls)...)
				}
			})
		}
		close(start)
		wg.Wait()
		seen := map[string]int{}
		for c, ids := range got {
			for _, id := range ids {
				if prev, dup := seen[id]; dup {
					t.Fatalf("run %s claimed by both claimer %d and claimer %d", id, prev, c)
				}
				seen[id] = c
			}
		}
		if len(seen) != runs {
			t.Fatalf("claimers took %d distinct runs, want all %d", len(seen), runs)
		}
		for id, c := range seen {
			if r := e.get(id); r.LeaseOwner != fmt.Sprint("c", c) || r.LeaseToken != leased[id]+1 {
				t.Fatalf("run %s is leased to %q with token %d, want c%d with token %d", id, r.LeaseOwner, r.LeaseToken,
					c, leased[id]+1)
			}
		}
	})
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func testLeaseRenew(t *testing.T, open opener) {
	t.Run("Extends", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		l := e.createClaimed("r", "me", time.Minute)
		run, err := e.s.LeaseRenew(e.ctx, store.LeaseRenewParams{RunID: "r", Owner: "me", Token: l.Token, TTL: longTTL})
		if err != nil {
			t.Fatalf("renew: %v", err)
		}
		if !run.LeaseExpires.After(l.ExpiresAt.Add(30*time.Minute)) || run.LeaseOwner != "me" || run.LeaseToken != l.Token {
			t.Fatalf("renew did not extend: was %v, now %+v", l.ExpiresAt, run)
		}
		if run.CancelRequested {
			t.Fatal("cancel requested on a fresh run")
		}
		if got := e.get("r"); !sameTime(got.LeaseExpires, run.LeaseExpires) {
			t.Fatalf("renewal not stored: %v, want %v", got.LeaseExpires, run.LeaseExpires)
		}
		// Renewing keeps an otherwise expiring lease alive.
		l2 := e.createClaimed("s", "me", shortTTL)
		if _, err := e.s.LeaseRenew(e.ctx, store.LeaseRenewParams{RunID: "s", Owner: "me", Token: l2.Token, TTL: longTTL}); err != nil {
			t.Fatalf("renew: %v", err)
		}
		e.waitPast(l2.ExpiresAt)
		_, err = e.s.LeaseClaim(e.ctx, store.LeaseClaimParams{Owner: "other", TTL: longTTL, RunID: "s"})
		var held *store.LeaseHeldError
		if !errors.As(err, &held) {
			t.Fatalf("claim of a renewed lease: %v, want *LeaseHeldError", err)
		}
	})

	t.Run("CancelRequested", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		l := e.createClaimed("r", "me", longTTL)
		e.requestCancel("r")
		run, err := e.s.LeaseRenew(e.ctx, store.LeaseRenewParams{RunID: "r", Owner: "me", Token: l.Token, TTL: longTTL})
		if err != nil {
			t.Fatalf("renew: %v", err)
		}
		if !run.CancelRequested {
			t.Fatal("renew did not report the cancel request")
		}
	})

	t.Run("Errors", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		old := e.expired("r", "a")
		fresh := e.claim("r", "b", longTTL)
		_, err := e.s.LeaseRenew(e.ctx, store.LeaseRenewParams{RunID: "r", Owner: "a", Token: old.Token, TTL: longTTL})
		wantErr(t, "renew after another claim", err, store.ErrFenced)
		if got := e.get("r"); got.LeaseOwner != "b" || !sameTime(got.LeaseExpires, fresh.ExpiresAt) {
			t.Fatalf("stale renew changed the lease: %+v", got)
		}
		_, err = e.s.LeaseRenew(e.ctx, store.LeaseRenewParams{RunID: "missing", Owner: "a", Token: 1, TTL: longTTL})
		wantErr(t, "renew of a missing run", err, store.ErrNotFound)
		e.append(fresh, store.JournalAppendParams{After: 1, Entries: entries("end", 1), Status: hitchtype.StatusFailed,
			Outcome: json.RawMessage(`{"reason":"test"}`)})
		_, err = e.s.LeaseRenew(e.ctx, store.LeaseRenewParams{RunID: "r", Owner: "b", Token: fresh.Token, TTL: longTTL})
		wantErr(t, "renew of an ended run", err, store.ErrEnded)
		if _, err := e.s.LeaseRenew(e.ctx, store.LeaseRenewParams{RunID: "r", Owner: "b", Token: fresh.Token}); err == nil {
			t.Fatal("renew without a ttl succeeded")
		}
	})
}

func testRunRequestCancel(t *testing.T, open opener) {
	t.Run("Idempotent", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		e.create("r")
		for i := range 2 {
			run, err := e.s.RunRequestCancel(e.ctx, store.RunRequestCancelParams{ID: "r"})
			if err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
			if !run.CancelRequested || run.Status != hitchtype.StatusQueued {
				t.Fatalf("request %d: %+v", i, run)
			}
		}
		if !e.get("r").CancelRequested {
			t.Fatal("cancel request not stored")
		}
		if es := e.read("r", 0, 0); len(es) != 1 {
			t.Fatalf("cancel request wrote %d journal entries", len(es)-1)
		}
		_, err := e.s.RunRequestCancel(e.ctx, store.RunRequestCancelParams{ID: "missing"})
		wantErr(t, "cancel of a missing run", err, store.ErrNotFound)
	})

	t.Run("KeepsFirstNote", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		e.create("r")
		first := store.RunRequestCancelParams{ID: "r", By: "alice", Reason: "the customer withdrew it: <stop> & \"don't\""}
		run, err := e.s.RunRequestCancel(e.ctx, first)
		if err != nil || run.CancelBy != first.By || run.CancelReason != first.Reason {
			t.Fatalf("first request: %v %+v", err, run)
		}
		if run, err = e.s.RunRequestCancel(e.ctx, store.RunRequestCancelParams{ID: "r", By: "bob", Reason: "again"}); err != nil ||
			run.CancelBy != "alice" || run.CancelReason != first.Reason {
			t.Fatalf("a second request replaced the first one's note: %v %+v", err, run)
		}
		if got := e.get("r"); got.CancelBy != "alice" || got.CancelReason != first.Reason {
			t.Fatalf("stored note: %q %q", got.CancelBy, got.CancelReason)
		}
		l := e.claim("r", "me", longTTL)
		if l.Run.CancelBy != "alice" || l.Run.CancelReason != first.Reason {
			t.Fatalf("a claim's run lacks the note: %+v", l.Run)
		}
		long := strings.Repeat("x", store.MaxCancelNoteBytes+1)
		if _, err := e.s.RunRequestCancel(e.ctx, store.RunRequestCancelParams{ID: "r", Reason: long}); err == nil || !strings.Contains(err.Error(), "reason") {
			t.Fatalf("a reason of %d bytes: %v", len(long), err)
		}
	})

	t.Run("WakesWaiting", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		for _, w := range []struct {
			id   string
			wake time.Duration
		}{{"forever", 0}, {"later", time.Hour}} {
			e.create(w.id)
			l := e.claim(w.id, "me", longTTL)
			var at time.Time
			if w.wake != 0 {
				at = e.now().Add(w.wake)
			}
			e.append(l, store.JournalAppendParams{After: 1, Entries: entries("w", 1), Status: hitchtype.StatusWaiting, WakeAt: at})
		}
		for _, id := range []string{"forever", "later"} {
			run, err := e.s.RunRequestCancel(e.ctx, store.RunRequestCancelParams{ID: id})
			if err != nil || !run.CancelRequested || run.Status != hitchtype.StatusWaiting {
				t.Fatalf("cancel %s: %v %+v", id, err, run)
			}
		}
		ls, err := e.s.LeaseClaim(e.ctx, store.LeaseClaimParams{Owner: "sweeper", TTL: longTTL, Limit: 10})
		if err != nil {
			t.Fatalf("claim: %v", err)
		}
		got := leaseIDs(ls)
		slices.Sort(got)
		if !slices.Equal(got, []string{"forever", "later"}) {
			t.Fatalf("claimed %v after cancel requests, want both waiting runs", got)
		}
		for _, l := range ls {
			if !l.Run.CancelRequested {
				t.Fatalf("claimed %s without its cancel request", l.Run.ID)
			}
		}
	})

	t.Run("Terminal", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		l := e.createClaimed("r", "me", longTTL)
		e.append(l, store.JournalAppendParams{After: 1, Entries: entries("end", 1), Status: hitchtype.StatusCompleted,
			Outcome: json.RawMessage(`"done"`)})
		before := e.get("r")
		run, err := e.s.RunRequestCancel(e.ctx, store.RunRequestCancelParams{ID: "r"})
		if err != nil {
			t.Fatalf("cancel of an ended run: %v", err)
		}
		if run.Status != hitchtype.StatusCompleted || run.CancelRequested || !sameJSON(run.Outcome, json.RawMessage(`"done"`)) {
			t.Fatalf("cancel changed an ended run: %+v", run)
		}
		e.unchanged(before)
		if e.get("r").CancelRequested {
			t.Fatal("cancel request stored on an ended run")
		}
	})
}

func testRunList(t *testing.T, open opener) {
	t.Run("Filters", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		e.create("a")
		e.create("b")
		e.create("c")
		// z1 is newest and last by id, so that creation order and id order agree
		// on a real clock and on one that stands still.
		e.createWith(store.RunCreateParams{ID: "z1", RootID: "a", ParentID: "a", Depth: 1, Agent: "sub",
			Entries: entries("z1", 1)})
		e.claim("b", "me", longTTL)
		for _, tc := range []struct {
			name string
			p    store.RunListParams
			want []string
		}{
			{"all", store.RunListParams{}, []string{"z1", "c", "b", "a"}},
			{"limit", store.RunListParams{Limit: 2}, []string{"z1", "c"}},
			{"running", store.RunListParams{Statuses: []hitchtype.Status{hitchtype.StatusRunning}}, []string{"b"}},
			{"queued", store.RunListParams{Statuses: []hitchtype.Status{hitchtype.StatusQueued}}, []string{"z1", "c", "a"}},
			{"two statuses", store.RunListParams{Statuses: []hitchtype.Status{hitchtype.StatusRunning, hitchtype.StatusQueued}},
				[]string{"z1", "c", "b", "a"}},
			{"ended", store.RunListParams{Statuses: []hitchtype.Status{hitchtype.StatusCompleted}}, []string{}},
			{"children", store.RunListParams{ParentID: "a"}, []string{"z1"}},
			{"children running", store.RunListParams{ParentID: "a", Statuses: []hitchtype.Status{hitchtype.StatusRunning}},
				[]string{}},
			{"no children", store.RunListParams{ParentID: "c"}, []string{}},
			{"family", store.RunListParams{RootID: "a"}, []string{"z1", "a"}},
			{"family of one", store.RunListParams{RootID: "c"}, []string{"c"}},
		} {
			rs, err := e.s.RunList(e.ctx, tc.p)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if got := runIDs(rs); !slices.Equal(got, tc.want) {
				t.Fatalf("%s: got %v, want %v", tc.name, got, tc.want)
			}
		}
		for _, p := range []store.RunListParams{{Limit: -1}, {Statuses: []hitchtype.Status{"bogus"}}} {
			if _, err := e.s.RunList(e.ctx, p); err == nil {
				t.Fatalf("list %+v succeeded", p)
			}
		}
	})

	t.Run("DefaultLimit", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, open)
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				for i := w; i < 101; i += 8 {
					id := fmt.Sprintf("r%03d", i)
					if _, _, err := e.s.RunCreate(e.ctx, store.RunCreateParams{ID: id, Agent: "a", Entries: entries(id, 1)}); err != nil {
						t.Errorf("create %s: %v", id, err)
					}
				}
			})
		}
		wg.Wait()
		rs, err := e.s.RunList(e.ctx, store.RunListParams{})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		if len(rs) != 100 {
			t.Fatalf("list without a limit returned %d runs, want 100", len(rs))
		}
		for i := 1; i < len(rs); i++ {
			if rs[i].CreatedAt.After(rs[i-1].CreatedAt) {
				t.Fatalf("run %s (created %v) listed after %s (created %v)", rs[i].ID, rs[i].CreatedAt, rs[i-1].ID,
					rs[i-1].CreatedAt)
			}
		}
	})
}

// testStaleRunner plays the split-brain case: runner A's lease runs out, B
// claims the run, and A, unaware, tries to carry on.
func testStaleRunner(t *testing.T, open opener) {
	e := newEnv(t, open)
	a := e.expired("r", "A")
	if a.Token != 1 {
		t.Fatalf("first claim has token %d, want 1", a.Token)
	}
	ls, err := e.s.LeaseClaim(e.ctx, store.LeaseClaimParams{Owner: "B", TTL: longTTL})
	if err != nil || len(ls) != 1 || ls[0].Run.ID != "r" {
		t.Fatalf("B's claim: %v %v", err, leaseIDs(ls))
	}
	b := ls[0]
	if b.Token != 2 {
		t.Fatalf("B's token %d, want 2", b.Token)
	}
	before := e.get("r")
	_, err = e.s.JournalAppend(e.ctx, store.JournalAppendParams{RunID: "r", Token: a.Token, After: 1,
		Entries: entries("A", 1)})
	wantErr(t, "stale append", err, store.ErrFenced)
	_, err = e.s.LeaseRenew(e.ctx, store.LeaseRenewParams{RunID: "r", Owner: "A", Token: a.Token, TTL: longTTL})
	wantErr(t, "stale renew", err, store.ErrFenced)
	e.unchanged(before)
	run := e.append(b, store.JournalAppendParams{After: 1, Entries: entries("B", 1)})
	if run.Position != 2 || run.LeaseOwner != "B" {
		t.Fatalf("B's append: %+v", run)
	}
	checkEntries(t, e.read("r", 1, 0), "r", 2, entries("B", 1))
}
