package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/hitch-dev/hitch/internal/testproc"
)

func TestMain(m *testing.M) { os.Exit(testproc.Main(m)) }

// bin returns the hitch command, built at the first black-box test that
// needs it (fuzzing in-process needs none), with the race detector when
// these tests have it.
func bin(t testing.TB) string {
	t.Helper()
	if raceEnabled {
		return testproc.Build(t, "../cmd/hitch", "-race")
	}
	return testproc.Build(t, "../cmd/hitch")
}

// Tokens of the test config.
const (
	tokAdmin = "admin-token-0123456789"
	tokOp    = "operator-token-0123456789"
	tokView  = "viewer-token-0123456789"
	tokB     = "tenant-b-token-0123456789"
)

// testConfig is the files of a config with a few scripted agents:
// quick answers at once; slow calls a tool a dozen times, a little apart;
// gate asks for an approval; boss starts a sub-agent.
func testConfig(t testing.TB, tokens bool) string {
	t.Helper()
	files := map[string]string{
		"hitch.yaml": `store: runs.db
models:
  quick: {provider: scripted, script: quick.yaml}
  slow: {provider: scripted, script: slow.yaml}
  gate: {provider: scripted, script: gate.yaml}
  boss: {provider: scripted, script: boss.yaml}
  kid: {provider: scripted, script: slow.yaml}
  crawl: {provider: scripted, script: crawl.yaml}
  ops: {provider: scripted, script: ops.yaml}
external_tools:
  - {name: ship, description: Ships an order; the warehouse answers., timeout: 2h}
agents:
  - {name: quick, model: quick, policy: allow_all}
  - {name: slow, model: slow, policy: allow_all, tools: [glob], workspace: ws}
` + testproc.GateAgent + `  - {name: boss, model: boss, policy: allow_all, sub_agents: [kid]}
  - {name: kid, model: kid, policy: allow_all, tools: [glob], workspace: ws}
  - {name: crawl, model: crawl, policy: allow_all, tools: [glob], workspace: ws}
  - {name: ops, model: ops, policy: allow_all, tools: [await_event, ship]}
`,
		"quick.yaml": "turns:\n  - text: quick done\n",
		"ops.yaml":   "turns:\n  - calls: [{name: await_event, args: '{\"name\": \"paid\", \"timeout\": \"30m\"}'}, {name: ship, args: '{}'}]\n  - text: ops done\n",
		"slow.yaml":  testproc.Script(12, "15ms", testproc.Glob, "slow done"),
		"crawl.yaml": testproc.Script(30, "30ms", testproc.Glob, "crawl done"),
		"gate.yaml":  testproc.GateScript,
		"boss.yaml":  testproc.BossScript,
	}
	if tokens {
		files["hitch.yaml"] += `server:
  tokens:
    - {name: admin, role: admin, env: T_ADMIN}
    - {name: op, role: operator, env: T_OP}
    - {name: view, role: viewer, file: view.token}
    - {name: other, tenant: b, role: admin, env: T_B}
`
		files["view.token"] = tokView + "\n"
	}
	dir := testproc.ConfigDir(t, files)
	return dir
}

// serve starts hitch serve on a free loopback port and waits until it
// listens.
func serve(t testing.TB, dir string, extra ...string) *testproc.Server {
	t.Helper()
	args := append([]string{"serve", "-c", filepath.Join(dir, "hitch.yaml"), "--addr", "127.0.0.1:0", "--lease-ttl", "500ms", "--poll", "100ms"}, extra...)
	cmd := exec.Command(bin(t), args...)
	cmd.Env = append(os.Environ(), "T_ADMIN="+tokAdmin, "T_OP="+tokOp, "T_B="+tokB)
	return testproc.Serve(t, cmd)
}

// spec is the served OpenAPI document, for checking every answer.
type spec struct {
	doc     map[string]any
	schemas map[string]*jsonschema.Resolved // by "METHOD path status content-type"
	paths   []pathTemplate
	mu      sync.Mutex
}

type pathTemplate struct {
	template string
	re       *regexp.Regexp
}

func loadSpec(t testing.TB, url, token string) *spec {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url+"/v1/openapi.json", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("openapi.json: %d %s", resp.StatusCode, raw)
	}
	s := &spec{schemas: map[string]*jsonschema.Resolved{}}
	if err := json.Unmarshal(raw, &s.doc); err != nil {
		t.Fatal(err)
	}
	if v := s.doc["openapi"]; v != "3.1.0" {
		t.Fatalf("openapi version %v", v)
	}
	for p := range s.doc["paths"].(map[string]any) {
		re := regexp.MustCompile("^" + regexp.MustCompile(`\\\{[a-z_]+\\\}`).ReplaceAllString(regexp.QuoteMeta(p), `[^/]+`) + "$")
		s.paths = append(s.paths, pathTemplate{p, re})
	}
	return s
}

