package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/store"
)

func openT(t *testing.T, path string, opts ...Option) *Store {
	t.Helper()
	s, err := Open(t.Context(), path, opts...)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// rawExec runs statements on the file directly, behind the store's back.
func rawExec(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open(driverName, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func TestSchemaVersion(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hitch.db")
	s := openT(t, path)
	var version, appID int
	if err := s.rdb.QueryRow("PRAGMA user_version").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if err := s.rdb.QueryRow("PRAGMA application_id").Scan(&appID); err != nil {
		t.Fatal(err)
	}
	names, _ := migrationFS.ReadDir("migrations")
	if version != len(names) || appID != applicationID {
		t.Fatalf("user_version %d application_id %#x, want %d and %#x", version, appID, len(names), applicationID)
	}
	var mode string
	if err := s.rdb.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Fatalf("journal mode %q (%v), want wal", mode, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Opening again leaves a current schema alone.
	s = openT(t, path)
	s.Close()

	rawExec(t, path, fmt.Sprintf("PRAGMA user_version = %d", len(names)+1))
	_, err := Open(t.Context(), path)
	if err == nil || !strings.Contains(err.Error(), "newer") || !strings.Contains(err.Error(), path) {
		t.Fatalf("open of a newer schema: %v", err)
	}
}

// TestForeignDatabase opens other applications' files: each is refused with
// an error naming it, and is left exactly as it was, byte for byte, with no
// companion files added.
func TestForeignDatabase(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		name  string
		stmts []string
		want  string
	}{
		{"other application", []string{"PRAGMA application_id = 1234"}, "another application"},
		{"other application with tables", []string{"CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)",
			"INSERT INTO users (name) VALUES ('ada')", "PRAGMA application_id = 1234", "PRAGMA user_version = 3"},
			"another application"},
		{"tables without version", []string{"CREATE TABLE notes (x)"}, "not a hitch store"},
		{"version without our id", []string{"CREATE TABLE notes (x)", "PRAGMA user_version = 1"}, "not a hitch store"},
		{"version only", []string{"PRAGMA user_version = 7"}, "not a hitch store"},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".db")
		rawExec(t, path, tc.stmts...)
		before := fileState(t, dir)
		_, err := Open(t.Context(), path)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Fatalf("%s: got %v, want an error naming the file and %q", tc.name, err, tc.want)
		}
		if after := fileState(t, dir); !maps.Equal(before, after) {
			t.Fatalf("%s: refusing the file changed the directory:\nbefore %v\nafter  %v", tc.name, before, after)
		}
	}
}

// fileState maps each file in dir to a hash of its bytes.
func fileState(t *testing.T, dir string) map[string]string {
	t.Helper()
	names, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	state := map[string]string{}
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(dir, n.Name()))
		if err != nil {
			t.Fatal(err)
		}
		state[n.Name()] = fmt.Sprintf("%x", sha256.Sum256(b))
	}
	return state
}

// stall blocks the writer inside a request until the returned release is
// called, so that a test can queue requests deterministically behind it.
func stall(t *testing.T, s *Store) (release func()) {
	t.Helper()
	entered, gate := make(chan struct{}), make(chan struct{})
	go func() {
		_ = s.write(context.Background(), func(*wtx) error {
			close(entered)
			<-gate
			return nil
		})
	}()
	<-entered
	return func() { close(gate) }
}

// waitQueued waits until n requests sit in the writer's queues.
func waitQueued(s *Store, n int) {
	for len(s.queue)+len(s.urgent) < n {
		runtime.Gosched()
	}
}

func createParams(id string) store.RunCreateParams {
	return store.RunCreateParams{ID: id, Agent: "a", Entries: []store.EntryInput{{Kind: "k", Data: []byte(`{}`)}}}
}

