package telemetry_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/hitchtest"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/sqlite"
	"github.com/hitch-dev/hitch/telemetry"
	"github.com/hitch-dev/hitch/tool"
)

// countingStore is a real store that counts the reads telemetry makes and
// can hold one run's RunGet until released.
type countingStore struct {
	store.Store
	reads   atomic.Int64
	holdRun string
	entered chan struct{}
	release chan struct{}
}

func (s *countingStore) RunGet(ctx context.Context, id string) (store.Run, error) {
	s.reads.Add(1)
	if id == s.holdRun {
		close(s.entered)
		<-s.release
	}
	return s.Store.RunGet(ctx, id)
}

func (s *countingStore) JournalRead(ctx context.Context, p store.JournalReadParams) ([]store.Entry, error) {
	s.reads.Add(1)
	return s.Store.JournalRead(ctx, p)
}

// journals runs n two-step runs to completion with no telemetry and
// returns the store and each run's journal, as a runtime would hand them
// to Observe.
func journals(t *testing.T, n int) (store.Store, [][]store.Entry) {
	t.Helper()
	ctx := context.Background()
	st := hitchtest.OpenStore(t, filepath.Join(t.TempDir(), "hitch.db"), sqlite.WithSync(sqlite.SyncNormal))
	echo := tool.MustNew("echo", "Echoes.", func(_ context.Context, in struct{ S string }) (string, error) { return in.S, nil })
	agent, err := hitch.Build(hitch.Spec{Name: "worker", Tools: []tool.Tool{echo}, Policy: policy.AllowAll(),
		Model: scripted.New("w", scripted.Script{Turns: []scripted.Turn{
			{Calls: []scripted.Call{{Name: "echo", Args: `{"S":"one"}`}}},
			{Calls: []scripted.Call{{Name: "echo", Args: `{"S":"two"}`}}},
			{Text: "done"},
		}})})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := hitch.Open(hitch.Config{Store: st, Agents: []*hitch.Agent{agent}, MaxRunners: n})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rt.Close(ctx) }()
	out := make([][]store.Entry, n)
	for i := range n {
		id := fmt.Sprintf("r%d", i)
		if _, err := rt.Start(ctx, agent, "go", hitch.WithID(id)); err != nil {
			t.Fatal(err)
		}
		if run, err := rt.Await(ctx, id); err != nil || run.Status != hitchtype.StatusCompleted {
			t.Fatalf("run %s: %+v %v", id, run, err)
		}
		if out[i], err = st.JournalRead(ctx, store.JournalReadParams{RunID: id, Limit: 1000}); err != nil {
			t.Fatal(err)
		}
	}
	return st, out
}

// TestObserveIsIdleWithNothingToFeed checks that with neither an exporter
// nor a meter provider, Observe reads nothing and allocates nothing.
func TestObserveIsIdleWithNothingToFeed(t *testing.T) {
	st, runs := journals(t, 1)
	cs := &countingStore{Store: st}
	tel, err := telemetry.New(telemetry.Options{Store: cs})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tel.Shutdown(context.Background()) }()
	ctx := context.Background()
	allocs := testing.AllocsPerRun(10, func() {
		for _, e := range runs[0] {
			tel.Observe(ctx, "r0", []store.Entry{e})
		}
	})
	if allocs != 0 || cs.reads.Load() != 0 {
		t.Errorf("idle Observe: %.0f allocations and %d store reads per journal, want none", allocs, cs.reads.Load())
	}
}

