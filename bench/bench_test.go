package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/hitch-dev/hitch/store/sqlite"
)

// BenchmarkSteps measures durable steps per second and allocations per
// step, with 1 and 64 concurrent runs of 10 steps, at FULL and NORMAL.
// One op is the whole workload on a fresh store.
func BenchmarkSteps(b *testing.B) {
	for _, sync := range []sqlite.Sync{sqlite.SyncFull, sqlite.SyncNormal} {
		for _, runs := range []int{1, 64} {
			b.Run(fmt.Sprintf("sync=%s/runs=%d/steps=10", sync, runs), func(b *testing.B) {
				const steps = 10
				var total float64
				var ms0, ms1 runtime.MemStats
				runtime.ReadMemStats(&ms0)
				for i := 0; b.Loop(); i++ {
					res, err := Run(context.Background(), Params{Runs: runs, Steps: steps, Sync: sync,
						DB: filepath.Join(b.TempDir(), fmt.Sprintf("bench-%d.db", i))})
					if err != nil {
						b.Fatal(err)
					}
					total += res.Elapsed.Seconds()
				}
				runtime.ReadMemStats(&ms1)
				n := float64(b.N * runs * steps)
				b.ReportMetric(n/total, "steps/s")
				b.ReportMetric(total/n*1e6, "µs/step")
				b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/n, "allocs/step")
			})
		}
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
