package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/store/sqlite"
)

// BenchmarkSteps measures durable steps per second, allocations and CPU
// per step, with 1 and 64 concurrent runs of 10 steps, at FULL and NORMAL;
// and at 64 runs at FULL, with the tool declared not replayable (two
// commits a step). One op is the whole workload on a fresh store; the
// figures cover the runs (first start to last end), not opening the store.
func BenchmarkSteps(b *testing.B) {
	type setting struct {
		sync       sqlite.Sync
		runs       int
		atMostOnce bool
	}
	var settings []setting
	for _, sync := range []sqlite.Sync{sqlite.SyncFull, sqlite.SyncNormal} {
		for _, runs := range []int{1, 64} {
			settings = append(settings, setting{sync, runs, false})
		}
	}
	settings = append(settings, setting{sqlite.SyncFull, 64, true})
	for _, c := range settings {
		name := fmt.Sprintf("sync=%s/runs=%d/steps=10", c.sync, c.runs)
		if c.atMostOnce {
			name += "/at-most-once"
		}
		b.Run(name, func(b *testing.B) {
			const steps = 10
			var total, cpu float64
			var mallocs, commits uint64
			for i := 0; b.Loop(); i++ {
				res, err := Run(context.Background(), Params{Runs: c.runs, Steps: steps, Sync: c.sync, AtMostOnce: c.atMostOnce,
					DB: filepath.Join(b.TempDir(), fmt.Sprintf("bench-%d.db", i))})
				if err != nil {
					b.Fatal(err)
				}
				total += res.Elapsed.Seconds()
				cpu += res.CPU.Seconds()
				mallocs += res.Mallocs
				commits += uint64(res.Commits)
			}
			n := float64(b.N * c.runs * steps)
			b.ReportMetric(n/total, "steps/s")
			b.ReportMetric(total/n*1e6, "µs/step")
			b.ReportMetric(float64(mallocs)/n, "allocs/step")
			b.ReportMetric(cpu/n*1e6, "cpu-µs/step")
			b.ReportMetric(float64(commits)/n, "commits/step")
		})
	}
}

// recordedAllocsPerStep is the allocations a step of one run of 10 steps
// (SyncNormal), as recorded in docs/benchmarks.md. TestAllocsPerStep fails
// when a change makes a step allocate more than 10% over it: lower it with
// the figure when a change lowers it for good.
const recordedAllocsPerStep = 186

// TestAllocsPerStep guards the step's cost. Allocations are counted, not
// timed, so the figure does not depend on the machine's load: one run
// makes the same allocations each time, give or take a few.
func TestAllocsPerStep(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes what allocates")
	}
	best := 0.0
	for i := range 3 {
		res, err := Run(context.Background(), Params{Runs: 1, Steps: 10, Sync: sqlite.SyncNormal,
			DB: filepath.Join(t.TempDir(), fmt.Sprintf("allocs-%d.db", i))})
		if err != nil {
			t.Fatal(err)
		}
		if a := res.AllocsPerStep(); i == 0 || a < best {
			best = a
		}
	}
	t.Logf("%.1f allocations a step (recorded: %d)", best, recordedAllocsPerStep)
	if limit := recordedAllocsPerStep * 1.10; best > limit {
		t.Errorf("a step makes %.1f allocations, more than 10%% over the recorded %d: find what grew, or record the new figure in docs/benchmarks.md and recordedAllocsPerStep", best, recordedAllocsPerStep)
	}
}

// TestWorkloadCompletes checks the workload itself: every run completes
// with the journal it should have.
func TestWorkloadCompletes(t *testing.T) {
	res, err := Run(context.Background(), Params{Runs: 4, Steps: 3, Sync: sqlite.SyncNormal, DB: filepath.Join(t.TempDir(), "w.db")})
	if err != nil {
		t.Fatal(err)
	}
	// Per run: started, context, 4 attempts, 4 replies, 3 x (decided,
	// started, settled), ended.
	if want := int64(4 * (1 + 1 + 4 + 4 + 9 + 1)); res.Entries != want {
		t.Errorf("entries = %d, want %d", res.Entries, want)
	}
	// Per run: the start, one commit a step (the tool is replayable), and
	// the last reply with the end.
	if want := int64(4 * (1 + 3 + 1)); res.Commits != want {
		t.Errorf("commits = %d, want %d", res.Commits, want)
	}
}

// TestMoreRunsThanCallers checks that the callers start and await every
// run when the runs outnumber them, each run once.
func TestMoreRunsThanCallers(t *testing.T) {
	runs := 2*Callers + 3
	res, err := Run(context.Background(), Params{Runs: runs, Steps: 1, Sync: sqlite.SyncNormal, DB: filepath.Join(t.TempDir(), "c.db")})
	if err != nil {
		t.Fatal(err)
	}
	// Per run: started, context, 2 attempts, 2 replies, decided, started,
	// settled, ended.
	if want := int64(runs * 10); res.Entries != want {
		t.Errorf("entries = %d, want %d", res.Entries, want)
	}
}

// BenchmarkTracing measures the workload (64 runs of 10 steps, NORMAL)
// with each tracing setting, for profiling what drawing spans costs.
func BenchmarkTracing(b *testing.B) {
	for _, tr := range []Tracing{TracingOff, TracingNoExport, TracingOTLP} {
		b.Run(string(tr), func(b *testing.B) {
			p := Params{Runs: 64, Steps: 10, Sync: sqlite.SyncNormal, Tracing: tr}
			if tr == TracingOTLP {
				c, err := StartCollector()
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				p.OTLPEndpoint = c.URL()
			}
			var total float64
			for i := 0; b.Loop(); i++ {
				p.DB = filepath.Join(b.TempDir(), fmt.Sprintf("bench-%d.db", i))
				res, err := Run(context.Background(), p)
				if err != nil {
					b.Fatal(err)
				}
				total += res.Elapsed.Seconds()
			}
			b.ReportMetric(float64(b.N*p.Runs*p.Steps)/total, "steps/s")
		})
	}
}

// TestWakeHere: with a sweep interval of an hour, runs started detached in
// one process on SQLite reach their model only because the store wakes the
// process's sweeper at the commit that created them.
func TestWakeHere(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := RunWake(ctx, WakeParams{Samples: 3, Steps: 1, DB: filepath.Join(t.TempDir(), "w.db"), Sync: sqlite.SyncNormal,
		Poll: time.Hour, Here: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Wake.Samples != 3 {
		t.Fatalf("%d samples, want 3", res.Wake.Samples)
	}
}
