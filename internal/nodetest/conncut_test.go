package nodetest

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/internal/pgtest"
)

// TestConnectionsCutUnderLoad: two nodes in this process work through runs
// while every database connection of theirs — pools and listeners — is
// terminated, again and again. The pools reconnect on their next use, the
// listeners with a backoff, the sweepers back off through the errors; in
// the end every run has completed or is parked on uncertain calls, no
// effect ran twice, and both listeners are connected again.
func TestConnectionsCutUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("cuts database connections for some seconds")
	}
	url, schema := pgtest.URL(t), newSchema(t)
	const runs, cuts = 60, 6
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	effects := filepath.Join(t.TempDir(), "effects.log")
	appName := "hitchcut_" + schema
	nodeURL := pgtest.WithParam(url, "application_name", appName)

	var errs atomic.Int64
	type node struct {
		rt    *hitch.Runtime
		swept chan error
	}
	var nodes []node
	a, err := chaosAgent(effects, "in-process")
	if err != nil {
		t.Fatal(err)
	}
	sweepCtx, stopSweep := context.WithCancel(ctx)
	defer stopSweep()
	for i := range 2 {
		st := openStore(t, nodeURL, schema)
		rt, err := hitch.Open(hitch.Config{Store: st, Agents: []*hitch.Agent{a}, Node: fmt.Sprintf("cut-%d", i),
			LeaseTTL: nodeLeaseTTL, OnEvent: func(ev hitch.Event) {
				if ev.Err != nil {
					errs.Add(1)
				}
			}})
		if err != nil {
			t.Fatal(err)
		}
		n := node{rt: rt, swept: make(chan error, 1)}
		go func() { n.swept <- rt.Sweep(sweepCtx, nodePoll) }()
		nodes = append(nodes, n)
	}
	defer func() {
		stopSweep()
		for _, n := range nodes {
			<-n.swept
			dctx, cancel := context.WithTimeout(context.Background(), nodeDrain)
			if err := n.rt.Close(dctx); err != nil {
				t.Errorf("close: %v", err)
			}
			cancel()
		}
	}()
	for i := range runs {
		if _, err := nodes[i%2].rt.Start(ctx, a, "go", hitch.WithID(fmt.Sprintf("r%05d", i)), hitch.Detached()); err != nil {
			t.Fatal(err)
		}
	}

	db, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(context.Background())
	ours := `pid <> pg_backend_pid() AND datname = current_database() AND (application_name = $1 OR application_name = $2)`
	terminated := 0
	for range cuts {
		pace := time.NewTimer(700 * time.Millisecond) // load between the cuts, not a synchronisation
		select {
		case <-pace.C:
		case <-ctx.Done():
			t.Fatal("out of time")
		}
		var n int
		if err := db.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE `+ours, appName, "hitch wake "+schema).Scan(&n); err != nil {
			t.Fatal(err)
		}
		terminated += n
	}

	// Every run comes to rest; both listeners come back.
	runsTable := pgx.Identifier{schema, "hitch_runs"}.Sanitize()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		var busy, listeners int
		if err := db.QueryRow(ctx, `SELECT count(*) FROM `+runsTable+` WHERE status IN ('queued', 'running')`).Scan(&busy); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE `+ours+` AND application_name = $2`, appName, "hitch wake "+schema).Scan(&listeners); err != nil {
			t.Fatal(err)
		}
		if busy == 0 && listeners == 2 {
			break
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("%d runs still busy, %d of 2 listeners connected after the cuts", busy, listeners)
		}
	}
	st := openStore(t, url, schema)
	rep := check(t, ctx, st, effects, runs)
	if terminated < cuts {
		t.Errorf("%d connections terminated in %d cuts: the cut missed the nodes", terminated, cuts)
	}
	t.Logf("%d cuts terminated %d connections; %d sweep errors reported and backed off; %d runs completed, %d parked on %d uncertain calls, 0 duplicate effects",
		cuts, terminated, errs.Load(), rep.completed, rep.parked, rep.uncertain)
}
