package sqlite_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/sqlite"
)

// TestPruneGivesSpaceBack: a new file uses incremental auto-vacuum, so a
// prune shrinks the file instead of leaving its pages free inside it.
func TestPruneGivesSpaceBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "hitch.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if mode, err := s.AutoVacuum(ctx); err != nil || mode != "incremental" {
		t.Fatalf("auto_vacuum of a new file = %q, %v", mode, err)
	}
	big, _ := json.Marshal(map[string]string{"text": strings.Repeat("x", 16<<10)})
	for i := range 200 {
		id := fmt.Sprintf("r%03d", i)
		if _, _, err := s.RunCreate(ctx, store.RunCreateParams{ID: id, Agent: "a", Version: 1, InputHash: "h",
			Entries: []store.EntryInput{{Kind: "test", Data: big}, {Kind: "test", Data: big}}}); err != nil {
			t.Fatal(err)
		}
		ls, err := s.LeaseClaim(ctx, store.LeaseClaimParams{Owner: "o", TTL: time.Hour, RunID: id})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.JournalAppend(ctx, store.JournalAppendParams{RunID: id, Token: ls[0].Token, After: 2,
			Entries: []store.EntryInput{{Kind: "end", Data: json.RawMessage(`{}`)}}, Status: hitchtype.StatusCompleted,
			Outcome: json.RawMessage(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	size := func() int64 { return fileSize(t, path) }
	reopen := func() {
		t.Helper()
		if err := s.Close(); err != nil { // checkpoints the WAL into the file
			t.Fatal(err)
		}
		if s, err = sqlite.Open(ctx, path); err != nil {
			t.Fatal(err)
		}
	}
	reopen()
	full := size()
	for {
		res, err := s.RunPrune(ctx, store.RunPruneParams{Before: time.Now().Add(time.Hour), Limit: 50})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Roots) == 0 {
			break
		}
	}
	reopen()
	defer s.Close()
	if after := size(); after > full/4 {
		t.Errorf("file is %d bytes after pruning everything, was %d", after, full)
	}
}
