package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/sqlite"
)

// longJournal makes a run of n entries in st, most of them model
// contexts, with root grants and revocations among them at the given
// positions (each index of changes is a position; its value the change).
func longJournal(tb testing.TB, st store.Store, id string, n int, changes map[int]RootChange) {
	tb.Helper()
	ctx := context.Background()
	first := entry(KindRunStarted, RunStarted{Agent: "a", Version: 1, Input: "fill"})
	if _, _, err := st.RunCreate(ctx, store.RunCreateParams{ID: id, Agent: "a", Version: 1, Entries: []store.EntryInput{first}}); err != nil {
		tb.Fatal(err)
	}
	ls, err := st.LeaseClaim(ctx, store.LeaseClaimParams{Owner: "fill", TTL: 3600e9, RunID: id})
	if err != nil {
		tb.Fatal(err)
	}
	filler := entry(KindContext, Context{Tools: []string{"glob", "read", "grep"}, Instructions: "Work through the list, one file at a time."})
	pos := int64(1)
	for pos < int64(n) {
		batch := make([]store.EntryInput, 0, store.MaxEntries)
		for len(batch) < store.MaxEntries && pos+int64(len(batch)) < int64(n) {
			at := int(pos) + len(batch) + 1
			if ch, ok := changes[at]; ok {
				kind := KindRootGranted
				if ch.Revoke {
					kind = KindRootRevoked
				}
				batch = append(batch, entry(kind, RootChanged{Path: ch.Path, By: "ops"}))
				continue
			}
			batch = append(batch, filler)
		}
		if _, err := st.JournalAppend(ctx, store.JournalAppendParams{RunID: id, Token: ls[0].Token, After: pos, Entries: batch}); err != nil {
			tb.Fatal(err)
		}
		pos += int64(len(batch))
	}
}

func openStore(tb testing.TB) store.Store {
	tb.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(tb.TempDir(), "engine.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	return st
}

// TestRootsReadsOnlyGrants lists roots from the grants and revocations
// alone, across read pages, and agrees with a fold of the whole journal.
func TestRootsReadsOnlyGrants(t *testing.T) {
	t.Parallel()
	st := openStore(t)
	e := New(Config{Store: st})
	changes := map[int]RootChange{
		5:    {Path: "/srv/a"},
		900:  {Path: "/srv/b"},
		1500: {Path: "/srv/a", Revoke: true},
		2100: {Path: "/srv/c"},
		2500: {Path: "/srv/a"},
	}
	// More grants than one read page holds.
	for i := range store.DefaultReadLimit + 10 {
		changes[3000+i] = RootChange{Path: fmt.Sprintf("/srv/many/%d", i%7), Revoke: i%2 == 1}
	}
	longJournal(t, st, "r", 5000, changes)
	got, err := e.Roots(t.Context(), "r")
	if err != nil {
		t.Fatal(err)
	}
	whole, err := e.foldRun(t.Context(), "r")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, whole.roots) {
		t.Fatalf("roots %v, the whole journal folds to %v", got, whole.roots)
	}
	if !slices.Contains(got, "/srv/a") || !slices.Contains(got, "/srv/c") || len(got) < 4 {
		t.Fatalf("roots %v: want /srv/a, /srv/b, /srv/c and some of /srv/many", got)
	}

	longJournal(t, st, "bare", 10, nil)
	if got, err := e.Roots(t.Context(), "bare"); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("roots of a run without grants: %v, %v; want an empty list", got, err)
	}
	if _, err := e.Roots(t.Context(), "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("roots of a missing run: %v, want ErrNotFound", err)
	}
}

// BenchmarkRoots lists the roots of a run of 50,000 entries with three
// grants among them: by kinds (what Roots does) and by folding the whole
// journal (what it did).
func BenchmarkRoots(b *testing.B) {
	st := openStore(b)
	e := New(Config{Store: st})
	longJournal(b, st, "big", 50000, map[int]RootChange{10: {Path: "/srv/a"}, 25000: {Path: "/srv/b"}, 49000: {Path: "/srv/c"}})
	b.Run("kinds", func(b *testing.B) {
		for b.Loop() {
			if roots, err := e.Roots(b.Context(), "big"); err != nil || len(roots) != 3 {
				b.Fatal(roots, err)
			}
		}
	})
	b.Run("fold", func(b *testing.B) {
		for b.Loop() {
			if st, err := e.foldRun(b.Context(), "big"); err != nil || len(st.roots) != 3 {
				b.Fatal(err)
			}
		}
	})
}
