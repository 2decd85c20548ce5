package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/testclock"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/anthropic"
	"github.com/hitch-dev/hitch/model/modeltest"
	"github.com/hitch-dev/hitch/model/openai"
	"github.com/hitch-dev/hitch/model/route"
	"github.com/hitch-dev/hitch/store"
)

// routeChild names the crash child that runs the route agent.
const routeChild = "route"

// The route's two models: OpenAI's Chat Completions first, Anthropic second.
const (
	primaryName = "openai/gpt-4o-mini"
	backupName  = "anthropic/claude-sonnet-4-5"
)

// routeOpts adjust routeAgent.
type routeOpts struct {
	hc1, hc2 *http.Client
	// timeout bounds one attempt at the primary.
	timeout time.Duration
	now     func() time.Time
	budget  *hitch.Budget
	limits  hitch.Limits
	// window is the second model's context window.
	window int64
}

// routeAgent builds the add agent on a route: the Chat Completions model at
// primaryURL, then the Anthropic model at backupURL.
func routeAgent(primaryURL, backupURL string, o routeOpts, effects string) (*hitch.Agent, *route.Route, error) {
	primary, err := openai.New(openai.Config{Model: "gpt-4o-mini", BaseURL: primaryURL + "/v1", APIKey: testKey, HTTPClient: o.hc1})
	if err != nil {
		return nil, nil, err
	}
	backup, err := anthropic.New(anthropic.Config{Model: "claude-sonnet-4-5", BaseURL: backupURL, APIKey: testKey, HTTPClient: o.hc2})
	if err != nil {
		return nil, nil, err
	}
	r, err := route.New(route.Config{Name: "main", Now: o.now,
		Members: []route.Member{{Model: primary, Timeout: o.timeout}, {Model: backup, Window: o.window}}})
	if err != nil {
		return nil, nil, err
	}
	a, err := agentOn("e2e-route", r, o.budget, o.limits, effects)
	return a, r, err
}

// newClock is a breaker clock that moves only when the test moves it.
func newClock() *testclock.Clock { return testclock.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)) }

// attempts returns the journal's model.attempt entries.
func attempts(t *testing.T, es []store.Entry) []hitchtype.ModelAttempt {
	t.Helper()
	return dataOf[hitchtype.ModelAttempt](t, es, hitchtype.KindModelAttempt)
}

// dataOf decodes the data of the journal's entries of kind, in order.
func dataOf[T any](t *testing.T, es []store.Entry, kind string) []T {
	t.Helper()
	var out []T
	for _, e := range es {
		if e.Kind != kind {
			continue
		}
		var d T
		if err := json.Unmarshal(e.Data, &d); err != nil {
			t.Fatal(err)
		}
		out = append(out, d)
	}
	return out
}

// wantAttempt checks one attempt's choice.
func wantAttempt(t *testing.T, a hitchtype.ModelAttempt, model, why string, after model.Kind, skipped ...string) {
	t.Helper()
	var skips []string
	for _, s := range a.Skipped {
		skips = append(skips, s.Model+" "+s.Why)
	}
	if a.Route != "route/main" || a.Model != model || a.Why != why || a.After != after || strings.Join(skips, ",") != strings.Join(skipped, ",") {
		t.Errorf("attempt %d: route %q model %q why %q after %q skipped %q; want route/main %s %s %q skipped %q",
			a.Attempt, a.Route, a.Model, a.Why, a.After, skips, model, why, after, skipped)
	}
}

// answered runs a to its end on a runtime over dir's store; it fails the
// test unless the run completed with the answer after n model attempts,
// and returns the run's journal and its attempts.
func answered(t *testing.T, dir string, a *hitch.Agent, n int) (*hitch.Runtime, hitch.Run, []store.Entry, []hitchtype.ModelAttempt) {
	t.Helper()
	rt := open(t, filepath.Join(dir, "hitch.db"), a)
	run := runToEnd(t, rt, a)
	if run.Status != hitchtype.StatusCompleted || run.Outcome.Answer != answer {
		t.Fatalf("status %s, outcome %+v; want completed with %q", run.Status, run.Outcome, answer)
	}
	es := journal(t, rt, runID)
	at := attempts(t, es)
	if len(at) != n {
		t.Fatalf("%d model attempts, want %d", len(at), n)
	}
	return rt, run, es, at
}

