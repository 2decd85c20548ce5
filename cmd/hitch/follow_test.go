package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/store/sqlite"
)

// TestEventsFollowAnotherStore: `runs events -f` follows a run that
// another store on the same file drives (as a worker process would): it
// prints the entries that are there, then each one committed afterwards,
// and exits once it has printed the run's end.
func TestEventsFollowAnotherStore(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	db := filepath.Join(t.TempDir(), "runs.db")
	st, err := sqlite.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a, err := hitch.Build(hitch.Spec{Name: "quick", Model: scripted.New("m", scripted.Script{Turns: []scripted.Turn{{Text: "done"}}}),
		Policy: policy.AllowAll()})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := hitch.Open(hitch.Config{Store: st, Agents: []*hitch.Agent{a}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	if _, err := rt.Start(ctx, a, "hello", hitch.WithID("r1"), hitch.Detached()); err != nil {
		t.Fatal(err)
	}

	pr, pw := io.Pipe()
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"runs", "events", "-f", "r1", "--db", db, "--json"}, pw, io.Discard)
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	var kinds []string
	next := func() bool {
		if !lines.Scan() {
			return false
		}
		var e struct{ Pos int64 }
		var k struct{ Kind string }
		if err := json.Unmarshal(lines.Bytes(), &e); err != nil || json.Unmarshal(lines.Bytes(), &k) != nil {
			t.Fatalf("not an entry: %q", lines.Text())
		}
		if e.Pos != int64(len(kinds)+1) {
			t.Fatalf("entry at %d after %d entries", e.Pos, len(kinds))
		}
		kinds = append(kinds, k.Kind)
		return true
	}
	if !next() {
		t.Fatal("no first entry")
	}
	// The follower waits on a run still queued; drive it here.
	if run, err := rt.Await(ctx, "r1"); err != nil || run.Status != hitchtype.StatusCompleted {
		t.Fatalf("await: %+v %v", run, err)
	}
	for next() {
	}
	if c := <-code; c != exitOK {
		t.Fatalf("exit %d", c)
	}
	want, err := rt.Journal(ctx, "r1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(kinds) != len(want) || kinds[len(kinds)-1] != "run.ended" {
		t.Fatalf("printed %v, the journal has %d entries", kinds, len(want))
	}
}
