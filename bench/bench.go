// Package bench is hitch's durable-steps workload, the same one the peer
// benchmarks run: R concurrent runs of S steps, where a step is a scripted
// (zero-latency) model reply asking for add(a, b), the tool call, and its
// result fed back; after S steps the model answers with text.
//
// Both `hitch bench` and the Go benchmarks call Run, so the figures in
// docs/benchmarks.md come from one piece of code.
package bench

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/secret"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/sqlite"
	"github.com/hitch-dev/hitch/telemetry"
	"github.com/hitch-dev/hitch/tool"
)

// Params describe one measurement.
type Params struct {
	Runs  int
	Steps int
	// DB is the SQLite file; it must not exist yet.
	DB string
	// Sync is the SQLite durability setting.
	Sync sqlite.Sync
	// Tracing draws spans from the runs' journals: TracingOff (default)
	// builds no telemetry, TracingNoExport hands every batch to a
	// Telemetry with no exporter and no meter (which then draws nothing),
	// TracingOTLP exports spans over OTLP/HTTP to OTLPEndpoint.
	Tracing      Tracing
	OTLPEndpoint string
	// ModelLatency makes every model call take this long, give or take up
	// to ModelJitter (drawn uniformly): the in-flight workload of
	// production models. Zero answers at once.
	ModelLatency, ModelJitter time.Duration
	// MaxRunners is the runtime's runs in flight; 0 means Runs (all at
	// once), at most hitch.MaxMaxRunners.
	MaxRunners int
	// StepConcurrency is the runtime's Config.StepConcurrency; 0 takes
	// its default.
	StepConcurrency int
	// AtMostOnce declares the add tool not replayable, so each step also
	// commits the tool's result before the next model call (two commits a
	// step instead of one). By default the tool is replayable: adding is
	// safe to repeat, which is what the peer programs assume of their tools.
	AtMostOnce bool
	// Secrets declares this many secret values (Config.Secrets), none of
	// which appears in the runs' traffic: every entry, reply and error is
	// still searched for each of them, which is what declaring secrets
	// costs a deployment whose traffic does not carry them.
	Secrets int
}

// Tracing chooses what telemetry a measurement carries.
type Tracing string

// The tracing settings of a measurement.
const (
	TracingOff      Tracing = "off"
	TracingNoExport Tracing = "noexport"
	TracingOTLP     Tracing = "otlp"
)

// Result is one measurement.
type Result struct {
	Params
	Elapsed time.Duration
	// Entries is the number of journal entries written by all runs.
	Entries int64
	// Flush is how long the spans still queued took to export after the
	// last run ended (TracingOTLP).
	Flush time.Duration
	// Overhead is what the runtime added to each step beyond the model's
	// latency (see Overhead).
	Overhead Overhead
	// PeakHeap, PeakGoroutines and PeakRSS are the process's peaks during
	// the measurement (PeakRSS over its whole life, from /proc).
	PeakHeap       uint64
	PeakGoroutines int
	PeakRSS        uint64
	// Mallocs counts the heap allocations made while the runs ran (from
	// the first start to the last end, every goroutine of the process).
	Mallocs uint64
	// CPU is the process's user and system CPU time over the same span.
	CPU time.Duration
	// Commits counts the runs' journal commits, their start and end
	// included.
	Commits int64
}

// AllocsPerStep is Mallocs a durable step.
func (r Result) AllocsPerStep() float64 { return float64(r.Mallocs) / float64(r.Runs*r.Steps) }

// CommitsPerStep is Commits a durable step.
func (r Result) CommitsPerStep() float64 { return float64(r.Commits) / float64(r.Runs*r.Steps) }

// CPUPerStep is CPU a durable step.
func (r Result) CPUPerStep() time.Duration { return r.CPU / time.Duration(r.Runs*r.Steps) }

// StepsPerSecond is the throughput in durable steps.
func (r Result) StepsPerSecond() float64 {
	return float64(r.Runs*r.Steps) / r.Elapsed.Seconds()
}

