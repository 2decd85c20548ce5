package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
)

// TestFoldRefusesAGap deletes one journal row of a parked run: every
// reader of the journal refuses it as corrupt instead of replaying what
// is left as if it were whole.
func TestFoldRefusesAGap(t *testing.T) {
	ctx := context.Background()
	m := scripted.New("m", scripted.Script{Turns: []scripted.Turn{{Calls: []scripted.Call{{Name: "x"}}}, {Text: "done"}}})
	st, eng, run, db := parkedOnFile(t, m, okTool())
	if run.Position < 4 {
		t.Fatalf("run: %+v", run)
	}
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
