package storetest

import (
	"testing"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

// testForkedFrom checks that a fork's source is kept with its run and read
// back by every read of the run, and that a bad source is refused.
func testForkedFrom(t *testing.T, open opener) {
	e := newEnv(t, open)
	e.create("src")
	want := hitchtype.ForkedFrom{Run: "src", Pos: 1, Replay: true}
	made := e.createWith(store.RunCreateParams{ID: "fork", Agent: "agent", Version: 1, InputHash: "h",
		Entries: entries("fork", 1), ForkedFrom: &want})
	check := func(how string, r store.Run) {
		t.Helper()
		if r.ForkedFrom == nil || *r.ForkedFrom != want {
			t.Errorf("%s: forked from %+v, want %+v", how, r.ForkedFrom, want)
		}
	}
	check("create", made)
	check("get", e.get("fork"))
	if src := e.get("src"); src.ForkedFrom != nil {
		t.Errorf("a run that is not a fork: forked from %+v", src.ForkedFrom)
	}
	again, created, err := e.s.RunCreate(e.ctx, store.RunCreateParams{ID: "fork", Agent: "agent", Version: 1, InputHash: "h",
		Entries: entries("fork", 1)})
	if err != nil || created {
		t.Fatalf("create again: %v created=%v", err, created)
	}
	check("create again", again)
	runs, err := e.s.RunList(e.ctx, store.RunListParams{})
	if err != nil || len(runs) != 2 {
		t.Fatalf("list: %v %v", err, runIDs(runs))
	}
	for _, r := range runs {
		if r.ID == "fork" {
			check("list", r)
		} else if r.ForkedFrom != nil {
			t.Errorf("list: %s forked from %+v", r.ID, r.ForkedFrom)
		}
	}
	l := e.claim("fork", "A", longTTL)
	check("claim", l.Run)
	for _, bad := range []hitchtype.ForkedFrom{{Run: "src", Pos: 0}, {Run: "", Pos: 1}} {
		_, _, err := e.s.RunCreate(e.ctx, store.RunCreateParams{ID: "bad", Agent: "agent", Version: 1, InputHash: "h",
			Entries: entries("bad", 1), ForkedFrom: &bad})
		if err == nil {
			t.Errorf("create forked from %+v: no error", bad)
		}
	}
	if _, err := e.s.RunGet(e.ctx, "bad"); err == nil {
		t.Errorf("a refused create made run bad")
	}
}
