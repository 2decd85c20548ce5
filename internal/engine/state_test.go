package engine

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/store/sqlite"
	"github.com/hitch-dev/hitch/tool"
)

// TestFoldRefusesAGap deletes one journal row of a parked run: every
// reader of the journal refuses it as corrupt instead of replaying what
// is left as if it were whole.
func TestFoldRefusesAGap(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "gap.db")
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	m := scripted.New("m", scripted.Script{Turns: []scripted.Turn{{Calls: []scripted.Call{{Name: "x"}}}, {Text: "done"}}})
	a := testAgent(m)
	a.Policy = policy.Rules{{Tools: []string{"*"}, Verdict: policy.RequireApproval, Requirement: "ops"}}
	a.Limits.ApprovalExpiry = time.Hour
	a.Tools = []tool.Tool{tool.MustNew("x", "Does x.", func(context.Context, struct{}) (string, error) { return "ok", nil })}
	if err := a.Prepare(); err != nil {
		t.Fatal(err)
	}
	eng := testEngine(st, "node", a, time.Minute, 20*time.Second)
	defer eng.Close(ctx)
	if _, err := eng.Start(ctx, a, StartParams{ID: "r", Input: "hi"}); err != nil {
		t.Fatal(err)
	}
	run, err := eng.Await(ctx, "r")
	if err != nil || run.Status != hitchtype.StatusWaiting || run.Position < 4 {
		t.Fatalf("run: %+v %v", run, err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `DELETE FROM journal WHERE pos = 2 AND run_seq = (SELECT seq FROM runs WHERE id = 'r')`); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.foldRun(ctx, "r"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("fold: %v, want ErrCorrupt", err)
	}
	if _, _, err := eng.PendingApprovals(ctx, PendingApprovalsParams{}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("pending approvals: %v, want ErrCorrupt", err)
	}
	if err := eng.Drive(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Await(ctx, "r"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("driven: %v, want ErrCorrupt", err)
	}
	after, err := st.RunGet(ctx, "r")
	if err != nil || after.Position != run.Position {
		t.Errorf("the runner wrote to a corrupt journal: position %d, was %d (%v)", after.Position, run.Position, err)
	}
}

// TestTakeValueChecksItsEncoding: the check the engine's tests run on every
// value a runner folds catches a value that its own encoding changes (here
// a time with a monotonic reading, which JSON drops), and passes one that
// survives the round trip.
func TestTakeValueChecksItsEncoding(t *testing.T) {
	at := time.Now()
	bad := CallDecided{Call: "t1c1", Verdict: policy.RequireApproval, ExpiresAt: &at}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("a value its encoding changes was taken without complaint")
			}
		}()
		var dst CallDecided
		takeValue(&dst, bad, entry(KindCallDecided, bad).Data)
	}()
	good := CallSettled{Call: "t1c1", Output: "ok"}
	var dst CallSettled
	if !takeValue(&dst, good, entry(KindCallSettled, good).Data) || dst != good {
		t.Errorf("took %+v, want %+v", dst, good)
	}
	var other CallStarted
	if takeValue(&other, good, entry(KindCallSettled, good).Data) {
		t.Error("a value of another type was taken")
	}
}
