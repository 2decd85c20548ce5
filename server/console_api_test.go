package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/hitch-dev/hitch/api"
)

// TestConsoleAPI checks what the console reads to make a decision
// self-contained: who a token is, an approval request's rule and input, a
// call's lifecycle by the journal's id, and a cancel that journals why.
func TestConsoleAPI(t *testing.T) {
	e := newEnv(t)

	var me api.Me
	e.view.do("GET", "/v1/me", nil).want(t, http.StatusOK, "").decode(t, &me)
	if me != (api.Me{Name: "view", Tenant: "default", Role: api.RoleViewer}) {
		t.Fatalf("GET /v1/me as the viewer: %+v", me)
	}

	run := start(t, e.admin, "gate", "echo something for the record", "gate-1").Run
	if r := wait(t, e.admin, run.ID); r.Status != "waiting" {
		t.Fatalf("gate run is %s", r.Status)
	}
	var ap api.ApprovalPage
	e.view.do("GET", "/v1/approvals?root_id="+run.ID, nil).want(t, http.StatusOK, "").decode(t, &ap)
	if len(ap.Approvals) != 1 || ap.Approvals[0].Rule != "policy rule 1" || ap.Approvals[0].Input != "echo something for the record" {
		t.Fatalf("approvals: %+v", ap.Approvals)
	}
	var c api.Call
	e.view.do("GET", "/v1/runs/"+run.ID+"/calls/t1c1", nil).want(t, http.StatusOK, "").decode(t, &c)
	if c.ID != "t1c1" || c.Tool != "bash" || !strings.Contains(string(c.Arguments), "echo approved") || c.State != "waiting" ||
		c.Verdict != "approval" || c.Rule != "policy rule 1" || c.DecidedAt == nil || c.StartedAt != nil {
		t.Fatalf("a call waiting for approval: %+v", c)
	}
	e.op.do("POST", "/v1/runs/"+run.ID+"/approvals/t1c1/approve",
		api.Answer{Credential: api.Credential{Name: "alice", Secret: "alice-secret"}}).want(t, http.StatusOK, "")
	if r := wait(t, e.admin, run.ID); r.Status != "completed" {
		t.Fatalf("approved gate run is %s", r.Status)
	}
	e.view.do("GET", "/v1/runs/"+run.ID+"/calls/t1c1", nil).want(t, http.StatusOK, "").decode(t, &c)
	if c.State != "settled" || !strings.Contains(c.Output, "approved") || c.StartedAt == nil || c.Node == "" || c.Attempts != 1 ||
		c.Answer != "granted" || c.AnsweredBy != "alice" || c.EndedAt == nil || len(c.Positions) < 4 {
		t.Fatalf("a settled call: %+v", c)
	}
	e.view.do("GET", "/v1/runs/"+run.ID+"/calls/t9c9", nil).want(t, http.StatusNotFound, api.TypeNotFound)
	e.view.do("GET", "/v1/runs/"+run.ID+"/calls/nonsense", nil).want(t, http.StatusNotFound, api.TypeNotFound)
	e.other.do("GET", "/v1/runs/"+run.ID+"/calls/t1c1", nil).want(t, http.StatusNotFound, api.TypeNotFound)

	// A cancel says why; the run's outcome carries it and who asked.
	run = start(t, e.admin, "gate", "cancel me", "gate-2").Run
	wait(t, e.admin, run.ID)
	e.view.do("POST", "/v1/runs/"+run.ID+"/cancel", api.Cancel{Reason: "no"}).want(t, http.StatusForbidden, api.TypeForbidden)
	var got api.Run
	e.op.do("POST", "/v1/runs/"+run.ID+"/cancel", api.Cancel{Reason: "wrong customer"}).want(t, http.StatusOK, "").decode(t, &got)
	if got.Status != "cancelled" || got.Outcome == nil || got.Outcome.CancelledBy != "op" || got.Outcome.CancelReason != "wrong customer" {
		t.Fatalf("cancelled with a reason: %+v", got.Outcome)
	}
	// A cancel without a body still works, as before.
	run = start(t, e.admin, "gate", "cancel me too", "gate-3").Run
	wait(t, e.admin, run.ID)
	got = api.Run{}
	e.op.do("POST", "/v1/runs/"+run.ID+"/cancel", nil).want(t, http.StatusOK, "").decode(t, &got)
	if got.Status != "cancelled" || got.Outcome.CancelledBy != "op" || got.Outcome.CancelReason != "" {
		t.Fatalf("cancelled without a body: %+v", got.Outcome)
	}
}
