package nodetest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/bench"
	"github.com/hitch-dev/hitch/internal/pgtest"
	"github.com/hitch-dev/hitch/store/sqlite"
)

// The workload of bench (and hitch bench): 64 concurrent runs of 10 steps.
const benchRuns, benchSteps = 64, 10

// clockTicks is Linux's USER_HZ, the unit of /proc/<pid>/stat's times.
const clockTicks = 100

// cpuOf returns the user and system CPU time a process has used, from
// /proc; zero when the process is gone.
func cpuOf(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64) // utime, field 14
	k, _ := strconv.ParseInt(f[12], 10, 64) // stime, field 15
	return time.Duration(u+k) * time.Second / clockTicks
}

// BenchmarkNodes measures durable steps per second on PostgreSQL with the
// workload's runs started from this process and driven by 1, 2 or 3
// worker processes (this test binary, re-executed), and the CPU each step
// costs: the workers' and their database backends' (PostgreSQL's own
// background writers are not counted). One op is one batch of 64 runs,
// from the first start to the last run's end. The sqlite case is the same
// workload in one process on a SQLite file (FULL sync), for comparison.
func BenchmarkNodes(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		var steps int
		var cpu time.Duration
		var elapsed time.Duration
		for i := 0; i < b.N; i++ {
			var before, after syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
			res, err := bench.Run(context.Background(), bench.Params{Runs: benchRuns, Steps: benchSteps,
				DB: filepath.Join(b.TempDir(), "bench.db"), Sync: sqlite.SyncFull})
			if err != nil {
				b.Fatal(err)
			}
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
			cpu += time.Duration(after.Utime.Nano()+after.Stime.Nano()-before.Utime.Nano()-before.Stime.Nano()) * time.Nanosecond
			steps += benchRuns * benchSteps
			elapsed += res.Elapsed
		}
		b.ReportMetric(float64(steps)/elapsed.Seconds(), "steps/s")
		b.ReportMetric(float64(cpu.Microseconds())/float64(steps)/1000, "cpu-ms/step")
	})
	for _, workers := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("postgres/workers=%d", workers), func(b *testing.B) {
			benchWorkers(b, workers, benchRuns)
		})
	}
	// A backlog: 192 runs a batch, three times what one node keeps busy in
	// the cases above, so that each of three nodes has as many runs to
	// group as one node alone has.
	for _, workers := range []int{1, 3} {
		b.Run(fmt.Sprintf("postgres/backlog/workers=%d", workers), func(b *testing.B) {
			benchWorkers(b, workers, backlogRuns)
		})
	}
}

// backlogRuns is the batch of BenchmarkNodes' backlog cases.
const backlogRuns = 3 * benchRuns

// benchWorkers starts batches of runs runs from this process, driven by
// workers worker processes.
func benchWorkers(b *testing.B, workers, runs int) {
	url, schema := pgtest.URL(b), newSchema(b)
	ctx := context.Background()
	st := openStore(b, url, schema)
	agent, err := bench.Agent(benchSteps, false)
	if err != nil {
		b.Fatal(err)
	}
	rt, err := hitch.Open(hitch.Config{Store: st, Agents: []*hitch.Agent{agent}, Node: "starter"})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close(ctx)
	db, err := pgx.Connect(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close(ctx)
	c := &cluster{t: b, url: url, schema: schema, dir: b.TempDir(), appName: "hitchbench_" + schema}
	for i := range workers {
		c.startWith(i, fmt.Sprintf("HITCH_NODES_AGENT=bench:%d", benchSteps))
	}
	defer c.stopAll()
	runsTable := pgx.Identifier{schema, "hitch_runs"}.Sanitize()

	// cpu sums the workers' CPU and that of their database backends.
	cpu := func() (workersCPU, dbCPU time.Duration) {
		for _, n := range c.nodes {
			workersCPU += cpuOf(n.cmd.Process.Pid)
		}
		rows, err := db.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = $1 OR application_name = $2`,
			c.appName, "hitch wake "+schema)
		if err != nil {
			b.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var pid int
			if err := rows.Scan(&pid); err != nil {
				b.Fatal(err)
			}
			dbCPU += cpuOf(pid)
		}
		return workersCPU, dbCPU
	}
	var elapsed, wCPU, dCPU time.Duration
	steps := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w0, d0 := cpu()
		begin := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, runs)
		for r := range runs {
			wg.Go(func() {
				_, err := rt.Start(ctx, agent, "add numbers", hitch.WithID(fmt.Sprintf("b%d-%d", i, r)), hitch.Detached())
				if err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		for {
			var busy, done int
			if err := db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status IN ('queued', 'running', 'waiting')),
				count(*) FILTER (WHERE status = 'completed') FROM `+runsTable+` WHERE id LIKE $1`, fmt.Sprintf("b%d-%%", i)).Scan(&busy, &done); err != nil {
				b.Fatal(err)
			}
			if busy == 0 {
				if done != runs {
					b.Fatalf("batch %d: %d of %d runs completed", i, done, runs)
				}
				break
			}
			time.Sleep(2 * time.Millisecond) // measuring, not synchronising: the batch's end is read from the database
		}
		elapsed += time.Since(begin)
		w1, d1 := cpu()
		wCPU += w1 - w0
		dCPU += d1 - d0
		steps += runs * benchSteps
	}
	b.StopTimer()
	b.ReportMetric(float64(steps)/elapsed.Seconds(), "steps/s")
	b.ReportMetric(float64(wCPU.Microseconds())/float64(steps)/1000, "worker-cpu-ms/step")
	b.ReportMetric(float64(dCPU.Microseconds())/float64(steps)/1000, "db-cpu-ms/step")
}
