package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/approval"
	"github.com/hitch-dev/hitch/internal/mcptest"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/server"
	"github.com/hitch-dev/hitch/server/mcpserver"
	"github.com/hitch-dev/hitch/sessions"
	"github.com/hitch-dev/hitch/store/sqlite"
	"github.com/hitch-dev/hitch/telemetry"
	"github.com/hitch-dev/hitch/tool"
)

// The surface matrix: every route of the server's own routers (the API's
// operations, /mcp, /metrics and the console's pages and actions) and
// every MCP tool of both transports has one row below; each is tried by
// every kind of caller against tenant a's objects and tenant b's, and the
// answer each must get follows from the row alone. A route or tool without
// a row fails the test, a row that is no longer a route or tool fails it,
// and a walk that finds nothing fails it: a new surface cannot ship
// without saying who may use it.

// surface is one row: who may use a route or tool, on what.
type surface struct {
	// need is the least role that may use it ("viewer" …), or "none" for
	// what needs no token.
	need string
	// object is what the path's {id} names: "run", "session", or "" for
	// a route of no one object.
	object string
	// path is the request's path; {id}, {call}, {message} and {name} are
	// filled in for each owner.
	path string
	body any
	// stream: the answer is an event stream; only its status is read.
	stream bool
	// always is the class every signed-in caller gets, whatever its role
	// and tenant (a catch-all page, a form that needs its own token).
	always string
	// defaultTenant: the route serves tenant default only (/metrics).
	defaultTenant bool
	// accept is the request's Accept header, for a way into a route that
	// it chooses (a start answered with the run's event stream).
	accept string
}

// The classes of answer.
const (
	allowed   = "allowed"   // through the gate: a success, or a refusal by the state of things
	forbidden = "forbidden" // refused by role (or by the door)
	notFound  = "not found" // refused by tenant: exactly as a missing id
	unauth    = "unauthenticated"
	refused   = "refused" // unauthenticated or forbidden: what a caller without a token gets
	hidden    = "hidden"  // forbidden or not found
)

