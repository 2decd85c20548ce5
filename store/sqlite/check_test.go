package sqlite

import (
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hitch-dev/hitch/store"
)

// TestDamagedPageIsCorrupt: a page of random bytes where a table starts,
// or where the pointer map is, refuses every open as store.ErrCorrupt,
// read-only or not; a sound store of many pages opens.
func TestDamagedPageIsCorrupt(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dir := t.TempDir()
	sound := filepath.Join(dir, "sound.db")
	s := openT(t, sound)
	big := []byte(`{"text":"` + strings.Repeat("x", 16<<10) + `"}`)
	for i := range 400 { // enough pages for a second pointer-map page
		p := store.RunCreateParams{ID: fmt.Sprintf("r%03d", i), Agent: "a", Entries: []store.EntryInput{{Kind: "k", Data: big}}}
		if _, _, err := s.RunCreate(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open(driverName, sound)
	if err != nil {
		t.Fatal(err)
	}
	var runsRoot, pageSize, pages int64
	if err := db.QueryRow("SELECT rootpage FROM sqlite_schema WHERE name = 'runs'").Scan(&runsRoot); err != nil {
		t.Fatal(err)
	}
	_ = db.QueryRow("PRAGMA page_size").Scan(&pageSize)
	_ = db.QueryRow("PRAGMA page_count").Scan(&pages)
	db.Close()
	if pages < pageSize/5+3 {
		t.Fatalf("the store has %d pages: too few to have a second pointer map", pages)
	}
	for _, opts := range [][]Option{nil, {ReadOnly()}} {
		st, err := Open(ctx, sound, opts...)
		if err != nil {
			t.Fatalf("a sound store of %d pages: %v", pages, err)
		}
		st.Close()
	}

	second := 2 + pageSize/5 + 1 // the second pointer-map page
	for _, pg := range []int64{2, runsRoot, second} {
		b, err := os.ReadFile(sound)
		if err != nil {
			t.Fatal(err)
		}
		junk := make([]byte, pageSize)
		_, _ = rand.Read(junk)
		copy(b[(pg-1)*pageSize:], junk)
		damaged := filepath.Join(dir, fmt.Sprintf("page%d.db", pg))
		if err := os.WriteFile(damaged, b, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, opts := range [][]Option{{ReadOnly()}, nil} {
			st, err := Open(ctx, damaged, opts...)
			if err == nil {
				st.Close()
				t.Errorf("page %d damaged: the store opened", pg)
				continue
			}
			if !errors.Is(err, store.ErrCorrupt) || !IsCorrupt(err) {
				t.Errorf("page %d damaged: %v, want store.ErrCorrupt", pg, err)
			}
		}
	}
}
