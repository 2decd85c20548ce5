package telemetry_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/goleak"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/hitchtest"
	"github.com/hitch-dev/hitch/internal/testclock"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/route"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/postgres"
	"github.com/hitch-dev/hitch/store/sqlite"
	"github.com/hitch-dev/hitch/telemetry"
	"github.com/hitch-dev/hitch/tool"
)

// gaugeCounting counts the gauges' reads of a real store.
type gaugeCounting struct {
	store.Store
	counts atomic.Int64
}

func (s *gaugeCounting) RunCountsFor(ctx context.Context, p store.RunListParams) (map[hitchtype.Status]int, error) {
	s.counts.Add(1)
	return s.Store.RunCountsFor(ctx, p)
}

func entry(t testing.TB, kind string, v any) store.EntryInput {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return store.EntryInput{Kind: kind, Data: b}
}

// park creates a run, claims it and parks it with a run.waiting entry.
func park(t testing.TB, st store.Store, id string, w hitchtype.RunWaiting, wake time.Time) {
	t.Helper()
	ctx := context.Background()
	if _, _, err := st.RunCreate(ctx, store.RunCreateParams{ID: id, Agent: "a", Version: 1,
		Entries: []store.EntryInput{entry(t, hitchtype.KindRunStarted, hitchtype.RunStarted{Agent: "a"})}}); err != nil {
		t.Fatal(err)
	}
	ls, err := st.LeaseClaim(ctx, store.LeaseClaimParams{Owner: "n", TTL: time.Minute, RunID: id})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.JournalAppend(ctx, store.JournalAppendParams{RunID: id, Token: ls[0].Token, After: 1,
		Entries: []store.EntryInput{entry(t, hitchtype.KindRunWaiting, w)}, Status: hitchtype.StatusWaiting, WakeAt: wake}); err != nil {
		t.Fatal(err)
	}
}

// gaugeValues collects and returns each gauge's points, by name and then
// by the hitch.run.status attribute (empty for the others).
func gaugeValues(t *testing.T, r sdkmetric.Reader) map[string]map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			g, ok := m.Data.(metricdata.Gauge[int64])
			if !ok {
				continue
			}
			out[m.Name] = map[string]int64{}
			for _, p := range g.DataPoints {
				v, _ := p.Attributes.Value(attribute.Key("hitch.run.status"))
				out[m.Name][v.AsString()] = p.Value
			}
		}
	}
	return out
}

// hidden is a real store that does not say it is a store.GaugeReader, so
// the gauges take their fallback path.
type hidden struct{ store.Store }

// The gauges read the store: runs by status, runs due by the store's
// clock, approvals and uncertain calls parked runs wait on; one reading
// serves collections for CacheFor. Through each driver's GaugeReader and
// through the fallback of any store.
func TestMetricsGauges(t *testing.T) {
	open := map[string]func(t *testing.T, clk *testclock.Clock) store.Store{
		"sqlite": func(t *testing.T, clk *testclock.Clock) store.Store {
			st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "hitch.db"), sqlite.WithClock(clk.Now))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
		"fallback": func(t *testing.T, clk *testclock.Clock) store.Store {
			st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "hitch.db"), sqlite.WithClock(clk.Now))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return hidden{st}
		},
		"postgres": func(t *testing.T, clk *testclock.Clock) store.Store {
			url := os.Getenv("HITCH_TEST_POSTGRES")
			if url == "" {
				t.Skip("HITCH_TEST_POSTGRES is not set")
			}
			b := make([]byte, 6)
			_, _ = rand.Read(b)
			schema := "hitch_metrics_" + hex.EncodeToString(b)
			ctx := context.Background()
			st, err := postgres.Open(ctx, url, postgres.WithSchema(schema), postgres.WithClock(clk.Now), postgres.WithPollOnly(true))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				st.Close()
				if conn, err := pgx.Connect(ctx, url); err == nil {
					_, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
					conn.Close(ctx)
				}
			})
			return st
		},
	}
	for _, name := range []string{"sqlite", "fallback", "postgres"} {
		t.Run(name, func(t *testing.T) {
			clk := testclock.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			st := open[name](t, clk)
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			testGauges(t, clk, st, name == "fallback")
		})
	}
}