var routeRows = map[string]surface{
	"GET /healthz":                  {need: "none", path: "/healthz"},
	"GET /readyz":                   {need: "none", path: "/readyz"},
	"GET /v1/agents":                {need: "viewer", path: "/v1/agents"},
	"GET /v1/agents/{name}":         {need: "viewer", path: "/v1/agents/{name}"},
	"GET /v1/agents/{name}/preview": {need: "viewer", object: "session", path: "/v1/agents/{name}/preview?session={id}&input=hi"},
	"GET /v1/openapi.json":          {need: "viewer", path: "/v1/openapi.json"},
	"GET /v1/openapi.yaml":          {need: "viewer", path: "/v1/openapi.yaml"},
	"GET /v1/openapi-3.0.json":      {need: "viewer", path: "/v1/openapi-3.0.json"},
	"GET /v1/openapi-3.0.yaml":      {need: "viewer", path: "/v1/openapi-3.0.yaml"},
	"POST /v1/runs":                 {need: "admin", path: "/v1/runs", body: api.StartRun{Agent: "quick", Input: "hi"}},
	"POST /v1/runs (stream)":        {need: "admin", path: "/v1/runs", body: api.StartRun{Agent: "quick", Input: "hi"}, stream: true, accept: "text/event-stream"},
	"GET /v1/runs":                  {need: "viewer", path: "/v1/runs"},
	"GET /v1/runs/counts":           {need: "viewer", path: "/v1/runs/counts"},
	"GET /v1/runs/{id}":             {need: "viewer", object: "run", path: "/v1/runs/{id}"},
	"GET /v1/runs/{id}/wait":        {need: "viewer", object: "run", path: "/v1/runs/{id}/wait?timeout=0"},
	"POST /v1/runs/{id}/cancel":     {need: "operator", object: "run", path: "/v1/runs/{id}/cancel"},
	"POST /v1/runs/{id}/fork":       {need: "admin", object: "run", path: "/v1/runs/{id}/fork", body: api.ForkRun{At: 1}},
	"POST /v1/runs/{id}/reconcile": {need: "operator", object: "run", path: "/v1/runs/{id}/reconcile",
		body: api.Reconcile{Call: "t1c1", Unconfirmed: true}},
	"POST /v1/runs/{id}/wake": {need: "operator", object: "run", path: "/v1/runs/{id}/wake", body: api.Wake{Event: "paid"}},
	"POST /v1/runs/{id}/calls/{call}/complete": {need: "operator", object: "run", path: "/v1/runs/{id}/calls/{call}/complete",
		body: api.CompleteCall{Output: "done"}},
	"GET /v1/runs/{id}/journal":          {need: "viewer", object: "run", path: "/v1/runs/{id}/journal"},
	"GET /v1/runs/{id}/calls/{call}":     {need: "viewer", object: "run", path: "/v1/runs/{id}/calls/{call}"},
	"GET /v1/me":                         {need: "viewer", path: "/v1/me"},
	"GET /v1/runs/{id}/events":           {need: "viewer", object: "run", path: "/v1/runs/{id}/events", stream: true},
	"GET /v1/runs/{id}/family/events":    {need: "viewer", object: "run", path: "/v1/runs/{id}/family/events", stream: true},
	"GET /v1/approvals":                  {need: "viewer", path: "/v1/approvals"},
	"GET /v1/runs/{id}/approvals/{call}": {need: "viewer", object: "run", path: "/v1/runs/{id}/approvals/{call}"},
	"POST /v1/runs/{id}/approvals/{call}/approve": {need: "operator", object: "run", path: "/v1/runs/{id}/approvals/{call}/approve",
		body: api.Answer{Credential: api.Credential{Name: "alice", Secret: "alice-secret"}}},
	"POST /v1/runs/{id}/approvals/{call}/reject": {need: "operator", object: "run", path: "/v1/runs/{id}/approvals/{call}/reject",
		body: api.Answer{Credential: api.Credential{Name: "alice", Secret: "alice-secret"}}},
	"GET /v1/runs/{id}/workspace":         {need: "viewer", object: "run", path: "/v1/runs/{id}/workspace"},
	"POST /v1/runs/{id}/workspace/grant":  {need: "operator", object: "run", path: "/v1/runs/{id}/workspace/grant", body: api.Root{Path: "/tmp"}},
	"POST /v1/runs/{id}/workspace/revoke": {need: "operator", object: "run", path: "/v1/runs/{id}/workspace/revoke", body: api.Root{Path: "/tmp"}},
	"GET /v1/runs/{id}/budget":            {need: "viewer", object: "run", path: "/v1/runs/{id}/budget"},
	"GET /v1/runs/{id}/family/usage":      {need: "viewer", object: "run", path: "/v1/runs/{id}/family/usage"},
	"GET /v1/runs/{id}/context":           {need: "viewer", object: "run", path: "/v1/runs/{id}/context"},
	"GET /v1/runs/{id}/waits":             {need: "viewer", object: "run", path: "/v1/runs/{id}/waits"},
	"POST /v1/sessions":                   {need: "admin", path: "/v1/sessions", body: api.CreateSession{Agent: "quick"}},
	"GET /v1/sessions":                    {need: "viewer", path: "/v1/sessions"},
	"GET /v1/sessions/{id}":               {need: "viewer", object: "session", path: "/v1/sessions/{id}"},
	"POST /v1/sessions/{id}/messages":     {need: "admin", object: "session", path: "/v1/sessions/{id}/messages", body: api.Send{Text: "more"}},
	"POST /v1/sessions/{id}/interrupt":    {need: "operator", object: "session", path: "/v1/sessions/{id}/interrupt"},
	"GET /v1/sessions/{id}/queue":         {need: "viewer", object: "session", path: "/v1/sessions/{id}/queue"},
	"POST /v1/sessions/{id}/queue/{message}/edit": {need: "admin", object: "session", path: "/v1/sessions/{id}/queue/{message}/edit",
		body: api.Edit{Text: "edited"}},
	"POST /v1/sessions/{id}/queue/{message}/remove": {need: "admin", object: "session", path: "/v1/sessions/{id}/queue/{message}/remove"},
	"GET /v1/sessions/{id}/status":                  {need: "viewer", object: "session", path: "/v1/sessions/{id}/status"},
	"GET /v1/sessions/{id}/transcript":              {need: "viewer", object: "session", path: "/v1/sessions/{id}/transcript"},
	"GET /v1/sessions/{id}/events":                  {need: "viewer", object: "session", path: "/v1/sessions/{id}/events", stream: true},
	"GET /v1/sessions/{id}/cost":                    {need: "viewer", object: "session", path: "/v1/sessions/{id}/cost"},
	"/mcp":                                          {need: "viewer", path: "/mcp", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
	"GET /metrics":                                  {need: "viewer", path: "/metrics", defaultTenant: true},
	"GET /v1/doctor":                                {need: "admin", path: "/v1/doctor", defaultTenant: true},

	"console: GET /static/":                 {need: "none", path: "/static/console.css"},
	"console: GET /signin":                  {need: "none", path: "/signin"},
	"console: GET /doctor":                  {need: "admin", path: "/doctor", defaultTenant: true},
	"console: POST /signin":                 {need: "none", path: "/signin", body: url.Values{"token": {"x"}}, always: forbidden},
	"console: POST /signout":                {need: "viewer", path: "/signout", body: url.Values{}, always: unauth},
	"console: GET /{$}":                     {need: "none", path: "/"},
	"console: /":                            {need: "none", path: "/no-such-page", always: notFound},
	"console: GET /runs":                    {need: "viewer", path: "/runs"},
	"console: GET /runs/{id}":               {need: "viewer", object: "run", path: "/runs/{id}"},
	"console: GET /runs/{id}/older":         {need: "viewer", object: "run", path: "/runs/{id}/older?before=2"},
	"console: GET /runs/{id}/entries/{pos}": {need: "viewer", object: "run", path: "/runs/{id}/entries/1"},
	"console: GET /runs/{id}/timeline":      {need: "viewer", object: "run", path: "/runs/{id}/timeline"},
	"console: GET /runs/{id}/live":          {need: "viewer", object: "run", path: "/runs/{id}/live?after=0", stream: true},
	"console: POST /runs/{id}/cancel":       {need: "operator", object: "run", path: "/runs/{id}/cancel", body: url.Values{"confirm": {"yes"}, "reason": {"matrix"}}},
	"console: POST /runs/{id}/fork":         {need: "admin", object: "run", path: "/runs/{id}/fork", body: url.Values{"confirm": {"yes"}, "at": {"1"}}},
	"console: POST /runs/{id}/reconcile": {need: "operator", object: "run", path: "/runs/{id}/reconcile",
		body: url.Values{"call": {"t1c1"}, "as": {"unconfirmed"}}},
	"console: GET /runs/{id}/workspace":  {need: "viewer", object: "run", path: "/runs/{id}/workspace"},
	"console: POST /runs/{id}/workspace": {need: "operator", object: "run", path: "/runs/{id}/workspace", body: url.Values{"op": {"grant"}, "path": {"/tmp"}}},
	"console: POST /runs/{id}/approvals/{call}": {need: "operator", object: "run", path: "/runs/{id}/approvals/{call}",
		body: url.Values{"op": {"reject"}, "approver": {"alice"}, "secret": {"alice-secret"}}},
	"console: GET /approvals":                {need: "viewer", path: "/approvals"},
	"console: GET /agents":                   {need: "viewer", path: "/agents"},
	"console: GET /agents/{name}":            {need: "viewer", path: "/agents/{name}"},
	"console: POST /agents/{name}/start":     {need: "admin", path: "/agents/{name}/start", body: url.Values{"input": {"hi"}}},
	"console: POST /agents/{name}/chat":      {need: "admin", path: "/agents/{name}/chat", body: url.Values{"text": {"hi"}}},
	"console: GET /sessions":                 {need: "viewer", path: "/sessions"},
	"console: POST /sessions":                {need: "admin", path: "/sessions", body: url.Values{"agent": {"quick"}}},
	"console: GET /sessions/{id}":            {need: "viewer", object: "session", path: "/sessions/{id}"},
	"console: GET /sessions/{id}/older":      {need: "viewer", object: "session", path: "/sessions/{id}/older?before=2"},
	"console: GET /sessions/{id}/live":       {need: "viewer", object: "session", path: "/sessions/{id}/live?after=0", stream: true},
	"console: POST /sessions/{id}/send":      {need: "admin", object: "session", path: "/sessions/{id}/send", body: url.Values{"text": {"more"}}},
	"console: POST /sessions/{id}/interrupt": {need: "operator", object: "session", path: "/sessions/{id}/interrupt", body: url.Values{}},
	"console: POST /sessions/{id}/queue/{message}/edit": {need: "admin", object: "session", path: "/sessions/{id}/queue/{message}/edit",
		body: url.Values{"text": {"edited"}}},
	"console: POST /sessions/{id}/queue/{message}/remove": {need: "admin", object: "session", path: "/sessions/{id}/queue/{message}/remove",
		body: url.Values{}},
}

// toolRows are the MCP tools, by name.
var toolRows = map[string]surface{
	"start_run":       {need: "admin", body: map[string]any{"agent": "quick", "input": "hi"}},
	"wait_run":        {need: "viewer", object: "run", body: map[string]any{"run_id": "{id}", "timeout_seconds": 1}},
	"run_status":      {need: "viewer", object: "run", body: map[string]any{"run_id": "{id}"}},
	"cancel_run":      {need: "operator", object: "run", body: map[string]any{"run_id": "{id}"}},
	"list_approvals":  {need: "viewer", object: "run", body: map[string]any{"run_id": "{id}"}},
	"answer_approval": {need: "operator", object: "run", body: map[string]any{"run_id": "{id}", "call": "{call}", "approve": false}},
}

var roleRank = map[string]int{"none": 0, "viewer": 1, "operator": 2, "admin": 3}

// caller is one column of the matrix.
type caller struct {
	name, token, tenant, role string
}

// expect is the class a caller gets from a row, on an owner's object.
func expect(row surface, c caller, owner string) string {
	if c.token == "" || c.tenant == "" { // no token, or one the server does not know
		if row.need == "none" {
			if row.always != "" {
				return row.always
			}
			return allowed
		}
		return refused
	}
	switch {
	case row.always != "":
		return row.always
	case row.object != "" && owner != c.tenant && roleRank[c.role] < roleRank[row.need]:
		// Refused twice over: by role and by tenant. Which is said
		// first tells nothing either way (the console reads a page's
		// object before it acts).
		return hidden
	case roleRank[c.role] < roleRank[row.need], row.defaultTenant && c.tenant != hitchtypeDefault:
		return forbidden
	case row.object != "" && owner != c.tenant:
		return notFound
	}
	return allowed
}

const hitchtypeDefault = "default"

// classOf classifies an HTTP answer.
func classOf(resp *http.Response, body []byte) string {
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		return unauth
	case http.StatusForbidden:
		return forbidden
	case http.StatusNotFound:
		return notFound
	case http.StatusSeeOther, http.StatusFound:
		// The console answers an action by sending the browser back
		// with a notice or an error, and a stranger to the sign-in.
		loc, _ := url.Parse(resp.Header.Get("Location"))
		if loc == nil {
			return allowed
		}
		if loc.Path == "/signin" {
			return unauth
		}
		return classOfText(loc.Query().Get("error"))
	}
	if resp.StatusCode >= 500 {
		return fmt.Sprintf("server error %d: %s", resp.StatusCode, body)
	}
	return allowed
}

