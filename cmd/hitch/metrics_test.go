package main

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hitch-dev/hitch/internal/otlptest"
	"github.com/hitch-dev/hitch/internal/testproc"
)

// hitch serve pushes hitch's own metrics over OTLP when the OTEL_*
// variables ask for metrics: the gauges read at its last export, and the
// journal appends of the run it drove.
func TestServeExportsMetricsOverOTLP(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	t.Parallel()
	rec, srv := otlptest.StartHTTP(t)
	dir := t.TempDir()
	files := map[string]string{
		"hitch.yaml": "store: runs.db\nmodels:\n  m: {provider: scripted, script: s.yaml}\nagents:\n  - {name: a, model: m, policy: allow_all}\n",
		"s.yaml":     "turns:\n  - text: done\n",
	}
	writeFilesIn(t, dir, files)
	cmd := exec.Command(binary(t), "serve", "-c", filepath.Join(dir, "hitch.yaml"), "--addr", "127.0.0.1:0", "--metrics=false")
	cmd.Env = append(os.Environ(), "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT="+srv.URL+"/v1/metrics", "OTEL_TRACES_EXPORTER=none")
	serve := testproc.Serve(t, cmd)
	url := serve.URL
	resp, err := http.Post(url+"/v1/runs", "application/json", strings.NewReader(`{"agent": "a", "input": "go", "id": "r1"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var run struct {
		Status   string `json:"status"`
		Position int64  `json:"position"`
	}
	for range 10 {
		resp, err := http.Get(url + "/v1/runs/r1/wait?timeout=30")
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(resp.Body).Decode(&run)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if run.Status == "completed" {
			break
		}
	}
	if run.Status != "completed" {
		t.Fatalf("r1: %+v", run)
	}
	// /metrics is not served with --metrics=false.
	resp, err = http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("/metrics with --metrics=false: %d", resp.StatusCode)
	}
	if code := serve.Stop(); code != 0 {
		t.Fatalf("hitch serve: exit %d\n%s", code, serve.Log())
	}

	runs := rec.Last("hitch.runs")
	if runs == nil {
		t.Fatal("no hitch.runs exported")
	}
	completed := int64(-1)
	for _, p := range runs.GetGauge().GetDataPoints() {
		for _, a := range p.Attributes {
			if a.Key == "hitch.run.status" && a.Value.GetStringValue() == "completed" {
				completed = p.GetAsInt()
			}
		}
	}
	if completed != 1 {
		t.Errorf("hitch.runs{completed} = %d, want 1", completed)
	}
	entries := rec.Last("hitch.journal.append.entries")
	if entries == nil || len(entries.GetHistogram().GetDataPoints()) != 1 {
		t.Fatalf("hitch.journal.append.entries: %v", entries)
	}
	if got := entries.GetHistogram().GetDataPoints()[0].GetSum(); got != float64(run.Position-1) {
		t.Errorf("appends carried %v entries; the journal holds %d after run.started", got, run.Position-1)
	}
	if rec.Last("gen_ai.client.token.usage") == nil || rec.Last("hitch.claim.duration") == nil {
		t.Error("token usage or claim latency not exported")
	}
}