// schema returns the resolved JSON Schema of an answer, from the
// document's components; ok is false when the document does not list the
// status for the operation.
func (s *spec) schema(t testing.TB, method, path string, status int, ct string) (*jsonschema.Resolved, string) {
	t.Helper()
	tmpl := ""
	for _, p := range s.paths {
		if p.re.MatchString(path) {
			if tmpl == "" || strings.Count(p.template, "{") < strings.Count(tmpl, "{") {
				tmpl = p.template
			}
		}
	}
	if tmpl == "" {
		return nil, ""
	}
	key := fmt.Sprintf("%s %s %d %s", method, tmpl, status, ct)
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.schemas[key]; ok {
		return r, key
	}
	op, _ := s.doc["paths"].(map[string]any)[tmpl].(map[string]any)[strings.ToLower(method)].(map[string]any)
	if op == nil {
		return nil, key
	}
	resp, _ := op["responses"].(map[string]any)[fmt.Sprint(status)].(map[string]any)
	if resp == nil {
		t.Errorf("%s: the document does not list this status", key)
		return nil, key
	}
	content, _ := resp["content"].(map[string]any)[ct].(map[string]any)
	if content == nil {
		t.Errorf("%s: the document does not list this content type (has %v)", key, resp["content"])
		return nil, key
	}
	r := s.resolve(t, content["schema"])
	s.schemas[key] = r
	return r, key
}

// resolve turns a schema of the document into a standalone JSON Schema
// 2020-12, its component refs rewritten to $defs.
func (s *spec) resolve(t testing.TB, sch any) *jsonschema.Resolved {
	t.Helper()
	root := map[string]any{"$defs": s.doc["components"].(map[string]any)["schemas"]}
	for k, v := range sch.(map[string]any) {
		root[k] = v
	}
	b, _ := json.Marshal(root)
	b = bytes.ReplaceAll(b, []byte(`"#/components/schemas/`), []byte(`"#/$defs/`))
	var js jsonschema.Schema
	if err := json.Unmarshal(b, &js); err != nil {
		t.Fatalf("schema: %v", err)
	}
	r, err := js.Resolve(nil)
	if err != nil {
		t.Fatalf("resolve schema: %v", err)
	}
	return r
}

// check validates one answer against the document.
func (s *spec) check(t testing.TB, method, path string, status int, ct string, body []byte) {
	t.Helper()
	mt := strings.TrimSpace(strings.Split(ct, ";")[0])
	if mt == "text/event-stream" {
		return // streams are checked event by event
	}
	r, key := s.schema(t, method, path, status, mt)
	if r == nil {
		if key == "" {
			// A route the document does not have must be a problem.
			if mt != "application/problem+json" {
				t.Errorf("%s %s: %d %s is not a problem", method, path, status, mt)
			}
			s.checkProblem(t, body)
		}
		return
	}
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Errorf("%s: body is not JSON: %v: %s", key, err, body)
		return
	}
	if err := r.Validate(v); err != nil {
		t.Errorf("%s: the answer does not match the document: %v\n%s", key, err, body)
	}
}

func (s *spec) checkProblem(t testing.TB, body []byte) {
	t.Helper()
	var v any
	_ = json.Unmarshal(body, &v)
	if err := s.resolve(t, map[string]any{"$ref": "#/components/schemas/Problem"}).Validate(v); err != nil {
		t.Errorf("not a problem: %v: %s", err, body)
	}
}

// client talks to one server with one token, checking every answer
// against the document.
type client struct {
	t     testing.TB
	url   string
	token string
	spec  *spec
}

type answer struct {
	status int
	ct     string
	body   []byte
	header http.Header
}

func (a answer) problemType() string {
	var p struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(a.body, &p)
	return p.Type
}

func (a answer) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(a.body, v); err != nil {
		t.Fatalf("decode %s: %v", a.body, err)
	}
}

func (c *client) do(method, path string, body any, hdr ...string) answer {
	c.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, _ := json.Marshal(b)
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(method, c.url+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if strings.EqualFold(hdr[i], "Host") {
			req.Host = hdr[i+1]
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, ct: resp.Header.Get("Content-Type"), body: raw, header: resp.Header}
	if c.spec != nil {
		c.spec.check(c.t, method, strings.Split(path, "?")[0], a.status, a.ct, raw)
	}
	return a
}

// want fails unless the answer has the status and, for an error, the
// problem type.
func (a answer) want(t testing.TB, status int, typ string) answer {
	t.Helper()
	if a.status != status {
		t.Fatalf("status %d, want %d: %s", a.status, status, a.body)
	}
	if typ != "" {
		if got := a.problemType(); got != typ {
			t.Fatalf("problem type %q, want %q: %s", got, typ, a.body)
		}
		if a.ct != "application/problem+json" {
			t.Fatalf("content type %q for a problem", a.ct)
		}
	}
	return a
}

// event is one server-sent event.
type event struct {
	id, kind string
	data     []byte
}

// readEvents reads events until the stream ends or stop says to stop,
// after each event. Comments are skipped.
func readEvents(r io.Reader, each func(event) bool) error {
	br := bufio.NewReader(r)
	var ev event
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return err
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "":
			if ev.kind != "" || ev.data != nil {
				if !each(ev) {
					return nil
				}
			}
			ev = event{}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "id: "):
			ev.id = line[4:]
		case strings.HasPrefix(line, "event: "):
			ev.kind = line[7:]
		case strings.HasPrefix(line, "data: "):
			ev.data = []byte(line[6:])
		}
	}
}

// openStream opens an event stream; the caller closes the body.
func (c *client) openStream(ctx context.Context, path, lastID string) (*http.Response, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.url+path, nil)
	req.Header.Set("Authorization", "Bearer "+c.token)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	return http.DefaultClient.Do(req)
}

var httpClient = &http.Client{}

func newRequest(method, url string, body io.Reader, token string) (*http.Request, error) {
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	return req, nil
}