// TestGroupCommitIsolation queues writes behind a stalled writer so that they
// share one transaction, and checks that a failing write — including one that
// wrote before failing, in a savepoint or in none (a fenced write) — takes
// nothing else down with it.
func TestGroupCommitIsolation(t *testing.T) {
	t.Parallel()
	s := openT(t, filepath.Join(t.TempDir(), "hitch.db"))
	ctx := t.Context()
	if _, _, err := s.RunCreate(ctx, createParams("r")); err != nil {
		t.Fatal(err)
	}
	ls, err := s.LeaseClaim(ctx, store.LeaseClaimParams{Owner: "me", TTL: 3600e9, RunID: "r"})
	if err != nil {
		t.Fatal(err)
	}
	token := ls[0].Token

	release := stall(t, s)
	type result struct {
		name string
		err  error
	}
	results := make(chan result, 8)
	var wg sync.WaitGroup
	do := func(name string, f func() error) {
		wg.Go(func() { results <- result{name, f()} })
	}
	appendAt := func(after int64) func() error {
		return func() error {
			_, err := s.JournalAppend(ctx, store.JournalAppendParams{RunID: "r", Token: token, After: after,
				Entries: []store.EntryInput{{Kind: "k", Data: []byte(fmt.Sprint(after))}}})
			return err
		}
	}
	do("create a", func() error { _, _, err := s.RunCreate(ctx, createParams("a")); return err })
	waitQueued(s, 1)
	do("append 1", appendAt(1))
	waitQueued(s, 2)
	do("append 1 again", appendAt(1))
	waitQueued(s, 3)
	do("write then fail", func() error {
		return s.write(ctx, func(tx *wtx) error {
			if _, err := tx.insertRun.Exec("ghost", "ghost", "", 0, "a", 0, "", 0, 1, 1, "default", "", "", 0, ""); err != nil {
				return err
			}
			return errors.New("changed my mind")
		})
	})
	waitQueued(s, 4)
	do("append 2", appendAt(2))
	waitQueued(s, 5)
	do("fenced write then fail", func() error {
		return s.writeFenced(ctx, func(tx *wtx) error {
			if _, err := tx.insertRun.Exec("ghost2", "ghost2", "", 0, "a", 0, "", 0, 1, 1, "default", "", "", 0, ""); err != nil {
				return err
			}
			return errors.New("broke after writing")
		})
	})
	waitQueued(s, 6)
	do("create b", func() error { _, _, err := s.RunCreate(ctx, createParams("b")); return err })
	waitQueued(s, 7)
	release() // all seven are queued, so they share the next transaction
	wg.Wait()
	close(results)

	got := map[string]error{}
	for r := range results {
		got[r.name] = r.err
	}
	for _, name := range []string{"create a", "append 1", "append 2", "create b"} {
		if got[name] != nil {
			t.Errorf("%s: %v", name, got[name])
		}
	}
	if !errors.Is(got["append 1 again"], store.ErrConflict) {
		t.Errorf("append 1 again: %v, want a conflict", got["append 1 again"])
	}
	if got["write then fail"] == nil || !strings.Contains(got["write then fail"].Error(), "changed my mind") {
		t.Errorf("write then fail: %v", got["write then fail"])
	}
	if got["fenced write then fail"] == nil || !strings.Contains(got["fenced write then fail"].Error(), "broke after writing") {
		t.Errorf("fenced write then fail: %v", got["fenced write then fail"])
	}
	for _, id := range []string{"ghost", "ghost2"} {
		if _, err := s.RunGet(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("the failed write's row %s survived: %v", id, err)
		}
	}
	if run, err := s.RunGet(ctx, "r"); err != nil || run.Position != 3 {
		t.Errorf("run r: %v position %d, want 3", err, run.Position)
	}
}

// TestBatchSizeBound queues more writes than one batch may hold and checks
// that every one of them is committed.
func TestBatchSizeBound(t *testing.T) {
	t.Parallel()
	s := openT(t, filepath.Join(t.TempDir(), "hitch.db"), WithBatchSize(4), WithQueueSize(64))
	release := stall(t, s)
	var wg sync.WaitGroup
	errs := make([]error, 10)
	for i := range errs {
		wg.Go(func() { _, _, errs[i] = s.RunCreate(t.Context(), createParams(fmt.Sprint("r", i))) })
	}
	waitQueued(s, len(errs))
	release()
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	runs, err := s.RunList(t.Context(), store.RunListParams{})
	if err != nil || len(runs) != len(errs) {
		t.Fatalf("list: %v, %d runs, want %d", err, len(runs), len(errs))
	}
}

