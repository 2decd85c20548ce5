package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/internal/testproc"
)

// env is one server with a client per token.
type env struct {
	p                      *testproc.Server
	spec                   *spec
	admin, op, view, other *client
	dir                    string
}

func newEnv(t *testing.T, extra ...string) *env {
	t.Helper()
	dir := testConfig(t, true)
	p := serve(t, dir, extra...)
	s := loadSpec(t, p.URL, tokView)
	mk := func(tok string) *client { return &client{t: t, url: p.URL, token: tok, spec: s} }
	return &env{p: p, spec: s, admin: mk(tokAdmin), op: mk(tokOp), view: mk(tokView), other: mk(tokB), dir: dir}
}

func start(t *testing.T, c *client, agent, input, id string) api.StartedRun {
	t.Helper()
	var out api.StartedRun
	c.do("POST", "/v1/runs", api.StartRun{Agent: agent, Input: input, ID: id}).want(t, http.StatusCreated, "").decode(t, &out)
	return out
}

func wait(t *testing.T, c *client, id string) api.Run {
	t.Helper()
	for range 20 {
		var r api.Run
		c.do("GET", "/v1/runs/"+id+"/wait?timeout=30", nil).want(t, 200, "").decode(t, &r)
		if r.Status != "queued" && r.Status != "running" {
			return r
		}
	}
	t.Fatalf("run %s did not settle", id)
	return api.Run{}
}

// journal reads a run's whole journal through the API, page by page.
func journal(t *testing.T, c *client, id string) []api.Entry {
	t.Helper()
	return allPages(t, c, "/v1/runs/"+id+"/journal?after=%d&limit=7",
		func(p api.EntryPage) ([]api.Entry, *int64) { return p.Entries, p.Next })
}

// allPages reads a listing through the API page by page: path is its URL
// with a %d for the position a page starts after, and split gives a page's
// items and the position of the next page (nil after the last).
func allPages[P, E any](t *testing.T, c *client, path string, split func(P) ([]E, *int64)) []E {
	t.Helper()
	var all []E
	for after := int64(0); ; {
		var page P
		c.do("GET", fmt.Sprintf(path, after), nil).want(t, 200, "").decode(t, &page)
		items, next := split(page)
		all = append(all, items...)
		if next == nil {
			return all
		}
		after = *next
	}
}

