package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/sqlite"
	"github.com/hitch-dev/hitch/store/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func open(t testing.TB, path string, opts ...sqlite.Option) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), path, opts...)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	return s
}

// fileSize is the size of the file at path.
func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestConformance, on a clock the suite drives, is in plan_test.go: the
// statements it runs are then checked for their query plans.

// The suite once more on the relaxed durability setting, which shares all
// code but the pragma, and on the real clock.
func TestConformanceSyncNormal(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, filepath.Join(t.TempDir(), "hitch.db"), sqlite.WithSync(sqlite.SyncNormal), sqlite.WithBatchSize(4))
	})
}

func TestReopenKeepsData(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "hitch.db")
	s := open(t, path)
	if _, _, err := s.RunCreate(ctx, store.RunCreateParams{ID: "r", Agent: "a",
		Entries: []store.EntryInput{{Kind: "k", Data: []byte(`{"x":1}`)}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = open(t, path)
	defer s.Close()
	run, err := s.RunGet(ctx, "r")
	if err != nil || run.Position != 1 {
		t.Fatalf("after reopen: %v %+v", err, run)
	}
}

func TestOpenBadPath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.db")
	if err := os.WriteFile(garbage, []byte(strings.Repeat("this is not a database\n", 400)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, want string
	}{
		{"empty", "", "path is empty"},
		{"missing directory", filepath.Join(dir, "no", "such", "dir", "hitch.db"), "directory"},
		{"directory", dir, "is a directory"},
		{"parent is a file", filepath.Join(garbage, "hitch.db"), "is not a directory"},
		{"memory", ":memory:", "must name a file"},
		{"uri", "file:x.db?mode=memory", "must name a file"},
		{"not a database", garbage, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := sqlite.Open(t.Context(), tc.path)
			storetest.OpenRefused(t, s, err, fmt.Sprintf("%q", tc.path), tc.want)
		})
	}
}

func TestOpenBadOptions(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hitch.db")
	for _, tc := range []struct {
		opt  sqlite.Option
		want string
	}{
		{sqlite.WithBatchSize(0), "WithBatchSize"},
		{sqlite.WithBatchSize(sqlite.MaxBatchSize + 1), "WithBatchSize"},
		{sqlite.WithQueueSize(0), "WithQueueSize"},
		{sqlite.WithReaders(0), "WithReaders"},
		{sqlite.WithBusyTimeout(-time.Second), "WithBusyTimeout"},
		{sqlite.WithBusyTimeout(sqlite.MaxBusyTimeout + time.Second), "WithBusyTimeout"},
		{sqlite.WithSync(sqlite.Sync(7)), "WithSync"},
		{sqlite.WithClock(nil), "WithClock"},
		{sqlite.WithCheckpointInterval(-time.Second), "WithCheckpointInterval"},
		{sqlite.WithCheckpointInterval(sqlite.MaxCheckpointInterval + time.Second), "WithCheckpointInterval"},
	} {
		s, err := sqlite.Open(t.Context(), path, tc.opt)
		storetest.OpenRefused(t, s, err, tc.want)
	}
	for _, n := range []int{1, sqlite.MaxBatchSize} {
		s := open(t, path, sqlite.WithBatchSize(n))
		s.Close()
	}
}

func TestClock(t *testing.T) {
	t.Parallel()
	at := time.Date(2030, 1, 2, 3, 4, 5, 678901234, time.FixedZone("X", 3600))
	s := open(t, filepath.Join(t.TempDir(), "hitch.db"), sqlite.WithClock(func() time.Time { return at }))
	defer s.Close()
	now, err := s.Now(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want := time.Date(2030, 1, 2, 2, 4, 5, 678901000, time.UTC)
	if !now.Equal(want) || now.Location() != time.UTC {
		t.Fatalf("now %v, want %v in UTC", now, want)
	}
	run, _, err := s.RunCreate(t.Context(), store.RunCreateParams{ID: "r", Agent: "a",
		Entries: []store.EntryInput{{Kind: "k", Data: []byte(`1`)}}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.RunGet(t.Context(), "r")
	if err != nil {
		t.Fatal(err)
	}
	if !run.CreatedAt.Equal(want) || !got.CreatedAt.Equal(want) || got.CreatedAt.Location() != time.UTC {
		t.Fatalf("created at %v / %v, want %v", run.CreatedAt, got.CreatedAt, want)
	}
}

// TestCloseWithWritesInFlight closes the store under a load of writers. Every
// write must be answered; every write answered with success must be on disk.
func TestCloseWithWritesInFlight(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "hitch.db")
	s := open(t, path, sqlite.WithQueueSize(8), sqlite.WithBatchSize(4))
	const writers = 16
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		created []string
		started = make(chan struct{}, writers)
	)
	for w := range writers {
		wg.Go(func() {
			for i := 0; ; i++ {
				id := fmt.Sprintf("w%d-%d", w, i)
				_, _, err := s.RunCreate(context.Background(), store.RunCreateParams{ID: id, Agent: "a",
					Entries: []store.EntryInput{{Kind: "k", Data: []byte(`{}`)}}})
				if i == 0 {
					started <- struct{}{}
				}
				if errors.Is(err, sqlite.ErrClosed) {
					return
				}
				if err != nil {
					t.Errorf("create %s: %v", id, err)
					return
				}
				mu.Lock()
				created = append(created, id)
				mu.Unlock()
			}
		})
	}
	for range writers {
		<-started
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if _, err := s.RunGet(t.Context(), "w0-0"); !errors.Is(err, sqlite.ErrClosed) {
		t.Fatalf("read after close: %v, want ErrClosed", err)
	}
	if _, _, err := s.RunCreate(t.Context(), store.RunCreateParams{ID: "late", Agent: "a",
		Entries: []store.EntryInput{{Kind: "k", Data: []byte(`{}`)}}}); !errors.Is(err, sqlite.ErrClosed) {
		t.Fatalf("write after close: %v, want ErrClosed", err)
	}

	s = open(t, path)
	defer s.Close()
	for _, id := range created {
		if _, err := s.RunGet(t.Context(), id); err != nil {
			t.Fatalf("acknowledged run %s lost: %v", id, err)
		}
	}
	t.Logf("%d runs acknowledged before close", len(created))
}

func TestCancelledContextWritesNothing(t *testing.T) {
	t.Parallel()
	s := open(t, filepath.Join(t.TempDir(), "hitch.db"))
	defer s.Close()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, _, err := s.RunCreate(ctx, store.RunCreateParams{ID: "r", Agent: "a",
		Entries: []store.EntryInput{{Kind: "k", Data: []byte(`{}`)}}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("create with a cancelled context: %v", err)
	}
	if _, err := s.RunGet(t.Context(), "r"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("run written despite the cancelled context: %v", err)
	}
}

// A write is answered only after its commit: a child process writing
// through the group-committing writer is killed part-way, and every
// answered write must be in the file.
func TestDurableCommit(t *testing.T) {
	storetest.RunDurable(t, func(t *testing.T) string {
		return filepath.Join(t.TempDir(), "hitch.db")
	}, func(t *testing.T, path string) store.Store {
		s := open(t, path)
		t.Cleanup(func() { s.Close() })
		return s
	})
}
