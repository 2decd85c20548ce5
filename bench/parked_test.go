package bench

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/store/sqlite"
)

// TestParkedWorkload runs the parked workload on a small store: every
// route answers, the answers complete their runs, and a second pass on the
// same store starts nothing new.
func TestParkedWorkload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "parked.db")
	st, err := sqlite.Open(context.Background(), path, sqlite.WithSync(sqlite.SyncNormal))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	p := ParkedParams{Runs: 200, Store: st, Samples: 3, Workers: 8, IdleFor: 100 * time.Millisecond}
	res, err := Parked(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if res.Started != 200 || res.Runs != 200 || len(res.Routes) != 13 {
		t.Fatalf("started %d, measured %d parked runs, %d routes:\n%s", res.Started, res.Runs, len(res.Routes), res.Lines())
	}
	// 120 runs were answered and completed: the next pass tops the store
	// up to 200 parked runs again.
	res, err = Parked(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if res.Started != 120 || res.Runs != 200 {
		t.Fatalf("second pass started %d, measured %d", res.Started, res.Runs)
	}
	if !strings.Contains(res.Lines(), "ROUTE GET /v1/approvals?limit=50") {
		t.Fatalf("lines:\n%s", res.Lines())
	}
}