func TestRoutes(t *testing.T) {
	e := newEnv(t, "--streams-per-token", "2")

	t.Run("health", func(t *testing.T) {
		anon := &client{t: t, url: e.p.URL, spec: e.spec}
		anon.do("GET", "/healthz", nil).want(t, 200, "")
		anon.do("GET", "/readyz", nil).want(t, 200, "")
	})
	t.Run("auth", func(t *testing.T) {
		anon := &client{t: t, url: e.p.URL, spec: e.spec}
		a := anon.do("GET", "/v1/runs", nil).want(t, 401, api.TypeUnauthorized)
		if a.header.Get("WWW-Authenticate") == "" {
			t.Error("401 without WWW-Authenticate")
		}
		anon.do("GET", "/v1/openapi.json", nil).want(t, 401, api.TypeUnauthorized)
		bad := &client{t: t, url: e.p.URL, token: "not-a-token", spec: e.spec}
		bad.do("GET", "/v1/runs/x", nil).want(t, 401, api.TypeUnauthorized)
		bad.do("POST", "/v1/runs", api.StartRun{Agent: "quick", Input: "x"}).want(t, 401, api.TypeUnauthorized)
	})
	t.Run("agents", func(t *testing.T) {
		var as api.Agents
		e.view.do("GET", "/v1/agents", nil).want(t, 200, "").decode(t, &as)
		if len(as.Agents) != 7 || as.Agents[0].Name != "boss" {
			t.Errorf("agents %+v", as)
		}
		e.view.do("GET", "/v1/agents/gate", nil).want(t, 200, "")
		e.view.do("GET", "/v1/agents/nope", nil).want(t, 404, api.TypeNotFound)
	})

	var quick api.StartedRun
	t.Run("start", func(t *testing.T) {
		quick = start(t, e.admin, "quick", "hello", "q1")
		if !quick.Created || quick.Run.ID != "q1" || quick.Run.Tenant != "default" {
			t.Fatalf("start %+v", quick)
		}
		var again api.StartedRun
		e.admin.do("POST", "/v1/runs", api.StartRun{Agent: "quick", Input: "hello", ID: "q1"}).want(t, 200, "").decode(t, &again)
		if again.Created || !again.SameInput {
			t.Errorf("same id again: %+v", again)
		}
		e.admin.do("POST", "/v1/runs", api.StartRun{Agent: "quick", Input: "other", ID: "q1"}).want(t, 409, api.TypeConflict)
		// Refusals name the field.
		for _, c := range []struct {
			body string
			loc  string
		}{
			{`{"agent":"quick","input":""}`, "body.input"},
			{`{"agent":"quick","input":"   "}`, "body.input"},
			{`{"agent":"nope","input":"x"}`, "body.agent"},
			{`{"input":"x"}`, "body.agent"},
			{`{"agent":"quick","input":"x","id":"a b"}`, "body.id"},
			{`{"agent":"quick","input":"x","extra":1}`, "body.extra"},
			{`{"agent":"quick","input":5}`, "body.input"},
		} {
			a := e.admin.do("POST", "/v1/runs", c.body).want(t, 422, api.TypeInvalid)
			var p api.Problem
			a.decode(t, &p)
			found := false
			for _, fe := range p.Errors {
				found = found || fe.Location == c.loc
			}
			if !found {
				t.Errorf("%s: refusal does not name %s: %s", c.body, c.loc, a.body)
			}
		}
		e.admin.do("POST", "/v1/runs", `{"agent":`).want(t, 422, api.TypeInvalid)
		e.admin.do("POST", "/v1/runs", `{"agent":"quick","input":"`+strings.Repeat("x", 2<<20)+`"}`).want(t, 413, api.TypeTooLarge)
		a := e.admin.do("POST", "/v1/runs", `{"agent":"quick","input":"x"}`, "Content-Type", "text/plain")
		a.want(t, 415, api.TypeUnsupportedType)
		e.view.do("POST", "/v1/runs", api.StartRun{Agent: "quick", Input: "x"}).want(t, 403, api.TypeForbidden)
		e.op.do("POST", "/v1/runs", api.StartRun{Agent: "quick", Input: "x"}).want(t, 403, api.TypeForbidden)
	})
	t.Run("tenants", func(t *testing.T) {
		b := start(t, e.other, "quick", "hello from b", "b1")
		if !b.Created || b.Run.Tenant != "b" {
			t.Fatalf("start for tenant b: %+v", b)
		}
		wait(t, e.other, "b1")
		e.admin.do("GET", "/v1/runs/b1", nil).want(t, 404, api.TypeNotFound)
		e.other.do("GET", "/v1/runs/q1", nil).want(t, 404, api.TypeNotFound)
		for _, c := range []struct {
			c          *client
			tenant     string
			has, hasnt string
		}{{e.admin, "default", "q1", "b1"}, {e.other, "b", "b1", "q1"}} {
			var page api.RunPage
			c.c.do("GET", "/v1/runs?limit=1000", nil).want(t, 200, "").decode(t, &page)
			found := false
			for _, r := range page.Runs {
				if r.Tenant != c.tenant || r.ID == c.hasnt {
					t.Errorf("tenant %s lists run %s of tenant %s", c.tenant, r.ID, r.Tenant)
				}
				found = found || r.ID == c.has
			}
			if !found {
				t.Errorf("tenant %s does not list its run %s", c.tenant, c.has)
			}
		}
	})
	t.Run("get, wait, list, journal", func(t *testing.T) {
		r := wait(t, e.view, "q1")
		if r.Status != "completed" || r.Outcome == nil || r.Outcome.Answer != "quick done" {
			t.Fatalf("q1 %+v", r)
		}
		e.view.do("GET", "/v1/runs/q1", nil).want(t, 200, "")
		e.view.do("GET", "/v1/runs/nope", nil).want(t, 404, api.TypeNotFound)
		e.view.do("GET", "/v1/runs/nope/wait", nil).want(t, 404, api.TypeNotFound)
		e.view.do("GET", "/v1/runs/q1/wait?timeout=-1", nil).want(t, 422, api.TypeInvalid)
		var page api.RunPage
		e.view.do("GET", "/v1/runs?status=completed&agent=quick", nil).want(t, 200, "").decode(t, &page)
		if len(page.Runs) != 1 || page.Runs[0].ID != "q1" {
			t.Errorf("list %+v", page)
		}
		e.view.do("GET", "/v1/runs?status=bogus", nil).want(t, 422, api.TypeInvalid)
		e.view.do("GET", "/v1/runs?limit=0", nil).want(t, 422, api.TypeInvalid)
		es := journal(t, e.view, "q1")
		if int64(len(es)) != r.Position || es[0].Kind != "run.started" || es[len(es)-1].Kind != "run.ended" {
			t.Errorf("journal of %d entries, position %d", len(es), r.Position)
		}
		e.view.do("GET", "/v1/runs/q1/journal?after=-1", nil).want(t, 422, api.TypeInvalid)
	})
	t.Run("stream", func(t *testing.T) {
		s := start(t, e.admin, "slow", "go", "s1")
		got := follow(t, e.view, "/v1/runs/"+s.Run.ID+"/events", "")
		want := journal(t, e.view, s.Run.ID)
		sameEntries(t, got, want)
		// Resume after a position, by header and by query.
		sameEntries(t, follow(t, e.view, "/v1/runs/s1/events", "5"), want[5:])
		sameEntries(t, follow(t, e.view, "/v1/runs/s1/events?after=9", ""), want[9:])
		e.view.do("GET", "/v1/runs/s1/events?after=x", nil).want(t, 422, api.TypeInvalid)
		e.view.do("GET", "/v1/runs/s1/events", nil, "Last-Event-ID", "-3").want(t, 422, api.TypeInvalid)
		e.view.do("GET", "/v1/runs/nope/events", nil).want(t, 404, api.TypeNotFound)
	})
	t.Run("start answered with the stream", func(t *testing.T) {
		stream := func(body api.StartRun, status int) []api.Entry {
			t.Helper()
			raw, _ := json.Marshal(body)
			req, _ := newRequest("POST", e.p.URL+"/v1/runs", bytes.NewReader(raw), tokAdmin)
			req.Header.Set("Accept", "text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != status || resp.Header.Get("Location") != "/v1/runs/"+body.ID {
				t.Fatalf("start with its stream: %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
			}
			return readStream(t, e.view, resp, "/v1/runs/"+body.ID+"/events")
		}
		in := api.StartRun{Agent: "slow", Input: "go", ID: "s2"}
		got := stream(in, http.StatusCreated)
		want := journal(t, e.view, "s2")
		sameEntries(t, got, want)
		if want[0].Kind != "run.started" || want[len(want)-1].Kind != "run.ended" {
			t.Fatalf("journal from %s to %s", want[0].Kind, want[len(want)-1].Kind)
		}
		// The same start again starts nothing and streams the run.
		sameEntries(t, stream(in, http.StatusOK), want)
		// Refusals come before any stream, as problems.
		hdr := []string{"Accept", "text/event-stream"}
		e.admin.do("POST", "/v1/runs", api.StartRun{Agent: "slow", Input: "other", ID: "s2"}, hdr...).want(t, 409, api.TypeConflict)
		e.admin.do("POST", "/v1/runs", api.StartRun{Agent: "nope", Input: "x"}, hdr...).want(t, 422, api.TypeInvalid)
		e.view.do("POST", "/v1/runs", api.StartRun{Agent: "slow", Input: "x"}, hdr...).want(t, 403, api.TypeForbidden)
		// Without the Accept header a start answers the run, with its
		// Location too.
		a := e.admin.do("POST", "/v1/runs", api.StartRun{Agent: "quick", Input: "x", ID: "s3"}).want(t, 201, "")
		if a.ct != "application/json" || a.header.Get("Location") != "/v1/runs/s3" {
			t.Errorf("start: %s, Location %q", a.ct, a.header.Get("Location"))
		}
	})
	t.Run("family stream", func(t *testing.T) {
		b := start(t, e.admin, "boss", "go", "fam1")
		got := follow(t, e.view, "/v1/runs/"+b.Run.ID+"/family/events", "")
		var page api.RunPage
		e.view.do("GET", "/v1/runs?root_id=fam1", nil).want(t, 200, "").decode(t, &page)
		if len(page.Runs) != 3 {
			t.Fatalf("family of %d runs", len(page.Runs))
		}
		for _, r := range page.Runs {
			var mine []api.Entry
			for _, en := range got {
				if en.RunID == r.ID {
					mine = append(mine, en)
				}
			}
			sameEntries(t, mine, journal(t, e.view, r.ID))
		}
		kid := page.Runs[0].ID
		if kid == "fam1" {
			kid = page.Runs[1].ID
		}
		e.view.do("GET", "/v1/runs/"+kid+"/family/events", nil).want(t, 422, api.TypeInvalid)
		e.view.do("GET", "/v1/runs/fam1/family/events?after=nonsense", nil).want(t, 422, api.TypeInvalid)
	})
	t.Run("family usage", func(t *testing.T) {
		start(t, e.admin, "boss", "go", "fam2")
		follow(t, e.view, "/v1/runs/fam2/family/events", "")
		var page api.RunPage
		e.view.do("GET", "/v1/runs?root_id=fam2", nil).want(t, 200, "").decode(t, &page)
		if len(page.Runs) != 3 {
			t.Fatalf("family of %d runs", len(page.Runs))
		}
		var got api.FamilyUsage
		e.view.do("GET", "/v1/runs/fam2/family/usage", nil).want(t, 200, "").decode(t, &got)
		want := api.FamilyUsage{RootID: "fam2", Runs: 3}
		in, known := int64(0), true
		for _, r := range page.Runs {
			if r.Outcome == nil {
				t.Fatalf("run %s has not ended", r.ID)
			}
			want.Usage.Generations += r.Outcome.Usage.Generations
			if r.Outcome.Usage.InputTokens == nil {
				known = false
			} else {
				in += *r.Outcome.Usage.InputTokens
			}
		}
		if got.RootID != want.RootID || got.Runs != want.Runs || got.Usage.Generations != want.Usage.Generations || want.Usage.Generations == 0 {
			t.Fatalf("family usage %+v, want %+v", got, want)
		}
		if (got.Usage.InputTokens != nil) != known || (known && *got.Usage.InputTokens != in) {
			t.Fatalf("family input tokens %v, want %d (known %v)", got.Usage.InputTokens, in, known)
		}
		kid := page.Runs[0].ID
		if kid == "fam2" {
			kid = page.Runs[1].ID
		}
		e.view.do("GET", "/v1/runs/"+kid+"/family/usage", nil).want(t, 422, api.TypeInvalid)
		e.view.do("GET", "/v1/runs/nope/family/usage", nil).want(t, 404, api.TypeNotFound)
	})
	t.Run("approvals", func(t *testing.T) {
		g := start(t, e.admin, "gate", "deploy", "g1")
		r := wait(t, e.view, g.Run.ID)
		if r.Status != "waiting" {
			t.Fatalf("gate %+v", r)
		}
		var page api.ApprovalPage
		e.view.do("GET", "/v1/approvals", nil).want(t, 200, "").decode(t, &page)
		if len(page.Approvals) != 1 || page.Approvals[0].RunID != "g1" || page.Approvals[0].Requirement != "shell" {
			t.Fatalf("approvals %+v", page)
		}
		call := page.Approvals[0].Call
		e.view.do("GET", "/v1/approvals?root_id=g1", nil).want(t, 200, "")
		e.view.do("GET", "/v1/approvals?root_id=nope", nil).want(t, 404, api.TypeNotFound)
		e.view.do("GET", "/v1/runs/g1/approvals/"+call, nil).want(t, 200, "")
		e.view.do("GET", "/v1/runs/g1/approvals/nope", nil).want(t, 404, api.TypeNotFound)
		good := api.Answer{Credential: api.Credential{Name: "alice", Secret: "alice-secret"}}
		bad := api.Answer{Credential: api.Credential{Name: "alice", Secret: "wrong"}}
		e.view.do("POST", "/v1/runs/g1/approvals/"+call+"/approve", good).want(t, 403, api.TypeForbidden)
		e.op.do("POST", "/v1/runs/g1/approvals/"+call+"/approve", bad).want(t, 403, api.TypeBadCredential)
		e.op.do("POST", "/v1/runs/g1/approvals/"+call+"/approve", `{"credential":{"name":"alice"}}`).want(t, 422, api.TypeInvalid)
		e.op.do("POST", "/v1/runs/g1/approvals/"+call+"/approve", good).want(t, 200, "")
		e.op.do("POST", "/v1/runs/g1/approvals/"+call+"/reject", good).want(t, 409, api.TypeRefused)
		if r := wait(t, e.view, "g1"); r.Status != "completed" {
			t.Fatalf("g1 after approval: %+v", r)
		}
		// A rejection, on a second gate run.
		start(t, e.admin, "gate", "deploy again", "g2")
		wait(t, e.view, "g2")
		e.view.do("GET", "/v1/approvals?root_id=g2", nil).want(t, 200, "").decode(t, &page)
		e.op.do("POST", "/v1/runs/g2/approvals/"+page.Approvals[0].Call+"/reject", api.Answer{Credential: good.Credential, Reason: "not today"}).want(t, 200, "")
	})
	t.Run("workspace", func(t *testing.T) {
		start(t, e.admin, "gate", "hold", "g3")
		wait(t, e.view, "g3")
		extra := filepath.Join(e.dir, "extra")
		if err := os.Mkdir(extra, 0o755); err != nil {
			t.Fatal(err)
		}
		var roots api.Roots
		e.view.do("GET", "/v1/runs/g3/workspace", nil).want(t, 200, "").decode(t, &roots)
		if len(roots.Roots) != 0 {
			t.Errorf("roots %v", roots)
		}
		e.view.do("POST", "/v1/runs/g3/workspace/grant", api.Root{Path: extra}).want(t, 403, api.TypeForbidden)
		e.op.do("POST", "/v1/runs/g3/workspace/grant", api.Root{Path: "relative"}).want(t, 422, api.TypeInvalid)
		e.op.do("POST", "/v1/runs/g3/workspace/grant", api.Root{Path: extra}).want(t, 200, "").decode(t, &roots)
		if len(roots.Roots) != 1 || roots.Roots[0] != extra {
			t.Errorf("after grant: %v", roots)
		}
		e.op.do("POST", "/v1/runs/g3/workspace/revoke", api.Root{Path: extra}).want(t, 200, "").decode(t, &roots)
		if len(roots.Roots) != 0 {
			t.Errorf("after revoke: %v", roots)
		}
		e.op.do("POST", "/v1/runs/q1/workspace/grant", api.Root{Path: extra}).want(t, 409, api.TypeRefused)
		e.op.do("POST", "/v1/runs/g1/workspace/grant", api.Root{Path: extra}).want(t, 409, api.TypeEnded)
		e.op.do("POST", "/v1/runs/nope/workspace/grant", api.Root{Path: extra}).want(t, 404, api.TypeNotFound)
	})
	t.Run("cancel and reconcile", func(t *testing.T) {
		e.view.do("POST", "/v1/runs/g3/cancel", nil).want(t, 403, api.TypeForbidden)
		var r api.Run
		e.op.do("POST", "/v1/runs/g3/cancel", nil).want(t, 200, "").decode(t, &r)
		if r.Status != "cancelled" {
			t.Errorf("cancelled run %+v", r)
		}
		e.op.do("POST", "/v1/runs/g3/cancel", nil).want(t, 200, "")
		e.op.do("POST", "/v1/runs/nope/cancel", nil).want(t, 404, api.TypeNotFound)
		e.view.do("POST", "/v1/runs/q1/reconcile", api.Reconcile{Call: "c", Unconfirmed: true}).want(t, 403, api.TypeForbidden)
		e.op.do("POST", "/v1/runs/q1/reconcile", api.Reconcile{Call: "c"}).want(t, 422, api.TypeInvalid)
		e.op.do("POST", "/v1/runs/q1/reconcile", api.Reconcile{Call: "c", Unconfirmed: true}).want(t, 404, api.TypeNotFound)
		e.op.do("POST", "/v1/runs/nope/reconcile", api.Reconcile{Call: "c", Unconfirmed: true}).want(t, 404, api.TypeNotFound)
	})
	t.Run("too many streams", func(t *testing.T) {
		start(t, e.admin, "gate", "hold", "g4")
		wait(t, e.view, "g4")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		for range 2 {
			resp, err := e.view.openStream(ctx, "/v1/runs/g4/events", "")
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("stream: %v %v", err, resp)
			}
			defer resp.Body.Close()
		}
		e.view.do("GET", "/v1/runs/g4/events", nil).want(t, 429, api.TypeTooManyStreams)
		// A call that waits for an approval is not uncertain.
		var page api.ApprovalPage
		e.view.do("GET", "/v1/approvals?root_id=g4", nil).want(t, 200, "").decode(t, &page)
		e.op.do("POST", "/v1/runs/g4/reconcile", api.Reconcile{Call: page.Approvals[0].Call, Unconfirmed: true}).want(t, 409, api.TypeRefused)

		// Another token has its own count.
		cancel()
	})
	t.Run("unknown routes and methods", func(t *testing.T) {
		e.view.do("GET", "/v1/nothing", nil).want(t, 404, api.TypeNotFound)
		e.view.do("DELETE", "/v1/runs/q1", nil).want(t, 405, api.TypeMethod)
	})
	t.Run("every problem type is documented", func(t *testing.T) {
		doc, err := os.ReadFile("../docs/api.md")
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range api.Problems {
			if !strings.Contains(string(doc), "`"+c.Type+"`") {
				t.Errorf("docs/api.md does not list %s", c.Type)
			}
		}
	})
}

