package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/pgtest"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/postgres"
	"github.com/hitch-dev/hitch/store/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newSchema returns the name of a schema of the test's own (see
// pgtest.Schema).
func newSchema(t testing.TB) string { return pgtest.Schema(t, "hitch_test_") }

// open opens a store in a fresh schema; the caller closes it.
func open(t testing.TB, opts ...postgres.Option) *postgres.Store {
	t.Helper()
	return openIn(t, newSchema(t), opts...)
}

func openIn(t testing.TB, schema string, opts ...postgres.Option) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), pgtest.URL(t), append([]postgres.Option{postgres.WithSchema(schema)}, opts...)...)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return s
}

// twoNodes opens two stores (two pools, as two nodes have) on one fresh
// schema; both are closed when the test ends.
func twoNodes(t *testing.T) (a, b *postgres.Store) {
	t.Helper()
	schema := newSchema(t)
	a, b = openIn(t, schema), openIn(t, schema)
	t.Cleanup(func() { a.Close(); b.Close() }) // before the schema is dropped
	return a, b
}

// TestConformance, on database time, is in plan_test.go: the statements
// it sends are then checked for their query plans.

// The suite once more on a clock it drives, passed to every statement in
// place of database time.
func TestConformanceWithClock(t *testing.T) {
	t.Parallel()
	storetest.RunWithClock(t, func(t *testing.T, now func() time.Time) store.Store {
		// Wakes come from notifications only: the poll's would hide a
		// missing one.
		return open(t, postgres.WithClock(now), postgres.WithPollInterval(postgres.MaxPollInterval))
	})
}

func entry() []store.EntryInput {
	return []store.EntryInput{{Kind: "k", Data: []byte(`{"x":1}`)}}
}

func TestMigrate(t *testing.T) {
	t.Parallel()
	ctx, url, schema := t.Context(), pgtest.URL(t), newSchema(t)
	ms, err := postgres.Migrate(ctx, url, true, postgres.WithSchema(schema))
	if err != nil || len(ms) != postgres.SchemaVersion || ms[0].Version != 1 {
		t.Fatalf("dry run: %v %+v, want all %d migrations", err, ms, postgres.SchemaVersion)
	}
	// A dry run writes nothing: not even the schema.
	if _, err := postgres.Open(ctx, url, postgres.WithSchema(schema), postgres.WithAutoMigrate(false)); err == nil ||
		!strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("open after a dry run: %v, want the schema missing", err)
	}
	if ms, err = postgres.Migrate(ctx, url, false, postgres.WithSchema(schema)); err != nil || len(ms) != postgres.SchemaVersion {
		t.Fatalf("migrate: %v %+v", err, ms)
	}
	if ms, err = postgres.Migrate(ctx, url, false, postgres.WithSchema(schema)); err != nil || len(ms) != 0 {
		t.Fatalf("migrate again: %v %+v, want nothing to do", err, ms)
	}
	s := openIn(t, schema, postgres.WithAutoMigrate(false))
	defer s.Close()
	if _, _, err := s.RunCreate(ctx, store.RunCreateParams{ID: "r", Agent: "a", Entries: entry()}); err != nil {
		t.Fatal(err)
	}
}

func TestMigrateConcurrently(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			s, err := postgres.Open(t.Context(), pgtest.URL(t), postgres.WithSchema(schema))
			if err == nil {
				err = s.Close()
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatalf("concurrent open: %v", err)
		}
	}
}

func TestRefuseNewerSchema(t *testing.T) {
	t.Parallel()
	ctx, url, schema := t.Context(), pgtest.URL(t), newSchema(t)
	openIn(t, schema).Close()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `INSERT INTO `+pgx.Identifier{schema, "hitch_migrations"}.Sanitize()+
		` (version, name) VALUES ($1, 'from_the_future')`, postgres.SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	for _, opts := range [][]postgres.Option{{}, {postgres.WithAutoMigrate(false)}} {
		s, err := postgres.Open(ctx, url, append(opts, postgres.WithSchema(schema))...)
		storetest.OpenRefused(t, s, err, "newer than this build", schema)
	}
	if _, err := postgres.Migrate(ctx, url, true, postgres.WithSchema(schema)); err == nil {
		t.Fatal("dry-run migration of a newer schema succeeded")
	}
}

