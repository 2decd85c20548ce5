package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/internal/otlptest"
	"github.com/hitch-dev/hitch/internal/testproc"
)

// The server's admin token and the approver credential its /mcp answers
// with: variables of hitch serve's environment a command must not read.
const (
	canaryAdmin      = "canary-admin-token-0123"
	credentialCanary = "canary-credential-5Kq7"
)

// The secret canary over a real hitch serve: a run started over the API,
// whose model and bash tool repeat the secrets and read the server's
// environment, leaves them out of every API answer (the run, the runs
// list, every journal page, the event stream, the family stream), of the
// spans the server exports over OTLP/gRPC with content recording on, and
// of what the server logs — under bwrap, and without isolation, where a
// command can read the server's /proc/PID/environ: the variables of the
// model key, the tool's secret, the server token and the approver
// credential are blank there.
func TestSecretCanaryOverServeAndSpans(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	t.Parallel()
	for name, path := range isolationPaths(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			serveCanary(t, path, name == "bwrap")
		})
	}
}

func serveCanary(t *testing.T, path string, isolated bool) {
	dir := canaryDir(t)
	f, err := os.OpenFile(filepath.Join(dir, "hitch.yaml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	extra := "server:\n  tokens:\n    - {name: admin, role: admin, env: HITCH_TOKEN_ADM}\n"
	if !isolated {
		extra += "sandbox: {require_isolation: false}\n"
	}
	if _, err := f.WriteString(extra); err != nil {
		t.Fatal(err)
	}
	f.Close()
	rcv := otlptest.StartGRPC(t)

	cmd := exec.Command(binary(t), "serve", "-c", filepath.Join(dir, "hitch.yaml"), "--addr", "127.0.0.1:0", "--poll", "50ms")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + path, "HOME=" + dir, "HITCH_CANARY_KEY=" + keyCanary, "HITCH_CANARY_TOKEN=" + tokenCanary,
		"HITCH_TOKEN_ADM=" + canaryAdmin, "HITCH_CREDENTIAL=ann:" + credentialCanary,
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.Endpoint(), "OTEL_EXPORTER_OTLP_PROTOCOL=grpc",
		"OTEL_METRICS_EXPORTER=none", "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true"}
	serve := testproc.Serve(t, cmd)
	url := serve.URL

	var answers strings.Builder // every API answer, whole
	client := &http.Client{Timeout: 70 * time.Second}
	call := func(method, path, body string) []byte {
		t.Helper()
		req, err := http.NewRequest(method, url+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+canaryAdmin)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if strings.HasSuffix(path, "/events") {
			req.Header.Set("Accept", "text/event-stream")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
		}
		answers.Write(b)
		return b
	}

	call("POST", "/v1/runs", `{"agent":"ops","input":"check the secrets","id":"canary-s"}`)
	var run struct{ Status string }
	for range 10 { // each wait is bounded by the server
		if json.Unmarshal(call("GET", "/v1/runs/canary-s/wait?timeout=30", ""), &run) != nil || run.Status != "running" {
			break
		}
	}
	if run.Status != "completed" {
		t.Fatalf("run ended %q:\n%s", run.Status, answers.String())
	}
	call("GET", "/v1/runs/canary-s", "")
	call("GET", "/v1/runs", "")
	pages := 0
	for after := "0"; after != ""; pages++ {
		var page struct{ Next *int64 }
		if err := json.Unmarshal(call("GET", "/v1/runs/canary-s/journal?limit=3&after="+after, ""), &page); err != nil {
			t.Fatal(err)
		}
		after = ""
		if page.Next != nil {
			after = fmt.Sprint(*page.Next)
		}
		if pages > 1000 {
			t.Fatal("the journal has no end")
		}
	}
	stream := string(call("GET", "/v1/runs/canary-s/events", ""))
	call("GET", "/v1/runs/canary-s/family/events", "")
	// The doctor's checks of the deployment name its secrets, never their values.
	if doc := string(call("GET", "/v1/doctor", "")); !strings.Contains(doc, `"name":"secrets"`) {
		t.Fatalf("GET /v1/doctor: %s", doc)
	}
	if pages < 5 || !strings.Contains(stream, "run.ended") || !strings.Contains(answers.String(), "[secret:gh]") {
		t.Fatalf("the API showed too little to judge (%d pages):\n%s", pages, answers.String())
	}
	if !isolated && !strings.Contains(answers.String(), "HITCH_CANARY_KEY=") && !strings.Contains(answers.String(), reverse("HITCH_CANARY_KEY=")) {
		t.Fatalf("the command did not read the server's environment:\n%s", answers.String())
	}

	// Spans are flushed when the server stops.
	if code := serve.Stop(); code != 0 {
		t.Fatalf("hitch serve on SIGTERM: exit %d", code)
	}
	names := map[string]bool{}
	for _, s := range rcv.Spans() {
		names[s.Name] = true
	}
	raw := string(rcv.Raw())
	if !names["invoke_agent ops"] || !names["execute_tool bash"] || !strings.Contains(raw, "gen_ai.output.text") {
		t.Fatalf("spans received: %v (content recorded: %v)", names, strings.Contains(raw, "gen_ai.output.text"))
	}

	if l := leaked(answers.String()); l != "" {
		t.Errorf("an API answer holds %q:\n%s", l, answers.String())
	}
	if l := leaked(raw); l != "" {
		t.Errorf("the exported spans hold %q", l)
	}
	if l := leaked(serve.Log()); l != "" {
		t.Errorf("the server logged %q:\n%s", l, serve.Log())
	}
}
