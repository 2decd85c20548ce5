package main

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/hitch-dev/hitch/internal/otlptest"
	"github.com/hitch-dev/hitch/internal/testproc"
)

// A family with a model retry, a denial, a sub-agent, an approval, and a
// process killed mid-call then recovered and reconciled, driven by five
// processes that each export over OTLP: one trace, the right tree.
func TestOTLPTraceOfAFamilyAcrossProcesses(t *testing.T) {
	testproc.Heavy(t, "builds the binary")
	rec, srv := otlptest.StartHTTP(t)
	dir := t.TempDir()
	files := map[string]string{
		"hitch.yaml": `
models:
  boss: {provider: scripted, script: boss.yaml}
  kid: {provider: scripted, script: kid.yaml}
agents:
  - name: boss
    model: boss
    tools: [bash, read]
    sub_agents: [researcher]
    workspace: .
    limits: {retry_delay: 1ms}
    policy:
      - {tools: [read], verdict: deny, reason: never}
      - {tools: [bash], verdict: approval, requirement: ops}
      - {tools: ["*"], verdict: allow}
    approvers:
      - {name: ann, secret: ann-secret-123, requirements: [ops]}
  - name: researcher
    model: kid
    description: Finds facts.
    policy: allow_all
`,
		"boss.yaml": `turns:
  - fail: [{kind: overloaded, message: busy}]
    calls:
      - {name: researcher, args: '{"prompt": "find it"}'}
      - {name: read, args: '{"path": "x"}'}
  - calls: [{name: bash, args: '{"command": "echo started > started.txt; sleep 30"}'}]
  - text: done
`,
		"kid.yaml": "turns:\n  - text: the answer is 42\n",
	}
	writeFilesIn(t, dir, files)
	env := append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT="+srv.URL, "OTEL_SERVICE_NAME=hitch-test",
		"HITCH_CREDENTIAL=ann:ann-secret-123", "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf")
	hitchCmd := func(args ...string) *exec.Cmd {
		cmd := exec.Command(binary(t), append([]string{"--log-format", "json", "--log-level", "info"}, args...)...)
		testproc.DieWithParent(cmd)
		cmd.Dir, cmd.Env = dir, env
		return cmd
	}
	var logs strings.Builder
	step := func(want int, args ...string) {
		t.Helper()
		var out, errOut bytes.Buffer
		cmd := hitchCmd(args...)
		cmd.Stdout, cmd.Stderr = &out, &errOut
		code := exitCode(t, cmd.Run())
		logs.WriteString(errOut.String())
		if code != want {
			t.Fatalf("%v: exit %d, want %d\n%s\n%s", args, code, want, out.String(), errOut.String())
		}
	}
	// 1: the run retries, delegates, is denied a read and parks for the
	// approval of its bash call.
	step(exitWaiting, "run", "--agent", "boss", "--id", "fam", "go")
	// 2: the approval is granted and the call starts; the process dies.
	cmd := hitchCmd("approvals", "approve", "fam", "t2c1", "--lease-ttl", "300ms")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
		}
	}()
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, "started.txt")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the approved call never started")
		}
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	// 3: another process recovers it: the call's effect is unknown.
	step(exitWaiting, "recover", "--wait", "2s")
	// 4: a person reconciles it and the run completes.
	step(exitOK, "reconcile", "fam", "t2c1", "--output", "it ran")

	spans := rec.Spans()
	if len(spans) == 0 {
		t.Fatal("no spans exported")
	}
	trace := spans[0].TraceId
	byName := map[string][]*tracepb.Span{}
	for _, s := range spans {
		byName[s.Name] = append(byName[s.Name], s)
		if !bytes.Equal(s.TraceId, trace) {
			t.Errorf("span %s is in trace %x, not %x", s.Name, s.TraceId, trace)
		}
	}
	one := func(name string) *tracepb.Span {
		t.Helper()
		if len(byName[name]) != 1 {
			var names []string
			for _, s := range spans {
				names = append(names, s.Name)
			}
			t.Fatalf("want one %q span, have: %s", name, strings.Join(names, ", "))
		}
		return byName[name][0]
	}
	root, child := one("invoke_agent boss"), one("invoke_agent researcher")
	delegation, shell := one("execute_tool researcher"), one("execute_tool bash")
	if len(root.ParentSpanId) != 0 {
		t.Error("the root run's span has a parent")
	}
	if !bytes.Equal(child.ParentSpanId, delegation.SpanId) {
		t.Error("the sub-agent's run is not a child of the call that started it")
	}
	for _, s := range append(byName["chat boss"], delegation, shell) {
		if !bytes.Equal(s.ParentSpanId, root.SpanId) {
			t.Errorf("%s is not under the run's span", s.Name)
		}
	}
	if n := len(byName["chat boss"]); n < 3 {
		t.Errorf("chat boss spans: %d, want a failure and replies", n)
	}
	attr := func(s *tracepb.Span, key string) string {
		for _, a := range s.Attributes {
			if a.Key == key {
				return a.Value.GetStringValue()
			}
		}
		return ""
	}
	if attr(shell, "hitch.call.outcome") != "uncertain" || attr(shell, "hitch.policy.verdict") != "approval" {
		t.Errorf("bash span attributes: %v", shell.Attributes)
	}
	events := map[string]int{}
	for _, e := range root.Events {
		events[e.Name]++
	}
	if events["model.retry"] != 1 || events["policy.decision"] < 3 || events["approval.granted"] != 1 || events["call.reconciled"] != 1 {
		t.Errorf("run span events: %v", events)
	}
	// The log lines carry the run and the same trace id.
	traceHex := hex.EncodeToString(trace)
	found := false
	for l := range strings.Lines(logs.String()) {
		var line map[string]any
		if json.Unmarshal([]byte(l), &line) != nil {
			continue
		}
		if line["msg"] == "run ended" && line["run"] == "fam" {
			found = true
			if line["trace_id"] != traceHex {
				t.Errorf("log line trace id %v, want %s", line["trace_id"], traceHex)
			}
		}
	}
	if !found {
		t.Errorf("no JSON log line says the run ended:\n%s", logs.String())
	}
}

// hitch serve pushes hitch's own metrics over OTLP when the OTEL_*
// variables ask for metrics: the gauges read at its last export, and the
// journal appends of the run it drove.
func TestServeExportsMetricsOverOTLP(t *testing.T) {
	testproc.Heavy(t, "builds the binary")
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