// TestCreateAheadOfQueue checks that a run's creation commits ahead of the
// writes queued before it, in a transaction of its own: the write queued
// first sees the run committed when it runs.
func TestCreateAheadOfQueue(t *testing.T) {
	t.Parallel()
	s := openT(t, filepath.Join(t.TempDir(), "hitch.db"))
	ctx := t.Context()
	release := stall(t, s)
	seen := make(chan error, 1)
	go func() {
		_ = s.write(ctx, func(*wtx) error {
			_, err := s.RunGet(ctx, "c") // a reader sees only what is committed
			seen <- err
			return nil
		})
	}()
	waitQueued(s, 1)
	created := make(chan error, 1)
	go func() { _, _, err := s.RunCreate(ctx, createParams("c")); created <- err }()
	waitQueued(s, 2)
	release()
	if err := <-created; err != nil {
		t.Fatalf("create: %v", err)
	}
	if err := <-seen; err != nil {
		t.Fatalf("the write queued before the create ran before the create was committed: %v", err)
	}
}

// TestQueuedCallerGone checks that a queued write whose caller gave up is
// skipped, not written.
func TestQueuedCallerGone(t *testing.T) {
	t.Parallel()
	s := openT(t, filepath.Join(t.TempDir(), "hitch.db"))
	release := stall(t, s)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { _, _, err := s.RunCreate(ctx, createParams("r")); done <- err }()
	waitQueued(s, 1)
	cancel()
	release()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("create: %v, want context.Canceled", err)
	}
	if _, err := s.RunGet(t.Context(), "r"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("abandoned write was committed: %v", err)
	}
}

// TestCloseAnswersQueued closes the store while writes wait behind a stalled
// writer: each is answered with ErrClosed and none is written.
func TestCloseAnswersQueued(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hitch.db")
	s, err := Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	release := stall(t, s)
	errs := make(chan error, 5)
	for i := range cap(errs) {
		go func() { _, _, err := s.RunCreate(context.Background(), createParams(fmt.Sprint("r", i))); errs <- err }()
	}
	waitQueued(s, cap(errs))
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	// Close must wait for the stalled request to finish; let it.
	for !s.closed.Load() {
		runtime.Gosched()
	}
	release()
	if err := <-closed; err != nil {
		t.Fatalf("close: %v", err)
	}
	for range cap(errs) {
		if err := <-errs; !errors.Is(err, ErrClosed) {
			t.Fatalf("queued write: %v, want ErrClosed", err)
		}
	}
	s = openT(t, path)
	if runs, err := s.RunList(t.Context(), store.RunListParams{}); err != nil || len(runs) != 0 {
		t.Fatalf("after close: %v, %d runs written, want none", err, len(runs))
	}
}

// TestRetriedBatchChargesOnce puts a budget charge in a batch with a write
// that ends the shared transaction behind the writer's back. The writer then
// rolls everything back and runs the charge again in a fresh transaction; the
// charge must count once.
func TestRetriedBatchChargesOnce(t *testing.T) {
	t.Parallel()
	s := openT(t, filepath.Join(t.TempDir(), "hitch.db"))
	ctx := t.Context()
	p := createParams("root")
	p.Budget = &store.Budget{Tokens: 1000}
	if _, _, err := s.RunCreate(ctx, p); err != nil {
		t.Fatal(err)
	}
	ls, err := s.LeaseClaim(ctx, store.LeaseClaimParams{Owner: "me", TTL: time.Hour, RunID: "root"})
	if err != nil {
		t.Fatal(err)
	}

	release := stall(t, s)
	var wg sync.WaitGroup
	var chargeErr, appendErr, breakErr error
	wg.Go(func() {
		_, chargeErr = s.BudgetCharge(ctx, store.BudgetChargeParams{RootID: "root", Charge: store.Budget{Tokens: 10}})
	})
	waitQueued(s, 1)
	wg.Go(func() {
		_, appendErr = s.JournalAppend(ctx, store.JournalAppendParams{RunID: "root", Token: ls[0].Token, After: 1,
			Entries: []store.EntryInput{{Kind: "k", Data: []byte(`{}`)}},
			Charge:  &store.BudgetCharge{Charge: store.Budget{Tokens: 100}}})
	})
	waitQueued(s, 2)
	wg.Go(func() {
		breakErr = s.write(ctx, func(tx *wtx) error {
			if _, err := tx.rollback.Exec(); err != nil {
				return err
			}
			return errors.New("ended the transaction")
		})
	})
	waitQueued(s, 3)
	release()
	wg.Wait()
	if chargeErr != nil || appendErr != nil {
		t.Fatalf("charge: %v; append: %v", chargeErr, appendErr)
	}
	if breakErr == nil {
		t.Fatal("the breaking write succeeded")
	}
	_, used, _, err := s.BudgetGet(ctx, "root")
	if err != nil || used.Tokens != 110 {
		t.Fatalf("use %+v (%v), want 110 tokens: a retried batch counted a charge twice", used, err)
	}
	if run, err := s.RunGet(ctx, "root"); err != nil || run.Position != 2 {
		t.Fatalf("run: %v position %d, want 2", err, run.Position)
	}
}

