package telemetry_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/hitchtest"
	"github.com/hitch-dev/hitch/internal/otlptest"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/secret"
	"github.com/hitch-dev/hitch/telemetry"
	"github.com/hitch-dev/hitch/tool"
)

// clearOTEL unsets the OTEL_* variables a test does not set itself.
func clearOTEL(t *testing.T) {
	for _, k := range []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER",
		"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
		"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL",
		"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"} {
		t.Setenv(k, "")
	}
}

// TestFromEnvExportsOverGRPC runs an agent whose model and tool repeat a
// secret, with content recording on, and exports over OTLP/gRPC to an
// in-process collector on loopback: the spans and metrics arrive, and the
// secret is in none of the bytes exported.
func TestFromEnvExportsOverGRPC(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) }) // runs last
	rcv := otlptest.StartGRPC(t)
	clearOTEL(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rcv.Endpoint())
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	t.Setenv("OTEL_SERVICE_NAME", "hitch-grpc-test")

	ctx := context.Background()
	st := hitchtest.OpenStore(t, filepath.Join(t.TempDir(), "hitch.db"))
	red, err := secret.New(map[string]string{"KEY": canary})
	if err != nil {
		t.Fatal(err)
	}
	leak := tool.MustNew("leak", "Prints the key.", func(context.Context, struct{}) (string, error) { return "key=" + canary, nil })
	agent, err := hitch.Build(hitch.Spec{Name: "worker", Tools: []tool.Tool{leak}, Policy: policy.AllowAll(),
		Model: scripted.New("w", scripted.Script{Turns: []scripted.Turn{
			{Calls: []scripted.Call{{Name: "leak"}}},
			{Text: "the key is " + canary},
		}})})
	if err != nil {
		t.Fatal(err)
	}
	tel, err := telemetry.FromEnv(ctx, telemetry.Options{Store: st, Redactor: red, Content: true, Models: map[string]string{"worker": "scripted/w"}})
	if err != nil || tel == nil {
		t.Fatalf("FromEnv: %v %v", tel, err)
	}
	rt, err := hitch.Open(hitch.Config{Store: st, Agents: []*hitch.Agent{agent}, Secrets: red,
		OnEvent: func(ev hitch.Event) { tel.Observe(ctx, ev.RunID, ev.Entries) }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Start(ctx, agent, "go", hitch.WithID("g1")); err != nil {
		t.Fatal(err)
	}
	if run, err := rt.Await(ctx, "g1"); err != nil || run.Status != hitchtype.StatusCompleted {
		t.Fatalf("run: %+v %v", run, err)
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := rt.Close(cctx); err != nil {
		t.Fatal(err)
	}
	if err := tel.Shutdown(cctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}

	names := map[string]int{}
	for _, s := range rcv.Spans() {
		names[s.Name]++
	}
	if names["invoke_agent worker"] != 1 || names["chat w"] != 2 || names["execute_tool leak"] != 1 {
		t.Errorf("spans received over gRPC: %v", names)
	}
	metrics := strings.Join(rcv.Metrics(), " ")
	for _, want := range []string{"hitch.runs.ended", "gen_ai.client.token.usage", "hitch.tool.calls"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metric %s not received (have %s)", want, metrics)
		}
	}
	raw := rcv.Raw()
	if !strings.Contains(string(raw), "hitch-grpc-test") || !strings.Contains(string(raw), "[secret:KEY]") {
		t.Errorf("exports lack the service name or the redacted answer")
	}
	if strings.Contains(string(raw), canary) {
		t.Errorf("the secret was exported")
	}
}

// TestFromEnvProtocols checks which OTLP protocols FromEnv takes: grpc and
// http/protobuf, per signal or for both; anything else is refused naming
// the variable, as is a content switch that is not a boolean.
func TestFromEnvProtocols(t *testing.T) {
	ctx := context.Background()
	st := hitchtest.OpenStore(t, filepath.Join(t.TempDir(), "hitch.db"))
	for _, c := range []struct {
		env     map[string]string
		wantErr string
	}{
		{env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "http/protobuf"}},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, wantErr: `OTEL_EXPORTER_OTLP_PROTOCOL="http/json"`},
		{env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL": "GRPC"}, wantErr: `OTEL_EXPORTER_OTLP_METRICS_PROTOCOL="GRPC"`},
		{env: map[string]string{"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "yes please"}, wantErr: `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT="yes please"`},
	} {
		clearOTEL(t)
		// A port nobody listens on: exporters connect lazily, and
		// Shutdown below is bounded.
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
		for k, v := range c.env {
			t.Setenv(k, v)
		}
		tel, err := telemetry.FromEnv(ctx, telemetry.Options{Store: st})
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%v: err = %v, want one naming %s", c.env, err, c.wantErr)
			}
			continue
		}
		if err != nil || tel == nil {
			t.Errorf("%v: %v %v", c.env, tel, err)
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		_ = tel.Shutdown(sctx) // nothing was drawn; the last metric push finds no collector
		cancel()
	}
}
