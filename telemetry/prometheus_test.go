package telemetry_test

import (
	"context"
	"io"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/hitchtest"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/telemetry"
)

// The Prometheus handler serves the GenAI and hitch metrics of runs.
func TestPrometheusHandler(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	mp, h, err := telemetry.Prometheus()
	if err != nil {
		t.Fatal(err)
	}
	st := hitchtest.OpenStore(t, filepath.Join(t.TempDir(), "hitch.db"))
	tel, err := telemetry.New(telemetry.Options{Store: st, MeterProvider: mp, Models: map[string]string{"a": "scripted/a"}})
	if err != nil {
		t.Fatal(err)
	}
	defer tel.Shutdown(ctx)
	a, err := hitch.Build(hitch.Spec{Name: "a", Policy: policy.AllowAll(),
		Model: scripted.New("a", scripted.Script{Turns: []scripted.Turn{{Text: "hi"}}})})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := hitch.Open(hitch.Config{Store: st, Agents: []*hitch.Agent{a}, OnEvent: func(ev hitch.Event) { tel.Observe(ctx, ev.RunID, ev.Entries) }})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(ctx)
	res, err := rt.Start(ctx, a, "go")
	if err != nil {
		t.Fatal(err)
	}
	if run, err := rt.Await(ctx, res.Run.ID); err != nil || run.Status != hitchtype.StatusCompleted {
		t.Fatalf("%+v %v", run, err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"gen_ai_client_token_usage", "gen_ai_client_operation_duration", `hitch_runs_ended`, `hitch_run_status="completed"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("/metrics lacks %s:\n%s", want, b)
		}
	}
}
