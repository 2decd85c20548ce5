package server_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/hitch-dev/hitch/api"
)

// TestTenantMatrix: a token of tenant b, given tenant default's ids,
// gets 404 from every route, with the very answer an id that does not
// exist gets, and sees none of its runs or approvals in lists. A viewer
// mutates nothing.
func TestTenantMatrix(t *testing.T) {
	e := newEnv(t)
	start(t, e.admin, "gate", "deploy", "a1")
	if r := wait(t, e.view, "a1"); r.Status != "waiting" {
		t.Fatalf("a1 %+v", r)
	}
	var page api.ApprovalPage
	e.view.do("GET", "/v1/approvals", nil).want(t, 200, "").decode(t, &page)
	call := page.Approvals[0].Call
	ans := api.Answer{Credential: api.Credential{Name: "alice", Secret: "alice-secret"}}
	routes := []struct {
		method, path string
		body         any
	}{
		{"GET", "/v1/runs/ID", nil},
		{"GET", "/v1/runs/ID/wait?timeout=1", nil},
		{"GET", "/v1/runs/ID/journal", nil},
		{"GET", "/v1/runs/ID/events", nil},
		{"GET", "/v1/runs/ID/family/events", nil},
		{"POST", "/v1/runs/ID/cancel", nil},
		{"POST", "/v1/runs/ID/reconcile", api.Reconcile{Call: call, Unconfirmed: true}},
		{"GET", "/v1/approvals?root_id=ID", nil},
		{"GET", "/v1/runs/ID/approvals/" + call, nil},
		{"POST", "/v1/runs/ID/approvals/" + call + "/approve", ans},
		{"POST", "/v1/runs/ID/approvals/" + call + "/reject", ans},
		{"GET", "/v1/runs/ID/workspace", nil},
		{"POST", "/v1/runs/ID/workspace/grant", api.Root{Path: e.dir}},
		{"POST", "/v1/runs/ID/workspace/revoke", api.Root{Path: e.dir}},
	}
	for _, r := range routes {
		theirs := e.other.do(r.method, strings.ReplaceAll(r.path, "ID", "a1"), r.body).want(t, http.StatusNotFound, api.TypeNotFound)
		none := e.other.do(r.method, strings.ReplaceAll(r.path, "ID", "zz"), r.body).want(t, http.StatusNotFound, api.TypeNotFound)
		// The two answers are the same: neither repeats the id.
		if !bytes.Equal(theirs.body, none.body) {
			t.Errorf("%s %s: another tenant's id answers\n%s\nbut a missing one\n%s", r.method, r.path, theirs.body, none.body)
		}
		if bytes.Contains(theirs.body, []byte("gate")) || bytes.Contains(theirs.body, []byte("deploy")) || bytes.Contains(theirs.body, []byte("a1")) {
			t.Errorf("%s %s: the answer tells of the run: %s", r.method, r.path, theirs.body)
		}
	}
	// Lists leave the other tenant's runs and approvals out.
	var runs api.RunPage
	e.other.do("GET", "/v1/runs", nil).want(t, 200, "").decode(t, &runs)
	e.other.do("GET", "/v1/approvals", nil).want(t, 200, "").decode(t, &page)
	if len(runs.Runs) != 0 || len(page.Approvals) != 0 {
		t.Errorf("tenant b lists %d runs and %d approvals of tenant default", len(runs.Runs), len(page.Approvals))
	}
	// Starting with an id another tenant holds starts the tenant's own,
	// as a free id would, and leaves the other's as it was.
	var mine api.StartedRun
	e.other.do("POST", "/v1/runs", api.StartRun{Agent: "quick", Input: "mine", ID: "a1"}).want(t, http.StatusCreated, "").decode(t, &mine)
	if !mine.Created || mine.Run.ID != "a1" || mine.Run.Tenant != "b" {
		t.Errorf("tenant b starting a1: %+v", mine)
	}
	if r := wait(t, e.other, "a1"); r.Outcome == nil || r.Outcome.Answer != "quick done" {
		t.Errorf("tenant b's a1: %+v", r)
	}
	if r := wait(t, e.view, "a1"); r.Status != "waiting" || r.Tenant != "default" {
		t.Errorf("tenant default's a1 after b's start: %+v", r)
	}
	// A family in tenant b's namespace speaks b's ids throughout: its
	// sub-agents are fam.CALL, in lists, journals and the family stream.
	start(t, e.other, "boss", "look", "fam")
	if r := wait(t, e.other, "fam"); r.Status != "completed" {
		t.Fatalf("b's fam: %+v", r)
	}
	for _, en := range follow(t, e.other, "/v1/runs/fam/family/events", "") {
		if en.RunID != "fam" && !strings.HasPrefix(en.RunID, "fam.t1c") {
			t.Errorf("b's family stream names run %q", en.RunID)
		}
	}
	var fam api.RunPage
	e.other.do("GET", "/v1/runs?root_id=fam", nil).want(t, 200, "").decode(t, &fam)
	if len(fam.Runs) != 3 {
		t.Fatalf("b's family: %+v", fam)
	}
	for _, r := range fam.Runs {
		if r.RootID != "fam" || (r.ID != "fam" && r.ParentID != "fam") || strings.Contains(r.ID, "~") {
			t.Errorf("b's family run: %+v", r)
		}
		e.view.do("GET", "/v1/runs/"+r.ID, nil).want(t, http.StatusNotFound, api.TypeNotFound)
	}

	// A viewer mutates nothing: every mutation is refused by role, and
	// the run is as it was.
	before := e.view.do("GET", "/v1/runs/a1", nil).want(t, 200, "").body
	for _, r := range routes {
		if r.method != "POST" {
			continue
		}
		e.view.do(r.method, strings.ReplaceAll(r.path, "ID", "a1"), r.body).want(t, http.StatusForbidden, api.TypeForbidden)
	}
	e.view.do("POST", "/v1/runs", api.StartRun{Agent: "quick", Input: "x"}).want(t, http.StatusForbidden, api.TypeForbidden)
	if after := e.view.do("GET", "/v1/runs/a1", nil).body; !bytes.Equal(before, after) {
		t.Errorf("a viewer changed a1:\n%s\n%s", before, after)
	}
}