// follow reads a stream to its end and returns its entries, checking each
// event against the document's Entry schema and the end event.
func follow(t *testing.T, c *client, path, lastID string) []api.Entry {
	t.Helper()
	resp, err := c.openStream(context.Background(), path, lastID)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("stream %s: %d", path, resp.StatusCode)
	}
	return readStream(t, c, resp, path)
}

// readStream is follow for a stream's answer (of path, or of a start).
func readStream(t *testing.T, c *client, resp *http.Response, path string) []api.Entry {
	t.Helper()
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream %s: %s", path, resp.Header.Get("Content-Type"))
	}
	entry := c.spec.resolve(t, map[string]any{"$ref": "#/components/schemas/Entry"})
	run := c.spec.resolve(t, map[string]any{"$ref": "#/components/schemas/Run"})
	var out []api.Entry
	ended := false
	err := readEvents(resp.Body, func(ev event) bool {
		var v any
		if err := json.Unmarshal(ev.data, &v); err != nil {
			t.Fatalf("event data %s: %v", ev.data, err)
		}
		switch ev.kind {
		case api.EventEntry:
			if err := entry.Validate(v); err != nil {
				t.Errorf("entry event does not match the document: %v", err)
			}
			var en api.Entry
			_ = json.Unmarshal(ev.data, &en)
			if !strings.Contains(path, "/family/") && ev.id != fmt.Sprint(en.Pos) {
				t.Errorf("event id %s for position %d", ev.id, en.Pos)
			}
			out = append(out, en)
		case api.EventEnd:
			if err := run.Validate(v); err != nil {
				t.Errorf("end event does not match the document: %v", err)
			}
			ended = true
		default:
			t.Errorf("event %s: %s", ev.kind, ev.data)
		}
		return true
	})
	if err != nil && err.Error() != "EOF" {
		t.Fatalf("stream %s: %v", path, err)
	}
	if !ended {
		t.Errorf("stream %s ended without an end event", path)
	}
	return out
}