// TestJournalGap deletes journal rows behind the store's back: a read that
// spans a missing position is refused as corruption, never answered as if
// the journal were whole.
func TestJournalGap(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hitch.db")
	s := openT(t, path)
	ctx := t.Context()
	p := createParams("r")
	for range 4 {
		p.Entries = append(p.Entries, store.EntryInput{Kind: "k", Data: []byte(`{}`)})
	}
	if _, _, err := s.RunCreate(ctx, p); err != nil { // positions 1..5
		t.Fatal(err)
	}
	rawExec(t, path, "DELETE FROM journal WHERE pos = 3", "DELETE FROM journal WHERE pos = 5")
	for _, tc := range []struct {
		after   int64
		limit   int
		corrupt bool
		want    int
	}{
		{0, 0, true, 0},
		{0, 2, false, 2}, // 1, 2: whole as far as it goes
		{1, 2, true, 0},  // 2, then 4 instead of 3
		{3, 1, false, 1}, // 4
		{3, 0, true, 0},  // 4, then nothing where 5 should be
		{4, 0, true, 0},  // nothing where 5 should be
		{5, 0, false, 0},
	} {
		es, err := s.JournalRead(ctx, store.JournalReadParams{RunID: "r", After: tc.after, Limit: tc.limit})
		if tc.corrupt {
			if !errors.Is(err, store.ErrCorrupt) || !strings.Contains(err.Error(), `"r"`) {
				t.Fatalf("read after %d limit %d: %v (%d entries), want ErrCorrupt naming the run", tc.after, tc.limit, err, len(es))
			}
			continue
		}
		if err != nil || len(es) != tc.want {
			t.Fatalf("read after %d limit %d: %v, %d entries, want %d", tc.after, tc.limit, err, len(es), tc.want)
		}
	}
}

// TestWriteStatementPreparedAtUse: the writer prepares a statement the first
// time it runs, so one that cannot be prepared fails the write that uses it,
// with the reason, writing nothing; other writes go on, and the statement is
// tried again at its next use.
func TestWriteStatementPreparedAtUse(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "s.db")
	s := openT(t, path)
	entry := []store.EntryInput{{Kind: "run.started", Data: []byte(`{}`)}}
	if _, _, err := s.RunCreate(ctx, store.RunCreateParams{ID: "plain", Agent: "a", Entries: entry}); err != nil {
		t.Fatal(err)
	}
	rawExec(t, path, "ALTER TABLE budgets RENAME TO budgets_away")
	withBudget := store.RunCreateParams{ID: "budgeted", Agent: "a", Entries: entry, Budget: &store.Budget{Tokens: 10}}
	_, _, err := s.RunCreate(ctx, withBudget)
	if err == nil || !strings.Contains(err.Error(), "prepare write statement") || !strings.Contains(err.Error(), "budgets") {
		t.Fatalf("create with a budget and no budgets table: %v, want the statement's preparation failing", err)
	}
	if _, err := s.RunGet(ctx, "budgeted"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the refused create wrote its run: %v", err)
	}
	if _, _, err := s.RunCreate(ctx, store.RunCreateParams{ID: "plain2", Agent: "a", Entries: entry}); err != nil {
		t.Fatalf("a write that does not use the statement: %v", err)
	}
	rawExec(t, path, "ALTER TABLE budgets_away RENAME TO budgets")
	if _, _, err := s.RunCreate(ctx, withBudget); err != nil {
		t.Fatalf("create with a budget once the table is back: %v", err)
	}
	if _, _, ok, err := s.BudgetGet(ctx, "budgeted"); err != nil || !ok {
		t.Fatalf("budget after the create: ok %v, %v", ok, err)
	}
}