func runToEnd(t *testing.T, rt *hitch.Runtime, a *hitch.Agent) hitch.Run {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	if _, err := rt.Start(ctx, a, input, hitch.WithID(runID)); err != nil {
		t.Fatal(err)
	}
	run, err := rt.Await(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

// TestRouteFallback: the first provider fails with each moving class; the
// second answers at once, and the journal names both and why.
func TestRouteFallback(t *testing.T) {
	t.Parallel()
	chat, _ := providerNamed("chat")
	claude, _ := providerNamed("anthropic")
	cases := []struct {
		name    string
		fail    modeltest.Exchange
		timeout time.Duration
		kind    model.Kind
	}{
		{"529", modeltest.Exchange{Status: 529, Body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`}, 0, model.KindOverloaded},
		{"503", modeltest.Exchange{Status: 503, ContentType: "text/html", Body: "<html><body>upstream connect error</body></html>"}, 0, model.KindOverloaded},
		{"429", modeltest.Exchange{Status: 429, Header: map[string]string{"Retry-After": "30"},
			Body: `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`}, 0, model.KindRateLimited},
		// The stream starts, then nothing: the member's timeout ends it.
		{"timeout", modeltest.Exchange{Body: "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[]}\n\n", Hold: true}, 300 * time.Millisecond, model.KindTimedOut},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			effects := filepath.Join(dir, "effects.log")
			s1 := modeltest.NewServer(t, tc.fail)
			s2 := modeltest.NewServer(t, fixture(t, claude, "add"), fixture(t, claude, "answer"))
			a, _, err := routeAgent(s1.URL, s2.URL, routeOpts{hc1: s1.Client(), hc2: s2.Client(), timeout: tc.timeout, now: newClock().Now}, effects)
			if err != nil {
				t.Fatal(err)
			}
			_, run, es, at := answered(t, dir, a, 3)
			wantAttempt(t, at[0], primaryName, route.WhyFirst, "")
			wantAttempt(t, at[1], backupName, route.WhyFallback, tc.kind)
			// Turn 2 starts at the top, where the breaker passes over the
			// model that failed.
			wantAttempt(t, at[2], backupName, route.WhyFirst, "", primaryName+" "+route.SkipCoolingDown)
			for _, f := range dataOf[hitchtype.ModelFailed](t, es, hitchtype.KindModelFailed) {
				if f.Kind != tc.kind || f.Attempt != 1 {
					t.Errorf("model.failed %+v, want attempt 1 of kind %s", f, tc.kind)
				}
			}
			requests(t, chat, s1, 1)
			got, _ := requests(t, claude, s2, 2)
			checkTurns(t, claude, got)
			if e := readEffects(t, effects); e != effectLine {
				t.Errorf("effects %q, want %q", e, effectLine)
			}
			// The failed attempt reported nothing: the totals are unknown.
			if u := run.Outcome.Usage; u.InputTokens != nil || run.Outcome.CostUSD != nil || u.Generations != 3 {
				t.Errorf("usage %+v cost %v: want null totals over 3 generations", u, run.Outcome.CostUSD)
			}
		})
	}
}

// TestRouteUnauthorized: a rejected key at the first model fails the run
// there; the second is never asked.
func TestRouteUnauthorized(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s1 := modeltest.NewServer(t, modeltest.Exchange{Status: 401,
		Body: `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`})
	s2 := modeltest.NewServer(t)
	a, r, err := routeAgent(s1.URL, s2.URL, routeOpts{hc1: s1.Client(), hc2: s2.Client(), now: newClock().Now}, filepath.Join(dir, "effects.log"))
	if err != nil {
		t.Fatal(err)
	}
	rt := open(t, filepath.Join(dir, "hitch.db"), a)
	run := runToEnd(t, rt, a)
	if run.Status != hitchtype.StatusFailed || run.Outcome.Reason != "model" || !strings.Contains(run.Outcome.Error, "unauthorized") {
		t.Fatalf("status %s, outcome %+v; want failed for an unauthorized model call", run.Status, run.Outcome)
	}
	at := attempts(t, journal(t, rt, runID))
	if len(at) != 1 {
		t.Fatalf("%d attempts, want 1", len(at))
	}
	wantAttempt(t, at[0], primaryName, route.WhyFirst, "")
	if n := len(s2.Requests()); n != 0 {
		t.Errorf("the second model saw %d requests, want none", n)
	}
	if b := r.Breakers(); b[0].Open {
		t.Errorf("breaker %+v: a rejected key must not open it", b[0])
	}
}

// TestRouteFamilyUSD: a family budget in USD spent on two models priced
// differently. The primary is cooling when the run starts, so turn 1 goes
// to the second model; the second model's server lets the cool-down pass
// while it answers, so turn 2 goes back to the first. Each reply is priced
// at its own model, and the family's spend is their sum to the micro-USD.
func TestRouteFamilyUSD(t *testing.T) {
	t.Parallel()
	chat, _ := providerNamed("chat")
	claude, _ := providerNamed("anthropic")
	dir := t.TempDir()
	clk := newClock()
	addBody := fixture(t, claude, "add").Body
	s1 := modeltest.NewServer(t, fixture(t, chat, "answer"))
	s2 := modeltest.NewServer(t, modeltest.Exchange{Handler: func(w http.ResponseWriter, _ *http.Request) {
		clk.Add(route.DefaultCoolDown)
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, addBody)
	}})
	a, r, err := routeAgent(s1.URL, s2.URL, routeOpts{hc1: s1.Client(), hc2: s2.Client(), now: clk.Now, budget: &hitch.Budget{USD: 1}}, filepath.Join(dir, "effects.log"))
	if err != nil {
		t.Fatal(err)
	}
	r.Report(primaryName, &model.Error{Kind: model.KindOverloaded, Message: "an earlier run's failure"})
	rt, run, es, at := answered(t, dir, a, 2)
	wantAttempt(t, at[0], backupName, route.WhyFirst, "", primaryName+" "+route.SkipCoolingDown)
	wantAttempt(t, at[1], primaryName, route.WhyFirst, "")

	prices := model.DefaultPrices()
	var costs []float64
	var micro int64
	for i, d := range dataOf[hitchtype.ModelReply](t, es, hitchtype.KindModelReply) {
		name := []string{backupName, primaryName}[len(costs)]
		want, ok := prices.Cost(name, d.Reply.Usage)
		other, _ := prices.Cost([]string{primaryName, backupName}[len(costs)], d.Reply.Usage)
		if !ok || d.CostUSD == nil || *d.CostUSD != want || want == other {
			t.Fatalf("reply %d: priced %v, want %v at %s's price (the other model's would be %v)", i, d.CostUSD, want, name, other)
		}
		costs = append(costs, want)
		micro += int64(math.Ceil(want * 1e6))
	}
	if len(costs) != 2 {
		t.Fatalf("%d replies, want 2", len(costs))
	}
	if c := run.Outcome.CostUSD; c == nil || *c != costs[0]+costs[1] {
		t.Errorf("run cost %v, want %v + %v", c, costs[0], costs[1])
	}
	limits, used, ok, err := rt.FamilyBudget(t.Context(), runID)
	if err != nil || !ok {
		t.Fatalf("family budget: %v, %t", err, ok)
	}
	if used.USD != float64(micro)/1e6 || used.ModelCalls != 2 || limits.USD != 1 {
		t.Errorf("family spent %v USD over %d calls of a %v budget; want %v over 2", used.USD, used.ModelCalls, limits.USD, float64(micro)/1e6)
	}
}

// TestRouteCrash kills a child process while the second model of the
// route holds the fallback's call open, and recovers the run here: the
// recovered attempt goes to the same model with the same request, byte
// for byte, and the run goes on down the route.
func TestRouteCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Parallel()
	chat, _ := providerNamed("chat")
	claude, _ := providerNamed("anthropic")
	dir := t.TempDir()
	db, effects := filepath.Join(dir, "hitch.db"), filepath.Join(dir, "effects.log")
	addFixture := fixture(t, claude, "add")
	hold, held, release := holdOpen(addFixture)
	s1 := modeltest.NewServer(t,
		modeltest.Exchange{Status: 503, Body: `{"error":{"message":"The server is overloaded","type":"server_error"}}`},
		fixture(t, chat, "answer"))
	s2 := modeltest.NewServer(t, hold, addFixture)
	t.Cleanup(release)

	killChild(t, held, envChild+"="+routeChild, envURL+"="+s1.URL, envURL2+"="+s2.URL, envDB+"="+db, envEffects+"="+effects)

	a, _, err := routeAgent(s1.URL, s2.URL, routeOpts{hc1: s1.Client(), hc2: s2.Client(), now: newClock().Now}, effects)
	if err != nil {
		t.Fatal(err)
	}
	rt := open(t, db, a)
	left := journal(t, rt, runID)
	if last := left[len(left)-1]; last.Kind != hitchtype.KindModelAttempt || len(attempts(t, left)) != 2 {
		t.Fatalf("the child left %d entries ending in %s; want it killed in the fallback's call", len(left), last.Kind)
	}
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	recoverRun(ctx, t, rt)
	run, err := rt.Await(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != hitchtype.StatusCompleted || run.Outcome.Answer != answer {
		t.Fatalf("status %s, outcome %+v", run.Status, run.Outcome)
	}
	at := attempts(t, journal(t, rt, runID))
	if len(at) != 4 {
		t.Fatalf("%d attempts, want 4", len(at))
	}
	wantAttempt(t, at[0], primaryName, route.WhyFirst, "")
	wantAttempt(t, at[1], backupName, route.WhyFallback, model.KindOverloaded)
	wantAttempt(t, at[2], backupName, route.WhyRecovered, "")
	// This process's breaker never saw the failure: turn 2 starts at the
	// top of the route again.
	wantAttempt(t, at[3], primaryName, route.WhyFirst, "")
	_, bodies := requests(t, claude, s2, 2)
	if !bytes.Equal(bodies[0], bodies[1]) {
		t.Errorf("the recovered request differs from the interrupted one:\n%s\n%s", bodies[0], bodies[1])
	}
	requests(t, chat, s1, 2)
	if e := readEffects(t, effects); e != effectLine {
		t.Errorf("effects %q, want the body run once: %q", e, effectLine)
	}
}

// TestRouteCompactsForTheFallback: the second model has a smaller window,
// so when the request falls back to it the transcript is first compacted
// for that window, by the agent's rules (here: keep the last turn); the
// first model, whose window is the agent's (none), was sent it whole.
func TestRouteCompactsForTheFallback(t *testing.T) {
	t.Parallel()
	chat, _ := providerNamed("chat")
	claude, _ := providerNamed("anthropic")
	dir := t.TempDir()
	effects := filepath.Join(dir, "effects.log")
	s1 := modeltest.NewServer(t, fixture(t, chat, "add"), fixture(t, chat, "add"),
		modeltest.Exchange{Status: 503, Body: `{"error":{"message":"The server is overloaded","type":"server_error"}}`})
	// The summary, then the turn.
	s2 := modeltest.NewServer(t, fixture(t, claude, "answer"), fixture(t, claude, "answer"))
	a, _, err := routeAgent(s1.URL, s2.URL, routeOpts{hc1: s1.Client(), hc2: s2.Client(), now: newClock().Now,
		limits: hitch.Limits{KeepTurns: 1}, window: 10}, effects)
	if err != nil {
		t.Fatal(err)
	}
	// Two turns, the failed third, the summary, the fallback.
	_, _, es, at := answered(t, dir, a, 5)
	wantAttempt(t, at[2], primaryName, route.WhyFirst, "")
	if at[2].Context == nil || at[2].Context.Window != 0 {
		t.Errorf("the first model's request was fitted into %+v, want no window", at[2].Context)
	}
	if at[3].Purpose != "compaction" {
		t.Errorf("attempt 4 is for %q, want compaction", at[3].Purpose)
	}
	wantAttempt(t, at[3], backupName, route.WhyFirst, "", primaryName+" "+route.SkipCoolingDown)
	wantAttempt(t, at[4], backupName, route.WhyFallback, model.KindOverloaded)
	if at[4].Context == nil || at[4].Context.Window != 10 {
		t.Errorf("the fallback's request was fitted into %+v, want the second model's window of 10", at[4].Context)
	}
	compactions := dataOf[hitchtype.Compacted](t, es, hitchtype.KindCompacted)
	for _, c := range compactions {
		if c.Error != "" || c.Through != 1 {
			t.Errorf("compaction %+v, want turn 1 folded", c)
		}
	}
	if len(compactions) != 1 {
		t.Errorf("%d compactions, want 1", len(compactions))
	}
	_, bodies := requests(t, claude, s2, 2)
	if !strings.Contains(string(bodies[1]), "Summary of the earlier part of this conversation") {
		t.Errorf("the fallback's request does not carry the summary:\n%s", bodies[1])
	}
	requests(t, chat, s1, 3)
	if e := readEffects(t, effects); e != effectLine+effectLine {
		t.Errorf("effects %q, want two adds", e)
	}
}
