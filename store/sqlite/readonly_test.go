package sqlite_test

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/sqlite"
	"github.com/hitch-dev/hitch/store/storetest"
)

// seed writes a small store at path: a root with a budget, a child, and an
// ended run, then closes it.
func seed(t *testing.T, path string) {
	t.Helper()
	s := open(t, path)
	defer s.Close()
	ctx := t.Context()
	e := []store.EntryInput{{Kind: "k", Data: []byte(`{"x":1}`)}}
	for _, p := range []store.RunCreateParams{
		{ID: "root", Agent: "a", Entries: e, Budget: &store.Budget{Tokens: 100}},
		{ID: "kid", RootID: "root", ParentID: "root", Depth: 1, Agent: "a", Entries: e},
	} {
		if _, _, err := s.RunCreate(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	ls, err := s.LeaseClaim(ctx, store.LeaseClaimParams{Owner: "me", TTL: time.Hour, RunID: "kid"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.JournalAppend(ctx, store.JournalAppendParams{RunID: "kid", Token: ls[0].Token, After: 1,
		Entries: e, Status: hitchtype.StatusCompleted, Charge: &store.BudgetCharge{Charge: store.Budget{Tokens: 7}}}); err != nil {
		t.Fatal(err)
	}
}

// checkReadOnly opens the seeded store at path read-only: every read a
// command like "runs show" makes works, every write is refused with
// ErrReadOnly, and the file is left as it was.
func checkReadOnly(t *testing.T, path string) {
	t.Helper()
	before := hashFile(t, path)
	s, err := sqlite.Open(t.Context(), path, sqlite.ReadOnly())
	if err != nil {
		t.Fatalf("read-only open: %v", err)
	}
	ctx := t.Context()
	if run, err := s.RunGet(ctx, "kid"); err != nil || run.Status != hitchtype.StatusCompleted || run.Position != 2 {
		t.Fatalf("run get: %v %+v", err, run)
	}
	if runs, err := s.RunList(ctx, store.RunListParams{RootID: "root"}); err != nil || len(runs) != 2 {
		t.Fatalf("run list: %v, %d runs", err, len(runs))
	}
	if es, err := s.JournalRead(ctx, store.JournalReadParams{RunID: "kid"}); err != nil || len(es) != 2 {
		t.Fatalf("journal read: %v, %d entries", err, len(es))
	}
	if _, used, ok, err := s.BudgetGet(ctx, "root"); err != nil || !ok || used.Tokens != 7 {
		t.Fatalf("budget get: %v %v %+v", err, ok, used)
	}
	if _, err := s.Now(ctx); err != nil {
		t.Fatal(err)
	}
	for name, write := range map[string]func() error{
		"create": func() error {
			_, _, err := s.RunCreate(ctx, store.RunCreateParams{ID: "new", Agent: "a",
				Entries: []store.EntryInput{{Kind: "k", Data: []byte(`{}`)}}})
			return err
		},
		"claim": func() error {
			_, err := s.LeaseClaim(ctx, store.LeaseClaimParams{Owner: "me", TTL: time.Hour})
			return err
		},
		"cancel": func() error { _, err := s.RunRequestCancel(ctx, store.RunRequestCancelParams{ID: "root"}); return err },
		"charge": func() error {
			_, err := s.BudgetCharge(ctx, store.BudgetChargeParams{RootID: "root", Charge: store.Budget{Tokens: 1}})
			return err
		},
	} {
		if err := write(); !errors.Is(err, sqlite.ErrReadOnly) {
			t.Fatalf("%s on a read-only store: %v, want ErrReadOnly", name, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, err := s.RunGet(ctx, "root"); !errors.Is(err, sqlite.ErrClosed) {
		t.Fatalf("read after close: %v", err)
	}
	if after := hashFile(t, path); after != before {
		t.Fatal("a read-only open changed the file")
	}
}

func hashFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

func TestReadOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "hitch.db")
	seed(t, path)
	checkReadOnly(t, path)

	// While a writer has the store open.
	w := open(t, path)
	defer w.Close()
	checkReadOnly(t, path)
}

func TestReadOnlyRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.db")
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{missing, "no store here"},
		{empty, "no store here"},
	} {
		s, err := sqlite.Open(t.Context(), tc.path, sqlite.ReadOnly())
		storetest.OpenRefused(t, s, err, tc.path, tc.want)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a read-only open created the file: %v", err)
	}
}