// Line is the peer table's RESULT line.
func (r Result) Line() string {
	line := fmt.Sprintf("RESULT peer=hitch mode=sqlite-%s runs=%d steps=%d total_steps=%d run_s=%.4f steps_per_s=%.0f entries=%d commits_per_step=%.2f allocs_per_step=%.0f cpu_us_per_step=%.0f",
		strings.ToLower(r.Sync.String()), r.Runs, r.Steps, r.Runs*r.Steps, r.Elapsed.Seconds(), r.StepsPerSecond(), r.Entries,
		r.CommitsPerStep(), r.AllocsPerStep(), float64(r.CPUPerStep().Nanoseconds())/1e3)
	if r.Tracing != "" && r.Tracing != TracingOff {
		line += fmt.Sprintf(" tracing=%s flush_s=%.4f", r.Tracing, r.Flush.Seconds())
	}
	if r.Secrets > 0 {
		line += fmt.Sprintf(" secrets=%d", r.Secrets)
	}
	if r.ModelLatency > 0 || r.ModelJitter > 0 {
		o := r.Overhead
		line += fmt.Sprintf(" model_latency=%s jitter=%s max_runners=%d step_overhead_ms_p50=%.1f p99=%.1f max=%.1f start_overhead_ms_p50=%.1f p99=%.1f max=%.1f peak_rss_mib=%d peak_heap_mib=%d peak_goroutines=%d",
			r.ModelLatency, r.ModelJitter, r.MaxRunners, ms(o.Step.P50), ms(o.Step.P99), ms(o.Step.Max),
			ms(o.Start.P50), ms(o.Start.P99), ms(o.Start.Max), r.PeakRSS>>20, r.PeakHeap>>20, r.PeakGoroutines)
	}
	return line
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

type addArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

// Agent returns the workload's agent for s steps, its add tool replayable
// unless atMostOnce.
func Agent(steps int, atMostOnce bool) (*hitch.Agent, error) { return agent(steps, atMostOnce, nil) }

// agent is Agent with its model wrapped, when wrap is set.
func agent(steps int, atMostOnce bool, wrap func(model.Model) model.Model) (*hitch.Agent, error) {
	turns := make([]scripted.Turn, 0, steps+1)
	for i := range steps {
		turns = append(turns, scripted.Turn{Calls: []scripted.Call{{Name: "add", Args: fmt.Sprintf(`{"a":%d,"b":%d}`, i, i+1)}}})
	}
	turns = append(turns, scripted.Turn{Text: "done"})
	var opts []tool.Option
	if !atMostOnce {
		opts = append(opts, tool.WithReplay(3))
	}
	add, err := tool.New("add", "Adds two integers.", func(_ context.Context, in addArgs) (int, error) { return in.A + in.B, nil }, opts...)
	if err != nil {
		return nil, err
	}
	var m model.Model = scripted.New("bench", scripted.Script{Turns: turns})
	if wrap != nil {
		m = wrap(m)
	}
	return hitch.Build(hitch.Spec{
		Name: "bench", Model: m,
		Tools: []tool.Tool{add}, Policy: policy.AllowAll(),
		Limits: hitch.Limits{ModelAttempts: steps + 1},
	})
}

// Callers is how many goroutines of Run start the runs and then await them,
// as the handlers of an API's concurrent requests would: a run in flight
// costs its runtime, not a caller of its own.
const Callers = 64

// Run measures one workload on a fresh store: the clock runs from the first
// start to the last run's end, and every run is checked to have completed.
func Run(ctx context.Context, p Params) (Result, error) {
	p.MaxRunners = min(cmp.Or(p.MaxRunners, max(p.Runs, 1)), hitch.MaxMaxRunners)
	lat := newLatencyModel(nil, p.ModelLatency, p.ModelJitter, p.Runs)
	agent, err := agent(p.Steps, p.AtMostOnce, func(m model.Model) model.Model { lat.Model = m; return lat })
	if err != nil {
		return Result{}, err
	}
	st, err := sqlite.Open(ctx, p.DB, sqlite.WithSync(p.Sync))
	if err != nil {
		return Result{}, err
	}
	defer st.Close()
	cfg := hitch.Config{Store: st, Agents: []*hitch.Agent{agent}, MaxRunners: p.MaxRunners, StepConcurrency: p.StepConcurrency}
	if p.Secrets > 0 {
		if cfg.Secrets, err = benchSecrets(p.Secrets); err != nil {
			return Result{}, err
		}
	}
	var tel *telemetry.Telemetry
	switch p.Tracing {
	case "", TracingOff:
	case TracingNoExport, TracingOTLP:
		opts := telemetry.Options{Store: st, Models: map[string]string{"bench": agent.Name()}}
		if p.Tracing == TracingOTLP {
			exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(p.OTLPEndpoint+"/v1/traces"))
			if err != nil {
				return Result{}, err
			}
			opts.Exporter = exp
		}
		if tel, err = telemetry.New(opts); err != nil {
			return Result{}, err
		}
		cfg.OnEvent = func(ev hitch.Event) { tel.Observe(ctx, ev.RunID, ev.Entries) }
	default:
		return Result{}, fmt.Errorf("bench: Tracing %q: want off, noexport or otlp", p.Tracing)
	}
	rt, err := hitch.Open(cfg)
	if err != nil {
		return Result{}, err
	}
	defer rt.Close(context.Background())

	ids := make([]string, p.Runs)
	errs := make([]error, p.Runs)
	watch := watchPeaks(100 * time.Millisecond)
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu0 := processCPU()
	begin := time.Now()
	// The callers start every run, then await the runs they started: a
	// run in flight holds no caller, as a run started over the API holds
	// no request.
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(p.Runs, Callers) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []int
			for i := int(next.Add(1) - 1); i < p.Runs; i = int(next.Add(1) - 1) {
				input := fmt.Sprintf("add numbers #%d", i)
				lat.started(input, time.Now())
				res, err := rt.Start(ctx, agent, input, hitch.WithID(fmt.Sprintf("bench-%d", i)))
				if err != nil {
					errs[i] = err
					continue
				}
				ids[i] = res.Run.ID
				mine = append(mine, i)
			}
			for _, i := range mine {
				run, err := rt.Await(ctx, ids[i])
				if err == nil && run.Status != hitchtype.StatusCompleted {
					b, _ := json.Marshal(run.Outcome)
					err = fmt.Errorf("run %s ended %s: %s", run.ID, run.Status, b)
				}
				errs[i] = err
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(begin)
	cpu := processCPU() - cpu0
	runtime.ReadMemStats(&ms1)
	res := Result{Params: p, Elapsed: elapsed, Mallocs: ms1.Mallocs - ms0.Mallocs, CPU: cpu, Overhead: lat.overhead()}
	res.PeakHeap, res.PeakGoroutines, res.PeakRSS = watch.end()
	if tel != nil {
		flushStart := time.Now()
		if err := tel.Shutdown(ctx); err != nil {
			return res, fmt.Errorf("bench: export spans: %w", err)
		}
		res.Flush = time.Since(flushStart)
	}
	for i, err := range errs {
		if err != nil {
			return res, err
		}
		run, err := st.RunGet(ctx, ids[i])
		if err != nil {
			return res, err
		}
		res.Entries += run.Position
		n, err := commits(ctx, st, ids[i])
		if err != nil {
			return res, err
		}
		res.Commits += n
	}
	return res, nil
}

// commits counts a run's journal commits: the entries of one commit share
// the time of its transaction, and no two transactions share a time.
func commits(ctx context.Context, st store.Store, id string) (int64, error) {
	var n, after int64
	var last time.Time
	for {
		page, err := st.JournalRead(ctx, store.JournalReadParams{RunID: id, After: after, Limit: 1000})
		if err != nil {
			return 0, err
		}
		for _, e := range page {
			if !e.At.Equal(last) {
				n++
				last = e.At
			}
			after = e.Pos
		}
		if len(page) == 0 {
			return n, nil
		}
	}
}

// Collector is a stand-in for an OTLP collector on loopback: it accepts
// span exports and keeps only their count and size.
type Collector struct {
	srv      *http.Server
	ln       net.Listener
	mu       sync.Mutex
	requests int
	bytes    int64
}

// StartCollector listens on a free loopback port.
func StartCollector() (*Collector, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c := &Collector{ln: ln}
	c.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, io.LimitReader(r.Body, 64<<20))
		c.mu.Lock()
		c.requests++
		c.bytes += n
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	})}
	go func() { _ = c.srv.Serve(ln) }()
	return c, nil
}

// URL is the collector's base URL.
func (c *Collector) URL() string { return "http://" + c.ln.Addr().String() }

// Received is how many exports and bytes arrived.
func (c *Collector) Received() (requests int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.requests, c.bytes
}

// Close stops the collector.
func (c *Collector) Close() error { return c.srv.Close() }

// MaxSecrets bounds Params.Secrets.
const MaxSecrets = 1000

// benchSecrets declares n secret values shaped like API keys, drawn at
// random so that none appears in the workload's traffic.
func benchSecrets(n int) (*secret.Redactor, error) {
	if n > MaxSecrets {
		return nil, fmt.Errorf("bench: %d secrets: want at most %d", n, MaxSecrets)
	}
	values := make(map[string]string, n)
	for i := range n {
		values[fmt.Sprintf("BENCH_KEY_%d", i)] = "sk-bench-" + rand.Text()
	}
	return secret.New(values)
}