// classOfText classifies a refusal in words: the runtime's refusals are
// fixed texts (hitch.Refusal).
func classOfText(s string) string {
	switch {
	case strings.Contains(s, "forbidden"):
		return forbidden
	case strings.Contains(s, "not found"):
		return notFound
	}
	return allowed
}

func matches(got, want string) bool {
	return got == want || (want == refused && (got == unauth || got == forbidden)) ||
		(want == hidden && (got == forbidden || got == notFound))
}

// surfaceEnv is one runtime served twice: with tokens, and without.
type surfaceEnv struct {
	rt                *hitch.Runtime
	agents            []*hitch.Agent
	withTokens, local *server.Server
	url, localURL     string
	// per owner ("default", "b"): the run waiting for an approval, the
	// session, and a message still queued in it.
	runs, sessions, messages map[string]string
}

func newSurfaceEnv(t *testing.T) *surfaceEnv {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	charge := tool.MustNew("charge", "Charges a card.", func(context.Context, struct{}) (string, error) { return "charged", nil })
	approvers, err := approval.NewStatic(approval.Member{Name: "alice", Secret: "alice-secret", Requirements: []string{"pay"}})
	if err != nil {
		t.Fatal(err)
	}
	quick, err := hitch.Build(hitch.Spec{Name: "quick", Policy: policy.AllowAll(),
		Model: scripted.New("quick", scripted.Script{Turns: []scripted.Turn{{Text: "quick done"}}})})
	if err != nil {
		t.Fatal(err)
	}
	gate, err := hitch.Build(hitch.Spec{Name: "gate", Tools: []tool.Tool{charge}, Approvers: approvers,
		Model:  scripted.New("gate", scripted.Script{Turns: []scripted.Turn{{Calls: []scripted.Call{{Name: "charge"}}}, {Text: "paid"}}}),
		Policy: policy.Rules{{Tools: []string{"charge"}, Verdict: policy.RequireApproval, Requirement: "pay"}}})
	if err != nil {
		t.Fatal(err)
	}
	agents := []*hitch.Agent{quick, gate}
	var notify atomic.Pointer[server.Server]
	rt, err := hitch.Open(hitch.Config{Store: st, Agents: agents, OnEvent: func(ev hitch.Event) {
		if s := notify.Load(); s != nil {
			s.Notify(ev)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	_, metrics, err := telemetry.Prometheus()
	if err != nil {
		t.Fatal(err)
	}
	tokens := []server.Token{
		{Name: "a-admin", Tenant: "default", Role: api.RoleAdmin, Hash: server.HashToken("tok-a-admin")},
		{Name: "a-op", Tenant: "default", Role: api.RoleOperator, Hash: server.HashToken("tok-a-op")},
		{Name: "a-view", Tenant: "default", Role: api.RoleViewer, Hash: server.HashToken("tok-a-view")},
		{Name: "b-admin", Tenant: "b", Role: api.RoleAdmin, Hash: server.HashToken("tok-b-admin")},
	}
	cred := &approval.Credential{Name: "alice", Secret: "alice-secret"}
	e := &surfaceEnv{rt: rt, agents: agents, runs: map[string]string{}, sessions: map[string]string{}, messages: map[string]string{}}
	limits := server.Limits{MaxWait: time.Second, RequestTimeout: 30 * time.Second}
	if e.withTokens, err = server.New(server.Config{Runtime: rt, Store: st, Agents: agents, Tokens: tokens, Metrics: metrics,
		MCPCredential: cred, Limits: limits}); err != nil {
		t.Fatal(err)
	}
	if e.local, err = server.New(server.Config{Runtime: rt, Store: st, Agents: agents, Metrics: metrics, MCPCredential: cred, Limits: limits}); err != nil {
		t.Fatal(err)
	}
	notify.Store(e.withTokens)
	ts := httptest.NewServer(e.withTokens)
	lts := httptest.NewServer(e.local)
	e.url, e.localURL = ts.URL, lts.URL
	t.Cleanup(func() {
		e.withTokens.Stop()
		e.local.Stop()
		ts.Close()
		lts.Close()
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rt.Close(cctx)
		_ = st.Close()
	})
	// Each tenant: a run waiting for an approval, and a session whose
	// first message waits for one too, so its second stays queued.
	for owner, sc := range map[string]*hitch.Scope{
		"default": rt.As(hitch.Principal{Name: "setup", Tenant: "default", Role: hitch.RoleAdmin}),
		"b":       rt.As(hitch.Principal{Name: "setup", Tenant: "b", Role: hitch.RoleAdmin}),
	} {
		id := owner + "-run"
		if _, err := sc.Start(ctx, gate, "charge it", hitch.WithID(id)); err != nil {
			t.Fatal(err)
		}
		if r, err := sc.Await(ctx, id); err != nil || r.Status != "waiting" {
			t.Fatalf("%s: %+v %v", id, r, err)
		}
		ses, _, err := sc.Sessions().Open(ctx, gate, sessions.Options{ID: owner + "-ses"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sc.Sessions().Send(ctx, ses.ID, "first", sessions.SendOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := sc.Sessions().Await(ctx, ses.ID); err != nil {
			t.Fatal(err)
		}
		sent, err := sc.Sessions().Send(ctx, ses.ID, "second", sessions.SendOptions{})
		if err != nil {
			t.Fatal(err)
		}
		e.runs[owner], e.sessions[owner], e.messages[owner] = id, ses.ID, sent.MessageID
	}
	return e
}

// fill makes a row's path (or a tool's arguments) concrete for an owner.
func (e *surfaceEnv) fill(s, owner string) string {
	id := e.runs[owner]
	if strings.Contains(s, "/sessions/{id}") || strings.Contains(s, "session") {
		id = e.sessions[owner]
	}
	return strings.NewReplacer("{id}", id, "{call}", "t1c1", "{message}", e.messages[owner], "{name}", "quick").Replace(s)
}

// consoleSession is a signed-in browser: its cookie and form token.
type consoleSession struct{ cookie, csrf string }

var csrfInput = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (e *surfaceEnv) signIn(t *testing.T, token string) consoleSession {
	t.Helper()
	c := signIn(t, e.url, token)
	u, _ := url.Parse(e.url)
	var s consoleSession
	for _, ck := range c.hc.Jar.Cookies(u) {
		if ck.Name == "hitch_session" {
			s.cookie = ck.Value
		}
	}
	m := csrfInput.FindStringSubmatch(c.page(t, "/runs"))
	if s.cookie == "" || m == nil {
		t.Fatal("no session cookie or csrf field after signing in")
	}
	s.csrf = m[1]
	return s
}

// do sends one request of a row as a caller and classifies the answer.
func do(t *testing.T, base, key string, row surface, path, token string, ses *consoleSession, hdr ...string) string {
	t.Helper()
	console := strings.HasPrefix(key, "console: ")
	method := "GET"
	if strings.Contains(key, "POST ") || key == "/mcp" {
		method = "POST"
	}
	var body io.Reader
	ct := ""
	switch b := row.body.(type) {
	case nil:
	case string:
		body, ct = strings.NewReader(b), "application/json"
	case url.Values:
		if ses != nil {
			b = maps(b)
			b.Set("csrf", ses.csrf)
		}
		body, ct = strings.NewReader(b.Encode()), "application/x-www-form-urlencoded"
	default:
		raw, _ := json.Marshal(b)
		body, ct = strings.NewReader(string(raw)), "application/json"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, base+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	if key == "/mcp" {
		req.Header.Set("Accept", "application/json, text/event-stream")
	}
	if row.accept != "" {
		req.Header.Set("Accept", row.accept)
	}
	if console {
		if ses != nil {
			req.AddCookie(&http.Cookie{Name: "hitch_session", Value: ses.cookie})
		}
	} else if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i] == "Host" {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var raw []byte
	if !row.stream || resp.StatusCode >= 300 {
		raw, _ = io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	}
	return classOf(resp, raw)
}

func maps(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = slices.Clone(vs)
	}
	return out
}

// TestSurfaceMatrix walks every route and tool with every kind of caller.
func TestSurfaceMatrix(t *testing.T) {
	e := newSurfaceEnv(t)

	// The routes, from the server's own routers; the OpenAPI document's
	// operations are among them.
	routes := e.withTokens.Routes()
	if len(routes) < 30 || !slices.ContainsFunc(routes, func(r string) bool { return strings.HasPrefix(r, "console: ") }) {
		t.Fatalf("the walk found %d routes: %v", len(routes), routes)
	}
	for path, item := range e.withTokens.OpenAPI().Paths {
		for method, op := range map[string]*huma.Operation{"GET": item.Get, "POST": item.Post, "PUT": item.Put, "DELETE": item.Delete, "PATCH": item.Patch} {
			if op != nil && !slices.Contains(routes, method+" "+path) {
				t.Errorf("the OpenAPI document has %s %s, which the router does not serve", method, path)
			}
		}
	}
	seen := map[string]bool{}
	for _, r := range routes {
		if _, ok := routeRows[r]; !ok {
			t.Errorf("route %q has no row in the surface matrix: say who may use it", r)
		}
		seen[r] = true
	}
	for r := range routeRows {
		if route, _, way := strings.Cut(r, " ("); way && seen[route] {
			continue // another way into a route that has its own row
		}
		if !seen[r] {
			t.Errorf("the surface matrix has a row for %q, which is no longer a route", r)
		}
	}

	callers := []caller{
		{"tenant default's admin", "tok-a-admin", "default", "admin"},
		{"tenant default's operator", "tok-a-op", "default", "operator"},
		{"tenant default's viewer", "tok-a-view", "default", "viewer"},
		{"tenant b's admin", "tok-b-admin", "b", "admin"},
		{"no token", "", "", ""},
		{"a wrong token", "tok-nobody", "", ""},
	}
	sessions := map[string]*consoleSession{}
	for _, c := range callers {
		switch {
		case c.tenant != "":
			s := e.signIn(t, c.token)
			sessions[c.name] = &s
		case c.token != "":
			// A cookie of a token the server does not accept.
			sessions[c.name] = &consoleSession{cookie: "t.dG9rLW5vYm9keQ", csrf: "x"}
		}
	}
	keys := sortedKeys(routeRows)
	// Commands run last, so the reads see the objects as set up.
	sort.SliceStable(keys, func(i, j int) bool { return !strings.Contains(keys[i], "POST") && strings.Contains(keys[j], "POST") })
	for _, key := range keys {
		row := routeRows[key]
		for _, owner := range []string{"default", "b"} {
			if row.object == "" && owner == "b" {
				continue
			}
			path := e.fill(row.path, owner)
			for _, c := range callers {
				want := expect(row, c, owner)
				got := do(t, e.url, key, row, path, c.token, sessions[c.name])
				if !matches(got, want) {
					t.Errorf("%s on %s's objects (%s): %s, want %s", c.name, owner, key, got, want)
				}
			}
			// Without tokens: a foreign Host is refused everywhere, a
			// foreign Origin wherever state changes.
			if got := do(t, e.localURL, key, row, path, "", nil, "Host", "evil.example"); got != forbidden {
				t.Errorf("tokenless, Host evil.example (%s): %s, want forbidden", key, got)
			}
			got := do(t, e.localURL, key, row, path, "", nil, "Origin", "http://evil.example")
			if changes := strings.Contains(key, "POST") || key == "/mcp"; changes && got != forbidden {
				t.Errorf("tokenless, Origin evil.example (%s): %s, want forbidden", key, got)
			} else if !changes && got == forbidden {
				t.Errorf("tokenless, a read with Origin evil.example (%s) was refused", key)
			}
		}
	}
	// Lists hold the caller's tenant's objects only.
	for _, c := range callers[:4] {
		other := "b"
		if c.tenant == "b" {
			other = "default"
		}
		for _, path := range []string{"/v1/runs", "/v1/approvals", "/v1/sessions", "/v1/runs?root_id=" + e.runs[other]} {
			req, _ := http.NewRequest("GET", e.url+path, nil)
			req.Header.Set("Authorization", "Bearer "+c.token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(b), e.runs[other]) || strings.Contains(string(b), e.sessions[other]) {
				t.Errorf("%s listing %s sees tenant %s's: %s", c.name, path, other, b)
			}
		}
	}

	// The MCP tools: both transports list the same tools, every one has a
	// row and every row is a tool.
	local := mcpTools(t, e, "")
	if len(local) < 4 {
		t.Fatalf("the stdio server lists %d tools", len(local))
	}
	for _, c := range callers[:4] {
		if got := mcpTools(t, e, c.token); !slices.Equal(got, local) {
			t.Errorf("/mcp lists %v to %s; the stdio server %v", got, c.name, local)
		}
	}
	for _, name := range local {
		if _, ok := toolRows[name]; !ok {
			t.Errorf("MCP tool %q has no row in the surface matrix", name)
		}
	}
	for name := range toolRows {
		if !slices.Contains(local, name) {
			t.Errorf("the surface matrix has a row for MCP tool %q, which is no longer a tool", name)
		}
	}
	for _, name := range sortedKeys(toolRows) {
		row := toolRows[name]
		for _, owner := range []string{"default", "b"} {
			args := map[string]any{}
			for k, v := range row.body.(map[string]any) {
				if s, ok := v.(string); ok {
					v = e.fill(s, owner)
				}
				args[k] = v
			}
			for _, c := range callers[:4] {
				want := expect(row, c, owner)
				if got := callClass(t, e, c.token, name, args); !matches(got, want) {
					t.Errorf("%s calling %s on %s's run: %s, want %s", c.name, name, owner, got, want)
				}
			}
			// The stdio server's local user owns the store: every
			// tenant, every role, by stored ids.
			if owner != "default" {
				for k, v := range args {
					if k == "run_id" {
						args[k] = owner + "~" + v.(string)
					}
				}
			}
			if got := callClass(t, e, "", name, args); got != allowed {
				t.Errorf("the local user calling %s on %s's run: %s", name, owner, got)
			}
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// mcpClient connects to /mcp with a token, or, with none, to the server
// `hitch mcp` serves on standard input and output, over an in-memory
// transport: the local user, of every tenant.
func mcpClient(t *testing.T, e *surfaceEnv, token string) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	if token != "" {
		return mcptest.Connect(t, ctx, e.url, token)
	}
	srv, err := mcpserver.New(mcpserver.Options{Agents: e.agents, Credential: &approval.Credential{Name: "alice", Secret: "alice-secret"},
		Scope: e.rt.As(hitch.Principal{Name: "local", Tenant: hitch.AllTenants, Role: hitch.RoleAdmin})})
	if err != nil {
		t.Fatal(err)
	}
	st1, st2 := mcp.NewInMemoryTransports()
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- srv.Run(sctx, st1) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, st2, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		stop()
		<-served
	})
	return cs
}

func mcpTools(t *testing.T, e *surfaceEnv, token string) []string {
	t.Helper()
	res, err := mcpClient(t, e, token).ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	sort.Strings(names)
	return names
}

func callClass(t *testing.T, e *surfaceEnv, token, name string, args map[string]any) string {
	t.Helper()
	_, refusal := callTool(t, context.Background(), mcpClient(t, e, token), name, args)
	return classOfText(refusal)
}