func sameEntries(t *testing.T, got, want []api.Entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d", len(got), len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.RunID != w.RunID || g.Pos != w.Pos || g.Kind != w.Kind || !g.At.Equal(w.At) || string(g.Data) != string(w.Data) {
			t.Fatalf("entry %d: %+v, want %+v", i, g, w)
		}
	}
}

// TestWakeAndCompleteRoutes: a run parked on an awaited event and a pending
// external call moves on through the API; a wrong, repeated or
// unauthorised delivery or completion is refused and changes nothing.
func TestWakeAndCompleteRoutes(t *testing.T) {
	e := newEnv(t)
	start(t, e.admin, "ops", "ship once paid", "o1")
	if r := wait(t, e.admin, "o1"); r.Status != "waiting" {
		t.Fatalf("run %+v, want waiting", r)
	}
	e.view.do("POST", "/v1/runs/o1/wake", api.Wake{Event: "paid"}).want(t, 403, api.TypeForbidden)
	e.other.do("POST", "/v1/runs/o1/wake", api.Wake{Event: "paid"}).want(t, 404, api.TypeNotFound)
	e.op.do("POST", "/v1/runs/o1/wake", api.Wake{Event: "lost"}).want(t, 409, api.TypeRefused)
	e.op.do("POST", "/v1/runs/o1/wake", `{"event":""}`).want(t, 422, api.TypeInvalid)
	e.op.do("POST", "/v1/runs/o1/wake", api.Wake{Event: "paid", Data: json.RawMessage(`{"amount":12}`)}).want(t, 200, "")
	e.op.do("POST", "/v1/runs/o1/wake", api.Wake{Event: "paid"}).want(t, 409, api.TypeRefused)

	e.op.do("POST", "/v1/runs/o1/calls/t1c2/complete", `{}`).want(t, 422, api.TypeInvalid)
	e.op.do("POST", "/v1/runs/o1/calls/t1c2/complete", api.CompleteCall{Output: "a", Error: "b"}).want(t, 422, api.TypeInvalid)
	e.other.do("POST", "/v1/runs/o1/calls/t1c2/complete", api.CompleteCall{Output: "x"}).want(t, 404, api.TypeNotFound)
	e.op.do("POST", "/v1/runs/o1/calls/t1c9/complete", api.CompleteCall{Output: "x"}).want(t, 404, api.TypeNotFound)
	e.op.do("POST", "/v1/runs/o1/calls/t1c2/complete", api.CompleteCall{Output: "shipped as #99"}).want(t, 200, "")
	if r := wait(t, e.admin, "o1"); r.Status != "completed" {
		t.Fatalf("run %+v, want completed", r)
	}
	e.op.do("POST", "/v1/runs/o1/calls/t1c2/complete", api.CompleteCall{Output: "again"}).want(t, 409, api.TypeRefused)
	var seen []string
	for _, en := range journal(t, e.admin, "o1") {
		seen = append(seen, en.Kind)
	}
	got := strings.Join(seen, " ")
	for _, k := range []string{"wake.delivered", "call.pending"} {
		if !strings.Contains(got, k) {
			t.Errorf("journal lacks %s: %s", k, got)
		}
	}
}