func TestRefuseOlderSchemaWithoutAutoMigrate(t *testing.T) {
	t.Parallel()
	ctx, url, schema := t.Context(), pgtest.URL(t), newSchema(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	s, err := postgres.Open(ctx, url, postgres.WithSchema(schema), postgres.WithAutoMigrate(false))
	storetest.OpenRefused(t, s, err, "older than this build", "migrat")
}

func TestSchemasAreSeparate(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	a, b := open(t), open(t)
	defer a.Close()
	defer b.Close()
	if _, _, err := a.RunCreate(ctx, store.RunCreateParams{ID: "r", Agent: "a", Entries: entry()}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.RunGet(ctx, "r"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("run of schema a seen in schema b: %v", err)
	}
	if _, created, err := b.RunCreate(ctx, store.RunCreateParams{ID: "r", Agent: "b", Entries: entry()}); err != nil || !created {
		t.Fatalf("same id in another schema: created=%v %v", created, err)
	}
}

// TestOpenBadOptions needs no database: options are checked before
// connecting.
func TestOpenBadOptions(t *testing.T) {
	t.Parallel()
	url := "postgres://nobody@127.0.0.1:1/none?connect_timeout=1"
	for _, tc := range []struct {
		opt  postgres.Option
		want string
	}{
		{postgres.WithSchema(""), "WithSchema"},
		{postgres.WithSchema(strings.Repeat("s", 64)), "WithSchema"},
		{postgres.WithMaxConns(0), "WithMaxConns"},
		{postgres.WithMaxConns(postgres.MaxConns + 1), "WithMaxConns"},
		{postgres.WithPollInterval(0), "WithPollInterval"},
		{postgres.WithPollInterval(2 * time.Hour), "WithPollInterval"},
	} {
		s, err := postgres.Open(t.Context(), url, tc.opt)
		storetest.OpenRefused(t, s, err, tc.want)
	}
	if _, err := postgres.Open(t.Context(), "postgres://%zz"); err == nil || !strings.Contains(err.Error(), "connection string") {
		t.Fatalf("open of a bad URL: %v", err)
	}
}

func TestClock(t *testing.T) {
	t.Parallel()
	at := time.Date(2030, 1, 2, 3, 4, 5, 678901234, time.FixedZone("X", 3600))
	s := open(t, postgres.WithClock(func() time.Time { return at }))
	defer s.Close()
	want := time.Date(2030, 1, 2, 2, 4, 5, 678901000, time.UTC)
	now, err := s.Now(t.Context())
	if err != nil || !now.Equal(want) || now.Location() != time.UTC {
		t.Fatalf("now %v %v, want %v in UTC", now, err, want)
	}
	run, _, err := s.RunCreate(t.Context(), store.RunCreateParams{ID: "r", Agent: "a", Entries: entry()})
	if err != nil {
		t.Fatal(err)
	}
	ls, err := s.LeaseClaim(t.Context(), store.LeaseClaimParams{Owner: "o", TTL: time.Minute, Limit: 1})
	if err != nil || len(ls) != 1 {
		t.Fatalf("claim: %v %v", err, ls)
	}
	es, err := s.JournalRead(t.Context(), store.JournalReadParams{RunID: "r"})
	if err != nil || len(es) != 1 {
		t.Fatal(err)
	}
	if !run.CreatedAt.Equal(want) || !es[0].At.Equal(want) || !ls[0].ExpiresAt.Equal(want.Add(time.Minute)) {
		t.Fatalf("created %v, entry at %v, lease until %v; want %v and a minute later", run.CreatedAt, es[0].At,
			ls[0].ExpiresAt, want)
	}
}

// TestDatabaseClock checks that, without WithClock, the store's clock is
// the database's and not the process's.
func TestDatabaseClock(t *testing.T) {
	t.Parallel()
	s := open(t)
	defer s.Close()
	conn, err := pgx.Connect(t.Context(), pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	var before, after time.Time
	if err := conn.QueryRow(t.Context(), `SELECT clock_timestamp()`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	now, err := s.Now(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(t.Context(), `SELECT clock_timestamp()`).Scan(&after); err != nil {
		t.Fatal(err)
	}
	if now.Before(before.Truncate(time.Microsecond)) || now.After(after) {
		t.Fatalf("store clock %v outside the database's [%v, %v]", now, before, after)
	}
}

func TestClosed(t *testing.T) {
	t.Parallel()
	s := open(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if _, err := s.RunGet(t.Context(), "r"); !errors.Is(err, postgres.ErrClosed) {
		t.Fatalf("read after close: %v", err)
	}
	if _, _, err := s.RunCreate(t.Context(), store.RunCreateParams{ID: "r", Agent: "a", Entries: entry()}); !errors.Is(err, postgres.ErrClosed) {
		t.Fatalf("write after close: %v", err)
	}
}

// TestTwoNodes runs two stores (two pools, as two nodes would) on one
// schema: a run claimed by one is fenced off from the other.
func TestTwoNodes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	a, b := twoNodes(t)
	if _, _, err := a.RunCreate(ctx, store.RunCreateParams{ID: "r", Agent: "a", Entries: entry()}); err != nil {
		t.Fatal(err)
	}
	ls, err := b.LeaseClaim(ctx, store.LeaseClaimParams{Owner: "b", TTL: time.Hour})
	if err != nil || len(ls) != 1 {
		t.Fatalf("claim on b: %v %v", err, ls)
	}
	if ls, err := a.LeaseClaim(ctx, store.LeaseClaimParams{Owner: "a", TTL: time.Hour}); err != nil || len(ls) != 0 {
		t.Fatalf("claim on a: %v %v, want nothing", err, ls)
	}
	_, err = a.LeaseClaim(ctx, store.LeaseClaimParams{Owner: "a", TTL: time.Hour, RunID: "r"})
	var held *store.LeaseHeldError
	if !errors.As(err, &held) || held.Owner != "b" {
		t.Fatalf("claim by id on a: %v", err)
	}
	if _, err := a.JournalAppend(ctx, store.JournalAppendParams{RunID: "r", Token: ls[0].Token, After: 1,
		Entries: entry(), Status: hitchtype.StatusCompleted}); err != nil {
		t.Fatalf("append with b's token through a: %v", err)
	}
}

// TestFamilyEndsAtOnce ends a parent and all its children at the same
// moment, from many connections: the ends lock rows in different orders
// (a parent locks its children, a child its parent), and whatever
// PostgreSQL aborts to break a deadlock is tried again, so every end
// succeeds.
func TestFamilyEndsAtOnce(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := open(t, postgres.WithMaxConns(16))
	defer s.Close()
	const kids = 12
	for round := range 3 {
		root := fmt.Sprint("root", round)
		if _, _, err := s.RunCreate(ctx, store.RunCreateParams{ID: root, Agent: "a", Entries: entry()}); err != nil {
			t.Fatal(err)
		}
		var leases []store.Lease
		for i := range kids {
			id := fmt.Sprintf("%s-kid%d", root, i)
			if _, _, err := s.RunCreate(ctx, store.RunCreateParams{ID: id, RootID: root, ParentID: root, Depth: 1,
				Agent: "a", Entries: entry()}); err != nil {
				t.Fatal(err)
			}
		}
		ls, err := s.LeaseClaim(ctx, store.LeaseClaimParams{Owner: "o", TTL: time.Hour, Limit: kids + 1})
		if err != nil || len(ls) != kids+1 {
			t.Fatalf("claim: %v, %d leases", err, len(ls))
		}
		leases = append(leases, ls...)
		var wg sync.WaitGroup
		errs := make(chan error, len(leases))
		start := make(chan struct{})
		for _, l := range leases {
			wg.Go(func() {
				<-start
				_, err := s.JournalAppend(ctx, store.JournalAppendParams{RunID: l.Run.ID, Token: l.Token, After: 1,
					Entries: entry(), Status: hitchtype.StatusCompleted})
				errs <- err
			})
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
	}
}

// TestJournalGap deletes journal rows behind the store's back: a read that
// should hold a missing position is refused with store.ErrCorrupt, naming
// the run, and reads that do not reach the gap still answer.
func TestJournalGap(t *testing.T) {
	t.Parallel()
	ctx, schema := t.Context(), newSchema(t)
	s := openIn(t, schema)
	defer s.Close()
	if _, _, err := s.RunCreate(ctx, store.RunCreateParams{ID: "r", Agent: "a", Entries: []store.EntryInput{
		{Kind: "k", Data: []byte(`1`)}, {Kind: "k", Data: []byte(`2`)}, {Kind: "k", Data: []byte(`3`)},
		{Kind: "k", Data: []byte(`4`)}, {Kind: "k", Data: []byte(`5`)}}}); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `DELETE FROM `+pgx.Identifier{schema, "hitch_journal"}.Sanitize()+` WHERE pos IN (2, 5)`); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		after   int64
		limit   int
		corrupt bool
	}{
		{0, 0, true},  // 2 is missing
		{0, 1, false}, // reads 1 only
		{1, 0, true},
		{2, 2, false}, // 3 and 4
		{2, 0, true},  // 5, the last, is missing
		{4, 0, true},
		{5, 0, false}, // nothing after the end
	} {
		es, err := s.JournalRead(ctx, store.JournalReadParams{RunID: "r", After: tc.after, Limit: tc.limit})
		if tc.corrupt != errors.Is(err, store.ErrCorrupt) || (err != nil && !strings.Contains(err.Error(), `"r"`)) {
			t.Fatalf("read after %d limit %d: %v (%d entries), corrupt=%v wanted", tc.after, tc.limit, err, len(es), tc.corrupt)
		}
		if !tc.corrupt && err != nil {
			t.Fatalf("read after %d limit %d: %v", tc.after, tc.limit, err)
		}
	}
}

// TestSessionStartTwoNodes starts the same session's next submission from
// two stores (two pools, as two nodes have) at once, many times over:
// exactly one start wins each time, and the loser is told the session is
// busy or its message is taken.
func TestSessionStartTwoNodes(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	a, b := twoNodes(t)
	const rounds = 20
	for i := range rounds {
		sid := fmt.Sprintf("s%d", i)
		if _, _, err := a.SessionCreate(ctx, store.SessionCreateParams{ID: sid, Agent: "a"}); err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(hitchtype.MessageAdmitted{ID: "m", Mode: hitchtype.ModeQueue, Text: "hi"})
		res, err := b.SessionAppend(ctx, store.SessionAppendParams{SessionID: sid, After: store.AnyPosition,
			Kind: hitchtype.KindMessageAdmitted, Data: data})
		if err != nil {
			t.Fatal(err)
		}
		errs := make(chan error, 2)
		for j, node := range []*postgres.Store{a, b} {
			go func() {
				run := fmt.Sprintf("run-%s-%d", sid, j)
				_, _, err := node.SessionStart(ctx, store.SessionStartParams{SessionID: sid, MessageID: "m",
					MessageVersion: res.Entry.Pos, Data: json.RawMessage(`{}`),
					Run: store.RunCreateParams{ID: run, Agent: "a", Entries: entry()}})
				errs <- err
			}()
		}
		won := 0
		for range 2 {
			err := <-errs
			var busy *store.SessionBusyError
			var taken *store.MessageStateError
			switch {
			case err == nil:
				won++
			case errors.As(err, &busy), errors.As(err, &taken):
			default:
				t.Fatalf("round %d: start refused with %v, want busy or message taken", i, err)
			}
		}
		if won != 1 {
			t.Fatalf("round %d: %d nodes started a submission, want 1", i, won)
		}
		s, err := a.SessionGet(ctx, sid)
		if err != nil || s.ActiveRun == "" || s.Queued != 0 || s.Position != 2 {
			t.Fatalf("round %d: session %+v %v", i, s, err)
		}
	}
}

// TestGroupedAppends appends from many runners at once, each to its own
// run, through one store: the appends share statements (entries of
// different runs carry one statement time), every journal is whole, and a
// refused append in a group (a stale token, a wrong position) is refused
// alone, the others of its group written.
func TestGroupedAppends(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s := open(t)
	defer s.Close()
	const runners, appends = 32, 10
	tokens := make([]int64, runners)
	for i := range runners {
		id := fmt.Sprintf("r%d", i)
		if _, _, err := s.RunCreate(ctx, store.RunCreateParams{ID: id, Agent: "a", Entries: entry()}); err != nil {
			t.Fatal(err)
		}
		ls, err := s.LeaseClaim(ctx, store.LeaseClaimParams{Owner: "me", TTL: time.Hour, RunID: id})
		if err != nil {
			t.Fatal(err)
		}
		tokens[i] = ls[0].Token
	}
	var wg sync.WaitGroup
	errs := make(chan error, 2*runners*appends)
	for i := range runners {
		id := fmt.Sprintf("r%d", i)
		wg.Go(func() {
			for n := range int64(appends) {
				got, err := s.JournalAppend(ctx, store.JournalAppendParams{RunID: id, Token: tokens[i], After: 1 + 2*n,
					Entries: []store.EntryInput{{Kind: "a", Data: json.RawMessage(`{}`)}, {Kind: "b", Data: json.RawMessage(`{}`)}}})
				if err != nil || got.Position != 3+2*n || got.Status != hitchtype.StatusRunning || got.LeaseOwner != "me" {
					errs <- fmt.Errorf("%s append %d: %+v %v", id, n, got, err)
				}
				// Refused appends ride the same groups and stop nothing.
				_, err = s.JournalAppend(ctx, store.JournalAppendParams{RunID: id, Token: tokens[i] - 1, After: 3 + 2*n, Entries: entry()})
				if !errors.Is(err, store.ErrFenced) {
					errs <- fmt.Errorf("%s stale append %d: %v, want fenced", id, n, err)
				}
				_, err = s.JournalAppend(ctx, store.JournalAppendParams{RunID: id, Token: tokens[i], After: 1 + 2*n, Entries: entry()})
				if !errors.Is(err, store.ErrConflict) {
					errs <- fmt.Errorf("%s replayed append %d: %v, want a conflict", id, n, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	runsAt := map[time.Time]map[string]bool{}
	for i := range runners {
		id := fmt.Sprintf("r%d", i)
		es, err := s.JournalRead(ctx, store.JournalReadParams{RunID: id})
		if err != nil || len(es) != 1+2*appends {
			t.Fatalf("%s: %d entries, %v", id, len(es), err)
		}
		for _, e := range es[1:] {
			if runsAt[e.At] == nil {
				runsAt[e.At] = map[string]bool{}
			}
			runsAt[e.At][id] = true
		}
	}
	shared := 0
	for _, ids := range runsAt {
		if len(ids) > 1 {
			shared++
		}
	}
	if shared == 0 {
		t.Errorf("no two runs' appends shared a statement in %d appends from %d runners", runners*appends, runners)
	}
}

// A write is answered only after its commit: a child process writing is
// killed part-way, and every answered write must be in the schema.
func TestDurableCommit(t *testing.T) {
	storetest.RunDurable(t, func(t *testing.T) string { return newSchema(t) },
		func(t *testing.T, schema string) store.Store {
			s := openIn(t, schema)
			t.Cleanup(func() { s.Close() })
			return s
		})
}