func testGauges(t *testing.T, clk *testclock.Clock, raw store.Store, fallback bool) {
	ctx := context.Background()
	st := &gaugeCounting{Store: raw}
	started := []store.EntryInput{entry(t, hitchtype.KindRunStarted, hitchtype.RunStarted{Agent: "a"})}
	// Queued: due.
	if _, _, err := st.RunCreate(ctx, store.RunCreateParams{ID: "queued", Agent: "a", Version: 1, Entries: started}); err != nil {
		t.Fatal(err)
	}
	// Running under a live lease: not due until the lease runs out.
	if _, _, err := st.RunCreate(ctx, store.RunCreateParams{ID: "running", Agent: "a", Version: 1, Entries: started}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.LeaseClaim(ctx, store.LeaseClaimParams{Owner: "n", TTL: 30 * time.Second, RunID: "running"}); err != nil {
		t.Fatal(err)
	}
	park(t, st, "approve", hitchtype.RunWaiting{Reason: hitchtype.WaitApproval, Calls: []string{"t1c1", "t1c2"}}, clk.Now().Add(time.Hour))
	park(t, st, "unsure", hitchtype.RunWaiting{Reason: hitchtype.WaitUncertain, Calls: []string{"t1c1"}}, time.Time{})
	park(t, st, "kids", hitchtype.RunWaiting{Reason: hitchtype.WaitChildren, Calls: []string{"t1c1"}}, clk.Now().Add(time.Minute))

	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(ctx)
	var gs store.Store = st // the counting store hides GaugeReader
	if !fallback {
		gs = struct {
			store.Store
			store.GaugeReader
		}{st, raw.(store.GaugeReader)}
	}
	m, err := telemetry.NewMetrics(telemetry.MetricsOptions{Store: gs, MeterProvider: mp, CacheFor: -1})
	if err != nil {
		t.Fatal(err)
	}
	scanned := int64(3) // the waiting runs
	if fallback {
		scanned = 4 // the running and waiting runs
	}
	g := gaugeValues(t, reader)
	want := map[string]map[string]int64{
		"hitch.runs": {"queued": 1, "running": 1, "waiting": 3, "completed": 0, "failed": 0, "cancelled": 0,
			"answer_invalid": 0, "budget_exhausted": 0},
		"hitch.runs.due":          {"": 1},
		"hitch.approvals.pending": {"": 2},
		"hitch.calls.uncertain":   {"": 1},
		"hitch.metrics.scanned":   {"": scanned},
	}
	for name, w := range want {
		for k, v := range w {
			if got, ok := g[name][k]; !ok || got != v {
				t.Errorf("%s{%s} = %d (present %v), want %d", name, k, got, ok, v)
			}
		}
	}
	// Past the children's backstop and the lease: two more are due.
	clk.Add(2 * time.Minute)
	if got := gaugeValues(t, reader)["hitch.runs.due"][""]; got != 3 {
		t.Errorf("after 2m hitch.runs.due = %d, want 3", got)
	}
	if n := st.counts.Load(); n != 2 {
		t.Errorf("two collections without a cache read the store %d times", n)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok := gaugeValues(t, reader)["hitch.runs"]; ok {
		t.Error("a closed Metrics still reads the store")
	}

	// With a cache, many collections make one reading.
	cached, err := telemetry.NewMetrics(telemetry.MetricsOptions{Store: gs, MeterProvider: mp, CacheFor: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer cached.Close()
	before := st.counts.Load()
	for range 5 {
		gaugeValues(t, reader)
	}
	if n := st.counts.Load() - before; n != 1 {
		t.Errorf("five collections within CacheFor read the store %d times", n)
	}
	if _, err := telemetry.NewMetrics(telemetry.MetricsOptions{Store: st, CacheFor: 2 * time.Hour}); err == nil {
		t.Error("CacheFor 2h: no error")
	}
	if _, err := telemetry.NewMetrics(telemetry.MetricsOptions{}); err == nil {
		t.Error("no Store: no error")
	}
}

// The engine reports every claim and journal append through
// Config.OnStoreTiming: the appended entries add up to the journal.
func TestMetricsStoreTiming(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) }) // runs last
	ctx := context.Background()
	st := hitchtest.OpenStore(t, filepath.Join(t.TempDir(), "hitch.db"))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(ctx)
	m, err := telemetry.NewMetrics(telemetry.MetricsOptions{Store: st, MeterProvider: mp, NoGauges: true})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	echo, err := tool.New("echo", "echoes", func(_ context.Context, in struct {
		S string `json:"s"`
	}) (string, error) {
		return in.S, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	a, err := hitch.Build(hitch.Spec{Name: "a", Policy: policy.AllowAll(), Tools: []tool.Tool{echo},
		Model: scripted.New("a", scripted.Script{Turns: []scripted.Turn{
			{Calls: []scripted.Call{{Name: "echo", Args: `{"s": "x"}`}, {Name: "echo", Args: `{"s": "y"}`}}},
			{Text: "done"}}})})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := hitch.Open(hitch.Config{Store: st, Agents: []*hitch.Agent{a}, OnStoreTiming: m.StoreTiming})
	if err != nil {
		t.Fatal(err)
	}
	// Detached, so that the run is claimed (a start this node drives is
	// born leased, and claims nothing).
	res, err := rt.Start(ctx, a, "go", hitch.Detached())
	if err != nil {
		t.Fatal(err)
	}
	if n, err := rt.RecoverAll(ctx); err != nil || n != 1 {
		t.Fatalf("recovered %d runs: %v", n, err)
	}
	if run, err := rt.Await(ctx, res.Run.ID); err != nil || run.Status != hitchtype.StatusCompleted {
		t.Fatalf("%+v %v", run, err)
	}
	if err := rt.Close(ctx); err != nil {
		t.Fatal(err)
	}
	es, err := st.JournalRead(ctx, store.JournalReadParams{RunID: res.Run.ID})
	if err != nil {
		t.Fatal(err)
	}
	hist := map[string]metricdata.HistogramDataPoint[float64]{}
	var entries metricdata.HistogramDataPoint[int64]
	for _, mt := range collect(t, reader) {
		switch d := mt.Data.(type) {
		case metricdata.Histogram[float64]:
			for _, p := range d.DataPoints {
				r, _ := p.Attributes.Value("hitch.result")
				hist[mt.Name+"/"+r.AsString()] = p
			}
		case metricdata.Histogram[int64]:
			if mt.Name == "hitch.journal.append.entries" {
				entries = d.DataPoints[0]
			}
		}
	}
	if entries.Sum != int64(len(es)-1) {
		t.Errorf("appends carried %d entries; the journal has %d after run.started", entries.Sum, len(es)-1)
	}
	appends := hist["hitch.journal.append.duration/ok"]
	if appends.Count == 0 || appends.Count != entries.Count {
		t.Errorf("%d appends timed, %d batch sizes", appends.Count, entries.Count)
	}
	if hist["hitch.claim.duration/ok"].Count == 0 {
		t.Errorf("no claim timed: %v", hist)
	}
}

// BenchmarkScrape serves /metrics over a store of runs (a tenth of them
// waiting on an approval), reading the store at every scrape, and, last,
// with the default cache.
func BenchmarkScrape(b *testing.B) {
	for _, c := range []struct {
		n     int
		cache time.Duration
	}{{100, -1}, {1000, -1}, {10000, -1}, {10000, 0}} {
		n := c.n
		name := fmt.Sprintf("runs=%d", n)
		if c.cache == 0 {
			name += "/cached"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "hitch.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			started := []store.EntryInput{entry(b, hitchtype.KindRunStarted, hitchtype.RunStarted{Agent: "a"})}
			for i := range n {
				id := fmt.Sprintf("r%05d", i)
				if i%10 == 0 {
					park(b, st, id, hitchtype.RunWaiting{Reason: hitchtype.WaitApproval, Calls: []string{"t1c1"}}, time.Now().Add(time.Hour))
					continue
				}
				if _, _, err := st.RunCreate(ctx, store.RunCreateParams{ID: id, Agent: "a", Version: 1, Entries: started}); err != nil {
					b.Fatal(err)
				}
			}
			r, h, err := telemetry.PrometheusReader()
			if err != nil {
				b.Fatal(err)
			}
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
			defer mp.Shutdown(ctx)
			m, err := telemetry.NewMetrics(telemetry.MetricsOptions{Store: st, MeterProvider: mp, CacheFor: c.cache})
			if err != nil {
				b.Fatal(err)
			}
			defer m.Close()
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
				if w.Code != 200 {
					b.Fatalf("%d %s", w.Code, w.Body)
				}
			}
		})
	}
}

// FromEnv with metric readers builds a Telemetry whose metrics reach them
// even when the variables ask for no export, or disable the SDK (then
// nothing is exported); without readers it builds none.
func TestFromEnvMetricReaders(t *testing.T) {
	t.Setenv("OTEL_SDK_DISABLED", "true")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	ctx := context.Background()
	st := hitchtest.OpenStore(t, filepath.Join(t.TempDir(), "hitch.db"))
	if tel, err := telemetry.FromEnv(ctx, telemetry.Options{Store: st}); err != nil || tel != nil {
		t.Fatalf("no readers: %v %v", tel, err)
	}
	reader := sdkmetric.NewManualReader()
	tel, err := telemetry.FromEnv(ctx, telemetry.Options{Store: st, MetricReaders: []sdkmetric.Reader{reader}})
	if err != nil || tel == nil || tel.MeterProvider() == nil {
		t.Fatalf("readers: %v %v", tel, err)
	}
	m, err := telemetry.NewMetrics(telemetry.MetricsOptions{Store: st, MeterProvider: tel.MeterProvider(), CacheFor: -1})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := gaugeValues(t, reader)["hitch.runs"]; !ok || len(got) != 8 {
		t.Errorf("hitch.runs through FromEnv's provider: %v", got)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tel.Shutdown(ctx); err != nil {
		t.Errorf("shutdown: %v", err)
	}
}

// TestMetricsBreakers: a route's breakers are gauges by route and model,
// read from the route as they stand at each collection.
func TestMetricsBreakers(t *testing.T) {
	ctx := context.Background()
	clk := testclock.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	r, err := route.New(route.Config{Name: "main", Now: clk.Now, Members: []route.Member{
		{Model: scripted.New("primary", scripted.Script{Turns: []scripted.Turn{{Text: "hi"}}})},
		{Model: scripted.New("backup", scripted.Script{Turns: []scripted.Turn{{Text: "hi"}}})},
	}})
	if err != nil {
		t.Fatal(err)
	}
	st := hitchtest.OpenStore(t, filepath.Join(t.TempDir(), "hitch.db"))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(ctx)
	m, err := telemetry.NewMetrics(telemetry.MetricsOptions{Store: st, MeterProvider: mp, NoGauges: true, Routes: []*route.Route{r}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	breakers := func() map[string]int64 {
		out := map[string]int64{}
		for _, met := range collect(t, reader) {
			g, ok := met.Data.(metricdata.Gauge[int64])
			if !ok {
				continue
			}
			for _, p := range g.DataPoints {
				rt, _ := p.Attributes.Value(attribute.Key("hitch.route"))
				mo, _ := p.Attributes.Value(attribute.Key("hitch.route.model"))
				out[met.Name+" "+rt.AsString()+" "+mo.AsString()] = p.Value
			}
		}
		return out
	}
	r.Report("scripted/primary", &model.Error{Kind: model.KindOverloaded})
	want := map[string]int64{
		"hitch.route.breaker.open route/main scripted/primary": 1, "hitch.route.breaker.failures route/main scripted/primary": 1,
		"hitch.route.breaker.open route/main scripted/backup": 0, "hitch.route.breaker.failures route/main scripted/backup": 0,
	}
	if got := breakers(); !maps.Equal(got, want) {
		t.Errorf("while cooling: %v, want %v", got, want)
	}
	clk.Add(route.DefaultCoolDown)
	want["hitch.route.breaker.open route/main scripted/primary"] = 0
	if got := breakers(); !maps.Equal(got, want) {
		t.Errorf("after the cool-down: %v, want %v", got, want)
	}
}

// collect reads every metric the reader holds now, of every scope.
func collect(t *testing.T, reader *sdkmetric.ManualReader) []metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var out []metricdata.Metrics
	for _, sm := range rm.ScopeMetrics {
		out = append(out, sm.Metrics...)
	}
	return out
}
