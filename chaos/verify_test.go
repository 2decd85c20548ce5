package chaos_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/chaos"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/testclock"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/sqlite"
)

func entry(kind string, v any) store.EntryInput {
	b, _ := json.Marshal(v)
	return store.EntryInput{Kind: kind, Data: b}
}

type call struct {
	Call string `json:"call"`
}

// TestVerifyNamesEachViolation builds, through a real SQLite store, a run
// that keeps every promise and one that breaks each, and checks that Verify
// names each broken promise once and passes the sound run.
func TestVerifyNamesEachViolation(t *testing.T) {
	ctx := context.Background()
	clock := testclock.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "v.db"), sqlite.WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	create := func(id string) store.Lease {
		t.Helper()
		if _, _, err := st.RunCreate(ctx, store.RunCreateParams{ID: id, Agent: "chaos", Version: 1,
			Entries: []store.EntryInput{entry(hitchtype.KindRunStarted, map[string]string{"input": "act"})}}); err != nil {
			t.Fatal(err)
		}
		ls, err := st.LeaseClaim(ctx, store.LeaseClaimParams{RunID: id, Owner: "w", TTL: time.Second})
		if err != nil || len(ls) != 1 {
			t.Fatalf("claim %s: %v", id, err)
		}
		return ls[0]
	}
	appendTo := func(l store.Lease, after int64, status hitchtype.Status, es ...store.EntryInput) {
		t.Helper()
		p := store.JournalAppendParams{RunID: l.Run.ID, Token: l.Token, After: after, Entries: es, Status: status}
		if status.Terminal() {
			p.Outcome = json.RawMessage(`{}`)
		}
		if _, err := st.JournalAppend(ctx, p); err != nil {
			t.Fatalf("append to %s: %v", l.Run.ID, err)
		}
	}
	// sound: a call started, its body run once, settled, one ending.
	l := create("sound")
	appendTo(l, 1, "", entry(hitchtype.KindCallStarted, call{"t1c1"}))
	appendTo(l, 2, hitchtype.StatusCompleted, entry(hitchtype.KindCallSettled, call{"t1c1"}), entry(hitchtype.KindRunEnded, map[string]string{}))
	// twice: its call's body ran twice.
	l = create("twice")
	appendTo(l, 1, hitchtype.StatusCompleted, entry(hitchtype.KindCallStarted, call{"t1c1"}), entry(hitchtype.KindRunEnded, map[string]string{}))
	// ahead: a body ran for a call never journaled as started.
	l = create("ahead")
	appendTo(l, 1, hitchtype.StatusCompleted, entry(hitchtype.KindRunEnded, map[string]string{}))
	// stuck: running, and its lease expires with nobody renewing it.
	create("stuck")
	// ended: an ending journaled twice.
	l = create("ended")
	appendTo(l, 1, "", entry(hitchtype.KindRunEnded, map[string]string{}))
	appendTo(l, 2, hitchtype.StatusCompleted, entry(hitchtype.KindRunEnded, map[string]string{}))
	clock.Add(2 * time.Second)

	effects := strings.Join([]string{
		"sound t1c1 w1", "twice t1c1 w1", "twice t1c1 w2", "ahead t1c1 w1", "",
	}, "\n")
	rep, err := chaos.Verify(ctx, st, chaos.VerifyParams{Runs: []string{"sound", "twice", "ahead", "stuck", "ended", "missing"},
		Effects: strings.NewReader(effects), Ended: true})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		chaos.DuplicateEffect:   "twice t1c1: the body ran 2 times (by w1, w2)",
		chaos.UnjournaledEffect: "ahead t1c1:",
		chaos.StuckRun:          "stuck: running, but the lease of w expired at 03:04:06.000",
		chaos.ExtraEnding:       "ended: 2 ending entries",
		chaos.LostRun:           "missing: started, but the store has no such run",
		chaos.JournalGap:        "",
	}
	for kind, text := range want {
		n := 0
		for _, v := range rep.Violations {
			if v.Kind == kind {
				n++
				if !strings.Contains(v.String(), text) {
					t.Errorf("%s: %q lacks %q", kind, v, text)
				}
			}
		}
		if wantN := min(len(text), 1); n != wantN || rep.Counts[kind] != wantN {
			t.Errorf("%s: %d listed, %d counted, want %d: %v", kind, n, rep.Counts[kind], wantN, rep.Violations)
		}
	}
	if rep.OK() || rep.Completed != 4 || rep.Effects != 4 {
		t.Errorf("report: %+v", rep)
	}
	// The sound run alone keeps every promise.
	rep, err = chaos.Verify(ctx, st, chaos.VerifyParams{Runs: []string{"sound"}, Effects: strings.NewReader("sound t1c1 w1\n"), Ended: true})
	if err != nil || !rep.OK() {
		t.Errorf("sound run: %+v %v", rep, err)
	}
	// A malformed effects line is an error, not a verdict.
	if _, err := chaos.Verify(ctx, st, chaos.VerifyParams{Runs: []string{"sound"}, Effects: strings.NewReader("sound\n")}); err == nil {
		t.Error("a malformed effects line was taken")
	}
}
