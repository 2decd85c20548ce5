package server_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"

	"go.uber.org/goleak"

	"github.com/hitch-dev/hitch/api"
	hc "github.com/hitch-dev/hitch/client"
	"github.com/hitch-dev/hitch/server"
)

// TestRunContext: GET /v1/runs/{id}/context answers each model request's
// context account and the family's running cost in the shape the served
// document gives; an unknown run is a not-found problem.
func TestRunContext(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ip := newInProcess(t, server.Limits{})
	defer ip.close()
	ts := httptest.NewServer(ip.srv)
	defer ts.Close()
	c := &client{t: t, url: ts.URL, token: tokAdmin, spec: loadSpec(t, ts.URL, tokAdmin)}
	c.do("POST", "/v1/runs", api.StartRun{Agent: "echo", Input: "say it back", ID: "c1", Instructions: "Be brief."}).want(t, 201, "")
	wait(t, c, "c1")

	var rc api.RunContext
	c.do("GET", "/v1/runs/c1/context", nil).want(t, 200, "").decode(t, &rc)
	if rc.Run != "c1" || len(rc.Requests) != 1 || rc.More {
		t.Fatalf("context: %+v", rc)
	}
	r := rc.Requests[0]
	a := r.Context
	if a == nil || a.Estimator != "bytes/4" || a.Window != 0 || r.Result != "reply" || r.Usage == nil || r.Usage.InputTokens == nil {
		t.Fatalf("request: %+v %+v", r, a)
	}
	cat := a.Categories
	sum := cat.System + cat.Agent + cat.Run + cat.Hook + cat.Tools + cat.User + cat.Assistant + cat.ToolResults + cat.Summary + cat.AnswerSchema
	if sum != a.Estimate || cat.Run != 3 || cat.User != 3 {
		t.Errorf("categories %+v sum to %d, estimate %d; want run 3 and user 3 (bytes/4 of %q and %q)", cat, sum, a.Estimate, "Be brief.", "say it back")
	}
	if fc := rc.FamilyCost; fc.Runs != 1 || fc.Live != 0 || fc.USD != nil {
		t.Errorf("family cost of an unpriced model: %+v, want not priced", fc)
	}
	c.do("GET", "/v1/runs/nosuch/context", nil).want(t, 404, api.TypeNotFound)

	// A session's cost: unpriced here, over its one submission's run.
	createSession(t, c, "echo", "s1")
	sendMsg(t, c, "s1", "hello", "", "")
	if _, err := ip.rt.Sessions().Await(context.Background(), "s1"); err != nil {
		t.Fatal(err)
	}
	var sc api.RunningCost
	c.do("GET", "/v1/sessions/s1/cost", nil).want(t, 200, "").decode(t, &sc)
	if sc.Runs != 1 || sc.Live != 0 || sc.USD != nil {
		t.Errorf("session cost %+v, want one run, not priced", sc)
	}
	c.do("GET", "/v1/sessions/nosuch/cost", nil).want(t, 404, api.TypeNotFound)

	// The Go client reads the same.
	gc, err := hc.New(ts.URL, hc.WithToken(tokAdmin))
	if err != nil {
		t.Fatal(err)
	}
	got, err := gc.RunContext(context.Background(), "c1", 0)
	if err != nil || len(got.Requests) != 1 || *got.Requests[0].Context != *a {
		t.Errorf("client: %+v %v", got, err)
	}
	if got, err := gc.SessionCost(context.Background(), "s1"); err != nil || got != sc {
		t.Errorf("client, session cost: %+v %v", got, err)
	}
	if _, err := gc.RunContext(context.Background(), "nosuch", 1); !errors.Is(err, hc.ErrNotFound) {
		t.Errorf("client, an unknown run: %v", err)
	}
}
