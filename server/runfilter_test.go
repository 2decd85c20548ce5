package server_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/api"
)

func ids(page api.RunPage) []string {
	out := []string{}
	for _, r := range page.Runs {
		out = append(out, r.ID)
	}
	return out
}

// TestRunFilters lists and counts runs by creation time and text, each
// answer checked against the served OpenAPI document.
func TestRunFilters(t *testing.T) {
	e := newEnv(t)
	var runs []api.Run
	for _, r := range []struct{ id, input string }{
		{"f1", "Refund order 17"},
		{"f2", "Ship the parcel"},
		{"f3", "Second REFUND, order 18"},
	} {
		start(t, e.admin, "quick", r.input, r.id)
		runs = append(runs, wait(t, e.view, r.id))
	}
	start(t, e.other, "quick", "Refund for tenant b", "fb")
	wait(t, e.other, "fb")
	if runs[0].Title != "Refund order 17" {
		t.Fatalf("run f1 has title %q, want its input", runs[0].Title)
	}
	list := func(c *client, q url.Values) []string {
		t.Helper()
		var page api.RunPage
		c.do("GET", "/v1/runs?"+q.Encode(), nil).want(t, 200, "").decode(t, &page)
		return ids(page)
	}
	at := func(i int) string { return runs[i].CreatedAt.Format(time.RFC3339Nano) }
	for _, c := range []struct {
		name string
		q    url.Values
		want []string
	}{
		{"text in the input", url.Values{"q": {"refund"}}, []string{"f3", "f1"}},
		{"text in the id", url.Values{"q": {"F2"}}, []string{"f2"}},
		{"text and agent", url.Values{"q": {"refund"}, "agent": {"slow"}}, []string{}},
		{"created after", url.Values{"created_after": {at(1)}}, []string{"f3", "f2"}},
		{"created before", url.Values{"created_before": {at(1)}}, []string{"f1"}},
		{"window and text", url.Values{"created_after": {at(0)}, "created_before": {at(2)}, "q": {"refund"}}, []string{"f1"}},
	} {
		if got := list(e.view, c.q); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	if got := list(e.other, url.Values{"q": {"refund"}}); !slices.Equal(got, []string{"fb"}) {
		t.Errorf("tenant b's refunds: %v, want [fb]", got)
	}
	// Bad filters are refused, naming the parameter.
	for _, c := range []struct{ q, loc string }{
		{"created_after=" + url.QueryEscape(at(2)) + "&created_before=" + url.QueryEscape(at(0)), "query.created_after"},
		{"created_after=yesterday", "query.created_after"},
		{"q=" + strings.Repeat("x", 201), "query.q"},
	} {
		for _, path := range []string{"/v1/runs?", "/v1/runs/counts?"} {
			a := e.view.do("GET", path+c.q, nil).want(t, 422, api.TypeInvalid)
			if !strings.Contains(string(a.body), c.loc) {
				t.Errorf("%s%s: refusal does not name %s: %s", path, c.q, c.loc, a.body)
			}
		}
	}

	counts := func(c *client, q string) api.RunCounts {
		t.Helper()
		var out api.RunCounts
		c.do("GET", "/v1/runs/counts?"+q, nil).want(t, http.StatusOK, "").decode(t, &out)
		if len(out.Counts) != 8 {
			t.Fatalf("counts %v: want every status", out.Counts)
		}
		return out
	}
	if c := counts(e.view, ""); c.Total != 3 || c.Counts["completed"] != 3 || c.Counts["queued"] != 0 {
		t.Errorf("default tenant's counts: %+v", c)
	}
	if c := counts(e.other, ""); c.Total != 1 || c.Counts["completed"] != 1 {
		t.Errorf("tenant b's counts: %+v", c)
	}
	if c := counts(e.view, "q=refund"); c.Total != 2 {
		t.Errorf("counts of refunds: %+v", c)
	}
	if c := counts(e.view, "agent=quick&created_after="+url.QueryEscape(at(1))); c.Total != 2 {
		t.Errorf("counts after f2: %+v", c)
	}
	if c := counts(e.view, "agent=slow"); c.Total != 0 {
		t.Errorf("counts of slow: %+v", c)
	}
}
