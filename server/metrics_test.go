package server_test

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/internal/testproc"
)

// scrape reads /metrics with a token and parses the exposition format.
func scrape(t *testing.T, url, token string) map[string]*dto.MetricFamily {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("/metrics: %d %s", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("/metrics content type %q", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics does not parse: %v", err)
	}
	return fams
}

// sample finds the sample of a family whose labels include want; ok is
// false when there is none.
func sample(fams map[string]*dto.MetricFamily, name string, want ...string) (*dto.Metric, bool) {
	f := fams[name]
	if f == nil {
		return nil, false
	}
next:
	for _, m := range f.Metric {
		for i := 0; i+1 < len(want); i += 2 {
			found := false
			for _, l := range m.Label {
				if l.GetName() == want[i] && l.GetValue() == want[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		return m, true
	}
	return nil, false
}

func gauge(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	t.Helper()
	m, ok := sample(fams, name, labels...)
	if !ok {
		t.Fatalf("/metrics has no %s%v", name, labels)
	}
	return m.GetGauge().GetValue()
}

// allRuns lists every run a token sees.
func allRuns(t *testing.T, c *client) []api.Run {
	t.Helper()
	var out []api.Run
	after := ""
	for {
		var page api.RunPage
		c.do("GET", "/v1/runs?limit=1000&after="+after, nil).want(t, 200, "").decode(t, &page)
		out = append(out, page.Runs...)
		if page.Next == "" {
			return out
		}
		after = page.Next
	}
}

// TestMetrics scrapes a real hitch serve while scripted runs complete,
// wait for an approval and, across a killed process, park on an uncertain
// call, and checks the figures against the store and the journals.
func TestMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs hitch serve")
	}
	dir := testConfig(t, true)
	cfgPath := filepath.Join(dir, "hitch.yaml")
	b, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(b), "models:\n", "models:\n  risky: {provider: scripted, script: risky.yaml}\n", 1)
	cfg = strings.Replace(cfg, "agents:\n", "agents:\n  - {name: risky, model: risky, policy: allow_all, tools: [bash], workspace: ws}\n", 1)
	cfg += "prices:\n  quick: {input: 1000, output: 2000}\n"
	files := map[string]string{
		"hitch.yaml": cfg,
		"risky.yaml": "turns:\n  - calls: [{name: bash, args: '{\"command\": \"touch acted; sleep 60\"}'}]\n  - text: risky done\n",
	}
	testproc.WriteFiles(t, dir, files)
	p := serve(t, dir, "--metrics-cache", "0")
	s := loadSpec(t, p.URL, tokView)
	admin := &client{t: t, url: p.URL, token: tokAdmin, spec: s}

	// Without a token, and with another tenant's token, /metrics is refused.
	resp, err := http.Get(p.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(body), api.TypeUnauthorized) {
		t.Fatalf("unauthenticated /metrics: %d %s", resp.StatusCode, body)
	}
	req, _ := http.NewRequest(http.MethodGet, p.URL+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+tokB)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), api.TypeForbidden) {
		t.Fatalf("/metrics with tenant b's token: %d %s", resp.StatusCode, body)
	}

	// Runs that complete (a family with sub-agents among them), and one
	// that waits for an approval.
	for i := range 3 {
		start(t, admin, "quick", "go", fmt.Sprintf("q%d", i))
	}
	start(t, admin, "boss", "look around", "b1")
	start(t, admin, "gate", "deploy", "g1")
	for _, id := range []string{"q0", "q1", "q2", "b1"} {
		if r := wait(t, admin, id); r.Status != "completed" {
			t.Fatalf("%s: %+v", id, r)
		}
	}
	if r := wait(t, admin, "g1"); r.Status != "waiting" {
		t.Fatalf("g1: %+v", r)
	}

	fams := scrape(t, p.URL, tokView)
	runs := allRuns(t, admin)
	byStatus := map[string]int{}
	for _, r := range runs {
		byStatus[r.Status]++
	}
	for _, st := range []string{"queued", "running", "waiting", "completed", "failed", "cancelled", "answer_invalid", "budget_exhausted"} {
		if got := gauge(t, fams, "hitch_runs", "hitch_run_status", st); got != float64(byStatus[st]) {
			t.Errorf("hitch_runs{%s} = %v, the store has %d", st, got, byStatus[st])
		}
	}
	if byStatus["completed"] != 6 || byStatus["waiting"] != 1 {
		t.Errorf("runs by status %v: want 6 completed (3 quick, boss, 2 kids), 1 waiting", byStatus)
	}
	if got := gauge(t, fams, "hitch_approvals_pending"); got != 1 {
		t.Errorf("hitch_approvals_pending = %v, want 1", got)
	}
	if got := gauge(t, fams, "hitch_runs_due"); got != 0 {
		t.Errorf("hitch_runs_due = %v, want 0", got)
	}

	// Token usage, by model and type, and commits, against the journals.
	type tally struct{ n, sum float64 }
	tokens := map[string]tally{} // by type
	appended := 0
	cost := 0.0
	for _, r := range runs {
		es := journal(t, admin, r.ID)
		appended += len(es) - 1 // run.started is written with the run
		for _, e := range es {
			if e.Kind != "model.reply" {
				continue
			}
			var d struct {
				Reply struct {
					Usage *struct {
						In  *int64 `json:"input_tokens"`
						Out *int64 `json:"output_tokens"`
					} `json:"usage"`
				} `json:"reply"`
			}
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatal(err)
			}
			if u := d.Reply.Usage; u != nil {
				for typ, v := range map[string]*int64{"input": u.In, "output": u.Out} {
					if v != nil {
						tokens[typ] = tally{tokens[typ].n + 1, tokens[typ].sum + float64(*v)}
					}
				}
			}
		}
		if r.Agent == "quick" {
			if r.Outcome == nil || r.Outcome.CostUSD == nil {
				t.Fatalf("quick run %s has no cost: %+v", r.ID, r.Outcome)
			}
			cost += *r.Outcome.CostUSD
		}
	}
	if len(tokens) == 0 {
		t.Fatal("the journals report no usage")
	}
	for typ, want := range tokens {
		var got tally // over every model
		for _, m := range fams["gen_ai_client_token_usage"].GetMetric() {
			if _, ok := sample(map[string]*dto.MetricFamily{"x": {Metric: []*dto.Metric{m}}}, "x", "gen_ai_token_type", typ); ok {
				got.n += float64(m.GetHistogram().GetSampleCount())
				got.sum += m.GetHistogram().GetSampleSum()
			}
		}
		if got != want {
			t.Errorf("gen_ai_client_token_usage{%s}: count %v sum %v, the journals have %v and %v", typ, got.n, got.sum, want.n, want.sum)
		}
	}
	if m, ok := sample(fams, "hitch_journal_append_entries"); !ok {
		t.Errorf("no hitch_journal_append_entries: %v", names(fams))
	} else if got := m.GetHistogram().GetSampleSum(); got != float64(appended) {
		t.Errorf("hitch_journal_append_entries sums %v entries, the journals hold %d appended", got, appended)
	}
	if m, ok := sample(fams, "hitch_journal_append_duration_seconds", "hitch_result", "ok"); !ok || m.GetHistogram().GetSampleCount() == 0 {
		t.Error("no hitch_journal_append_duration_seconds")
	}
	if m, ok := sample(fams, "hitch_claim_duration_seconds", "hitch_result", "ok"); !ok || m.GetHistogram().GetSampleCount() == 0 {
		t.Error("no hitch_claim_duration_seconds")
	}
	if m, ok := sample(fams, "hitch_cost_USD_total", "gen_ai_agent_name", "quick"); !ok {
		t.Errorf("no hitch_cost_USD_total for quick: %v", names(fams))
	} else if got := m.GetCounter().GetValue(); math.Abs(got-cost) > 1e-9 {
		t.Errorf("hitch_cost_USD_total{quick} = %v, the outcomes say %v", got, cost)
	}

	// A bash call cut short by a killed process: the next process finds
	// its outcome unknown and parks the run.
	start(t, admin, "risky", "change something", "r1")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, "ws", "acted")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bash body never ran:\n%s", p.Log())
		}
	}
	p.Kill()
	p2 := serve(t, dir, "--metrics-cache", "0")
	admin2 := &client{t: t, url: p2.URL, token: tokAdmin, spec: s}
	if r := wait(t, admin2, "r1"); r.Status != "waiting" {
		t.Fatalf("r1: %+v", r)
	}
	fams = scrape(t, p2.URL, tokView)
	if got := gauge(t, fams, "hitch_calls_uncertain"); got != 1 {
		t.Errorf("hitch_calls_uncertain = %v, want 1", got)
	}
	if m, ok := sample(fams, "hitch_tool_calls_total", "hitch_call_outcome", "uncertain", "gen_ai_tool_name", "bash"); !ok || m.GetCounter().GetValue() != 1 {
		t.Errorf("hitch_tool_calls_total{uncertain, bash}: %v", m)
	}
	if got := gauge(t, fams, "hitch_approvals_pending"); got != 1 {
		t.Errorf("after a restart hitch_approvals_pending = %v, want 1", got)
	}
	if got := gauge(t, fams, "hitch_runs", "hitch_run_status", "waiting"); got != 2 {
		t.Errorf("hitch_runs{waiting} = %v, want 2", got)
	}
	p2.Stop()
}

func names(fams map[string]*dto.MetricFamily) []string {
	var out []string
	for n := range fams {
		out = append(out, n)
	}
	return out
}
