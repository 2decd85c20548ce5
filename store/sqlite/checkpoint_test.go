package sqlite_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/sqlite"
)

// TestCheckpointer checks that the checkpointer, not the writer, copies the
// WAL into the database file: with it the file grows soon after a hundred
// pages are committed; without it (the writer checkpointing every
// 1,000 pages) the file has not grown.
func TestCheckpointer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		interval time.Duration
	}{{"off", 0}, {"on", time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "hitch.db")
			s := open(t, path, sqlite.WithCheckpointInterval(tc.interval))
			defer s.Close()
			size := func() int64 { return fileSize(t, path) }
			before := size()
			// One commit of about a hundred pages, well under 1,000.
			es := make([]store.EntryInput, 100)
			for i := range es {
				es[i] = store.EntryInput{Kind: "k", Data: []byte(`"` + strings.Repeat("x", 2000) + `"`)}
			}
			if _, _, err := s.RunCreate(t.Context(), store.RunCreateParams{ID: "r", Agent: "a", Entries: es}); err != nil {
				t.Fatal(err)
			}
			if tc.interval == 0 {
				if after := size(); after != before {
					t.Fatalf("without a checkpointer the file went from %d to %d bytes: the writer checkpointed", before, after)
				}
				return
			}
			deadline := time.Now().Add(30 * time.Second)
			for size() < before+100*2000 {
				if time.Now().After(deadline) {
					t.Fatalf("the file stayed at %d bytes (%d before the writes): no checkpoint", size(), before)
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
}