// TestObserveMetersWithoutSpans checks that a meter provider alone still
// gets every metric, drawn from the same entries.
func TestObserveMetersWithoutSpans(t *testing.T) {
	st, runs := journals(t, 2)
	reader := sdkmetric.NewManualReader()
	tel, err := telemetry.New(telemetry.Options{Store: st, MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)),
		Models: map[string]string{"worker": "scripted/w"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tel.Shutdown(context.Background()) }()
	ctx := context.Background()
	for i, es := range runs {
		tel.Observe(ctx, fmt.Sprintf("r%d", i), es)
	}
	sums := map[string]int64{}
	for _, m := range collect(t, reader) {
		switch d := m.Data.(type) {
		case metricdata.Sum[int64]:
			for _, p := range d.DataPoints {
				sums[m.Name] += p.Value
			}
		case metricdata.Histogram[float64]:
			for _, p := range d.DataPoints {
				sums[m.Name] += int64(p.Count)
			}
		case metricdata.Histogram[int64]:
			for _, p := range d.DataPoints {
				sums[m.Name] += int64(p.Count)
			}
		}
	}
	// Two runs, each three model replies (input and output tokens each)
	// and two tool calls.
	want := map[string]int64{"hitch.runs.ended": 2, "hitch.tool.calls": 4, "gen_ai.client.operation.duration": 6, "gen_ai.client.token.usage": 12}
	for name, n := range want {
		if sums[name] != n {
			t.Errorf("%s: %d, want %d (all: %v)", name, sums[name], n, sums)
		}
	}
}

// TestObserveOneRunDoesNotWaitForAnother checks that a run first seen
// mid-way, whose family and earlier entries are being read from the store,
// holds up no other run's spans.
func TestObserveOneRunDoesNotWaitForAnother(t *testing.T) {
	st, runs := journals(t, 2)
	cs := &countingStore{Store: st, holdRun: "r0", entered: make(chan struct{}), release: make(chan struct{})}
	exp := tracetest.NewInMemoryExporter()
	tel, err := telemetry.New(telemetry.Options{Store: cs, Exporter: exp})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var held sync.WaitGroup
	held.Go(func() {
		tel.Observe(ctx, "r0", runs[0][3:]) // as another process recovering it would
	})
	<-cs.entered
	done := make(chan struct{})
	go func() {
		tel.Observe(ctx, "r1", runs[1])
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Error("run r1 waited for r0's store read")
	}
	close(cs.release)
	held.Wait()
	<-done
	defer func() { _ = tel.Shutdown(ctx) }()
	if err := tel.ForceFlush(ctx); err != nil { // Shutdown would empty the exporter
		t.Fatal(err)
	}
	perRun := map[string]int{}
	for _, s := range exp.GetSpans() {
		for _, a := range s.Attributes {
			if a.Key == "hitch.run.id" {
				perRun[a.Value.AsString()]++
			}
		}
	}
	// Per run: one run span, three chat spans, two tool spans.
	if perRun["r0"] != 6 || perRun["r1"] != 6 {
		t.Errorf("spans per run: %v, want 6 each", perRun)
	}
}

// TestObserveManyRunsAtOnce observes runs concurrently, a batch at a time
// as a runtime hands them over, and checks that every run's spans are
// drawn whole.
func TestObserveManyRunsAtOnce(t *testing.T) {
	const n = 16
	st, runs := journals(t, n)
	cs := &countingStore{Store: st}
	exp := tracetest.NewInMemoryExporter()
	tel, err := telemetry.New(telemetry.Options{Store: cs, Exporter: exp, Models: map[string]string{"worker": "scripted/w"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var wg sync.WaitGroup
	for i, es := range runs {
		wg.Go(func() {
			for j := 0; j < len(es); j += 2 {
				tel.Observe(ctx, fmt.Sprintf("r%d", i), es[j:min(j+2, len(es))])
			}
		})
	}
	wg.Wait()
	defer func() { _ = tel.Shutdown(ctx) }()
	if err := tel.ForceFlush(ctx); err != nil { // Shutdown would empty the exporter
		t.Fatal(err)
	}
	names := map[string]int{}
	for _, s := range exp.GetSpans() {
		names[s.Name]++
	}
	if names["invoke_agent worker"] != n || names["chat w"] != 3*n || names["execute_tool echo"] != 2*n {
		t.Errorf("spans: %v", names)
	}
	// Root runs seen from their start: nothing to look up.
	if r := cs.reads.Load(); r != 0 {
		t.Errorf("%d store reads for root runs seen from their start", r)
	}
}
