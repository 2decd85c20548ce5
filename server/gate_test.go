package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/api"
	hitchclient "github.com/hitch-dev/hitch/client"
)

// TestIDsAndInputs: ids a URL path cannot carry unchanged are refused at
// creation naming id; malformed cursors, limits and time filters are 422
// naming the parameter on every list route; an oversized header and a body
// that is not declared JSON get problems; and no problem repeats what the
// caller sent.
func TestIDsAndInputs(t *testing.T) {
	e := newEnv(t)
	field := func(a answer) string {
		var p api.Problem
		_ = json.Unmarshal(a.body, &p)
		if len(p.Errors) == 0 {
			return ""
		}
		return p.Errors[0].Location
	}
	for _, id := range []string{".", ".."} {
		a := e.admin.do("POST", "/v1/runs", api.StartRun{Agent: "quick", Input: "hi", ID: id}).want(t, 422, api.TypeInvalid)
		if field(a) != "body.id" {
			t.Errorf("run id %q: refused at %q: %s", id, field(a), a.body)
		}
		a = e.admin.do("POST", "/v1/sessions", api.CreateSession{Agent: "quick", ID: id}).want(t, 422, api.TypeInvalid)
		if field(a) != "body.id" {
			t.Errorf("session id %q: refused at %q: %s", id, field(a), a.body)
		}
	}
	start(t, e.admin, "quick", "hi", "r1")
	wait(t, e.admin, "r1")
	createSession(t, e.admin, "quick", "s1")
	for _, c := range []struct{ path, loc string }{
		{"/v1/runs?after=garbage", "query.after"},
		{"/v1/runs?limit=abc", "query.limit"},
		{"/v1/runs?limit=0", "query.limit"},
		{"/v1/runs?limit=1001", "query.limit"},
		{"/v1/runs?created_after=garbage", "query.created_after"},
		{"/v1/runs?created_before=yesterday", "query.created_before"},
		{"/v1/runs/counts?created_after=garbage", "query.created_after"},
		{"/v1/approvals?after=garbage", "query.after"},
		{"/v1/approvals?limit=-1", "query.limit"},
		{"/v1/sessions?limit=x", "query.limit"},
		{"/v1/runs/r1/journal?after=x", "query.after"},
		{"/v1/runs/r1/journal?limit=0", "query.limit"},
		{"/v1/sessions/s1/transcript?after=-1", "query.after"},
		{"/v1/sessions/s1/queue?limit=0", "query.limit"},
		{"/v1/runs/r1/events?after=x", "query.after"},
		{"/v1/runs/r1/family/events?after=x", "query.after"},
		{"/v1/sessions/s1/events?after=x", "query.after"},
	} {
		a := e.view.do("GET", c.path, nil)
		if a.status != 422 || a.problemType() != api.TypeInvalid || field(a) != c.loc {
			t.Errorf("GET %s: %d %s, want 422 naming %s", c.path, a.status, a.body, c.loc)
		}
	}

	// A header block over the limit is a problem, not plain text.
	big := e.view.do("GET", "/v1/runs", nil, "X-Padding", strings.Repeat("p", 100<<10))
	if big.status != http.StatusRequestHeaderFieldsTooLarge || big.ct != api.ProblemContentType || big.problemType() == "" {
		t.Errorf("a 100 KiB header: %d %q %s", big.status, big.ct, big.body)
	}

	// A body must be declared JSON.
	body := `{"agent":"quick","input":"hi"}`
	for _, ct := range []string{"", "text/plain", "application/x-www-form-urlencoded"} {
		req, _ := http.NewRequest("POST", e.p.URL+"/v1/runs", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tokAdmin)
		if ct != "" {
			req.Header.Set("Content-Type", ct)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnsupportedMediaType || resp.Header.Get("Content-Type") != api.ProblemContentType {
			t.Errorf("a body with Content-Type %q: %d %s", ct, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
	e.admin.do("POST", "/v1/runs", body, "Content-Type", "application/json; charset=utf-8").want(t, 201, "")

	// No problem repeats what the caller sent: a secret typed where an
	// id, an agent name, a path or a text goes stays out of the answer.
	const secret = "sk-live-7c1f0e"
	for _, c := range []struct {
		method, path string
		body         any
	}{
		{"POST", "/v1/runs", api.StartRun{Agent: secret, Input: "hi"}},
		{"POST", "/v1/runs", api.StartRun{Agent: "quick", Input: "hi", ID: secret + " x"}},
		{"POST", "/v1/runs", `{"agent":"quick","input":"hi","id":"` + secret + `/"}`},
		{"POST", "/v1/sessions", api.CreateSession{Agent: secret}},
		{"POST", "/v1/sessions", api.CreateSession{Agent: "quick", ID: secret + "!"}},
		{"GET", "/v1/runs/" + secret, nil},
		{"GET", "/v1/runs/" + secret + "/journal", nil},
		{"POST", "/v1/runs/" + secret + "/cancel", nil},
		{"GET", "/v1/sessions/" + secret, nil},
		{"GET", "/v1/agents/" + secret, nil},
		{"GET", "/v1/" + secret, nil},
		{"DELETE", "/v1/runs/" + secret, nil},
		{"GET", "/v1/runs?after=" + secret, nil},
		{"GET", "/v1/runs?status=" + secret, nil},
		{"GET", "/v1/runs/r1/events?after=" + secret, nil},
		{"POST", "/v1/runs/r1/workspace/grant", api.Root{Path: secret}},
		{"POST", "/v1/runs/r1/approvals/" + secret + "/approve", api.Answer{Credential: api.Credential{Name: secret, Secret: secret}}},
		{"POST", "/v1/runs/r1/calls/" + secret + "/complete", api.CompleteCall{Output: secret}},
	} {
		a := e.admin.do(c.method, c.path, c.body)
		if a.status < 400 {
			t.Errorf("%s %s: %d", c.method, c.path, a.status)
		}
		if bytes.Contains(a.body, []byte(secret)) {
			t.Errorf("%s %s: the answer repeats what was sent: %s", c.method, c.path, a.body)
		}
	}
}

// TestOrigins: without tokens, only loopback Host names are served, and a
// request that changes state from a browser must come from the same
// origin; other requests without Origin or Sec-Fetch-Site (curl, the CLI)
// pass. Each refusal is a problem.
func TestOrigins(t *testing.T) {
	p := serve(t, testConfig(t, false))
	u, _ := url.Parse(p.URL)
	port := u.Port()
	c := &client{t: t, url: p.URL}
	for _, host := range []string{"evil.example", "evil.example:" + port, "127.0.0.1.evil.example:" + port, "10.0.0.1:" + port} {
		c.do("GET", "/v1/agents", nil, "Host", host).want(t, http.StatusForbidden, api.TypeForbidden)
		c.do("GET", "/runs", nil, "Host", host).want(t, http.StatusForbidden, api.TypeForbidden)
	}
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "[::1]:" + port, "localhost"} {
		c.do("GET", "/v1/agents", nil, "Host", host).want(t, 200, "")
	}
	start := api.StartRun{Agent: "quick", Input: "hi"}
	for _, hdr := range [][]string{
		{"Origin", "http://evil.example"},
		{"Origin", "http://localhost:" + port + ".evil.example"},
		{"Origin", "null"},
		{"Sec-Fetch-Site", "cross-site"},
		{"Sec-Fetch-Site", "same-site"},
		{"Origin", "http://evil.example", "Sec-Fetch-Site", "same-origin"},
	} {
		c.do("POST", "/v1/runs", start, hdr...).want(t, http.StatusForbidden, api.TypeForbidden)
		c.do("POST", "/signin", "token=", hdr...).want(t, http.StatusForbidden, api.TypeForbidden)
	}
	for _, hdr := range [][]string{
		nil,
		{"Origin", p.URL},
		{"Sec-Fetch-Site", "same-origin"},
		{"Origin", p.URL, "Sec-Fetch-Site", "same-origin"},
	} {
		c.do("POST", "/v1/runs", start, hdr...).want(t, http.StatusCreated, "")
	}
	// A read from another site is no state change; its Host is what
	// guards it.
	c.do("GET", "/v1/agents", nil, "Origin", "http://evil.example").want(t, 200, "")
}

var entryAt = regexp.MustCompile(`"at":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z","data":`)

// TestOneSpelling: one journal entry is the same bytes in the journal
// page, the event stream, the Go client and `hitch runs events --json`.
func TestOneSpelling(t *testing.T) {
	dir := testConfig(t, false)
	p := serve(t, dir)
	c := &client{t: t, url: p.URL}
	start(t, c, "quick", "a <b> & \"c\" é\u2028", "one")
	wait(t, c, "one")

	raw := c.do("GET", "/v1/runs/one/journal", nil).want(t, 200, "").body
	var page struct {
		Entries []json.RawMessage `json:"entries"`
	}
	if err := json.Unmarshal(raw, &page); err != nil || len(page.Entries) < 2 {
		t.Fatalf("journal page: %v %s", err, raw)
	}
	var stream [][]byte
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := c.openStream(ctx, "/v1/runs/one/events", "")
	if err != nil {
		t.Fatal(err)
	}
	_ = readEvents(resp.Body, func(ev event) bool {
		if ev.kind == api.EventEntry {
			stream = append(stream, ev.data)
		}
		return ev.kind != api.EventEnd
	})
	resp.Body.Close()
	cl, err := hitchclient.New(p.URL)
	if err != nil {
		t.Fatal(err)
	}
	got, err := cl.Journal(ctx, "one", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin(t), "runs", "events", "one", "--json", "-c", filepath.Join(dir, "hitch.yaml")).Output()
	if err != nil {
		t.Fatalf("runs events: %v", err)
	}
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	if len(stream) != len(page.Entries) || len(got.Entries) != len(page.Entries) || len(lines) != len(page.Entries) {
		t.Fatalf("entries: page %d, stream %d, client %d, cli %d", len(page.Entries), len(stream), len(got.Entries), len(lines))
	}
	for i, want := range page.Entries {
		viaClient, _ := json.Marshal(got.Entries[i])
		for name, b := range map[string][]byte{"stream": stream[i], "client": viaClient, "cli": lines[i]} {
			if !bytes.Equal(b, want) {
				t.Errorf("entry %d by the %s:\n%s\nin the journal page:\n%s", i+1, name, b, want)
			}
		}
	}
	for i, e := range page.Entries {
		if !entryAt.Match(e) {
			t.Errorf("entry %d: at is not UTC to the microsecond: %s", i+1, e)
		}
	}
}
