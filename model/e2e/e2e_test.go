package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/hitchtest"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/anthropic"
	"github.com/hitch-dev/hitch/model/modeltest"
	"github.com/hitch-dev/hitch/model/openai"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/sqlite"
	"github.com/hitch-dev/hitch/tool"
)

// The crash test re-executes this binary as a child that runs one agent
// against the fake server living in the parent; these variables tell the
// child which provider to speak, where the server and the files are.
const (
	envChild   = "HITCH_E2E_CHILD"
	envURL     = "HITCH_E2E_URL"
	envDB      = "HITCH_E2E_DB"
	envEffects = "HITCH_E2E_EFFECTS"
	// envURL2 is the second server of a route: the fallback's.
	envURL2 = "HITCH_E2E_URL2"
)

const (
	runID  = "e2e-run"
	input  = "What is 2 + 3?"
	answer = "2 + 3 = 5."
	// effectLine is what one run of the add body leaves in the effects file.
	effectLine = "add 2 3\n"
	// childLeaseTTL is short so that the parent claims the dead child's run
	// soon after the kill.
	childLeaseTTL = 300 * time.Millisecond
	// waitLimit bounds every wait of a test: for the child, for a run.
	waitLimit = 20 * time.Second
)

func TestMain(m *testing.M) {
	if name := os.Getenv(envChild); name != "" {
		os.Exit(crashChild(name))
	}
	goleak.VerifyTestMain(m)
}

// provider is one wire protocol with what its fixtures say.
type provider struct {
	name string
	// path is where the provider's client posts.
	path string
	// callID is the id the add fixture gives its tool call.
	callID string
	// usage sums the add and answer fixtures as hitch counts them: input
	// (cached part included), output, cached input.
	usage [3]int64
	// newModel builds the adapter against baseURL, the server's root; a
	// nil client takes the adapter's default.
	newModel func(baseURL string, hc *http.Client) (model.Model, error)
	// parse reads a request body the adapter sent.
	parse func(body []byte) (sent, error)
}

// sent is what a request body carried that these tests look at.
type sent struct {
	tools []string
	// results maps a tool call id to the result sent back for it.
	results map[string]string
}

const testKey = "sk-test-e2e-4Rm8Qz2Lx6Vn"

func providers() []provider {
	return []provider{
		{
			name: "chat", path: "/v1/chat/completions", callID: "call_Q3kV7nXh2pLm9sTa4wBc8dEf",
			// 81+112 prompt tokens, 18+9 completion tokens, 0+64 cached.
			usage: [3]int64{193, 27, 64},
			newModel: func(u string, hc *http.Client) (model.Model, error) {
				return openai.New(openai.Config{Model: "gpt-4o-mini", BaseURL: u + "/v1", APIKey: testKey, API: openai.APIChat, HTTPClient: hc})
			},
			parse: parseChat,
		},
		{
			name: "responses", path: "/v1/responses", callID: "call_R8mN2bVx5cZq1wLk",
			// 96+160 input tokens, 46+12 output tokens, 0+128 cached.
			usage: [3]int64{256, 58, 128},
			newModel: func(u string, hc *http.Client) (model.Model, error) {
				return openai.New(openai.Config{Model: "gpt-4.1", BaseURL: u + "/v1", APIKey: testKey, API: openai.APIResponses, HTTPClient: hc})
			},
			parse: parseResponses,
		},
		{
			name: "anthropic", path: "/v1/messages", callID: "toolu_01Vb6KdN9sQx2TmW4pLh8RcY",
			// Input counts the cache: (472+0+1536) + (540+12+1536). Output
			// is message_delta's final count: 64+20. Cached is what was
			// read from the cache: 1536+1536.
			usage: [3]int64{4096, 84, 3072},
			newModel: func(u string, hc *http.Client) (model.Model, error) {
				return anthropic.New(anthropic.Config{Model: "claude-sonnet-4-5", BaseURL: u, APIKey: testKey, HTTPClient: hc})
			},
			parse: parseAnthropic,
		},
	}
}

func providerNamed(name string) (provider, bool) {
	for _, p := range providers() {
		if p.name == name {
			return p, true
		}
	}
	return provider{}, false
}

func parseChat(body []byte) (sent, error) {
	var b struct {
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
		Messages []struct {
			Role       string          `json:"role"`
			ToolCallID string          `json:"tool_call_id"`
			Content    json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return sent{}, fmt.Errorf("decode chat request: %w", err)
	}
	s := sent{results: map[string]string{}}
	for _, t := range b.Tools {
		s.tools = append(s.tools, t.Function.Name)
	}
	for i, m := range b.Messages {
		if m.Role != "tool" {
			continue
		}
		var text string
		if err := json.Unmarshal(m.Content, &text); err != nil {
			return sent{}, fmt.Errorf("chat message %d: tool content %s is not a string", i, m.Content)
		}
		s.results[m.ToolCallID] = text
	}
	return s, nil
}

func parseResponses(body []byte) (sent, error) {
	var b struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		Input []struct {
			Type   string          `json:"type"`
			CallID string          `json:"call_id"`
			Output json.RawMessage `json:"output"`
		} `json:"input"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return sent{}, fmt.Errorf("decode responses request: %w", err)
	}
	s := sent{results: map[string]string{}}
	for _, t := range b.Tools {
		s.tools = append(s.tools, t.Name)
	}
	for i, in := range b.Input {
		if in.Type != "function_call_output" {
			continue
		}
		var text string
		if err := json.Unmarshal(in.Output, &text); err != nil {
			return sent{}, fmt.Errorf("responses input %d: output %s is not a string", i, in.Output)
		}
		s.results[in.CallID] = text
	}
	return s, nil
}

func parseAnthropic(body []byte) (sent, error) {
	var b struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type      string `json:"type"`
				ToolUseID string `json:"tool_use_id"`
				Content   []struct {
					Type string `json:"type"`
					Text string `json:"text"`
				} `json:"content"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return sent{}, fmt.Errorf("decode messages request: %w", err)
	}
	s := sent{results: map[string]string{}}
	for _, t := range b.Tools {
		s.tools = append(s.tools, t.Name)
	}
	for _, m := range b.Messages {
		for _, c := range m.Content {
			if c.Type != "tool_result" {
				continue
			}
			if m.Role != "user" {
				return sent{}, fmt.Errorf("tool result %s sent in a %s turn", c.ToolUseID, m.Role)
			}
			var text strings.Builder
			for _, part := range c.Content {
				text.WriteString(part.Text)
			}
			s.results[c.ToolUseID] = text.String()
		}
	}
	return s, nil
}

type addArgs struct {
	A int `json:"a"`
	B int `json:"b"`
}

// newAgent builds the agent every test runs: one typed tool, add, whose body
// appends a line to the effects file so that tests count its real runs.
func newAgent(p provider, baseURL string, hc *http.Client, effects string) (*hitch.Agent, error) {
	m, err := p.newModel(baseURL, hc)
	if err != nil {
		return nil, err
	}
	return agentOn("e2e-"+p.name, m, nil, hitch.Limits{}, effects)
}

// agentOn builds the add agent on model m, with an optional family budget.
func agentOn(name string, m model.Model, budget *hitch.Budget, limits hitch.Limits, effects string) (*hitch.Agent, error) {
	add, err := tool.New("add", "Adds two integers.", func(_ context.Context, in addArgs) (int, error) {
		f, err := os.OpenFile(effects, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return 0, err
		}
		if _, err := fmt.Fprintf(f, "add %d %d\n", in.A, in.B); err != nil {
			f.Close()
			return 0, err
		}
		return in.A + in.B, f.Close()
	})
	if err != nil {
		return nil, err
	}
	return hitch.Build(hitch.Spec{
		Name: name, Model: m, Instructions: "Use the add tool for arithmetic.",
		Tools: []tool.Tool{add}, Policy: policy.AllowAll(), Budget: budget, Limits: limits,
	})
}

// fixture is a recorded reply of p's wire format.
func fixture(t *testing.T, p provider, name string) modeltest.Exchange {
	t.Helper()
	prefix := map[string]string{"chat": "chat_", "responses": "resp_", "anthropic": "anthropic_"}[p.name]
	return modeltest.Exchange{Body: modeltest.Fixture(t, filepath.Join("testdata", prefix+name+".sse"))}
}

// open opens the SQLite file at db and a runtime for a on it, both closed
// when the test ends.
func open(t *testing.T, db string, a *hitch.Agent) *hitch.Runtime {
	t.Helper()
	return hitchtest.Open(t, hitch.Config{Store: hitchtest.OpenStore(t, db), Agents: []*hitch.Agent{a}})
}

// requests returns what the server received, checking the count and the
// path, with each body parsed.
func requests(t *testing.T, p provider, srv *modeltest.Server, n int) ([]sent, [][]byte) {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) != n {
		t.Fatalf("server saw %d requests, want %d", len(reqs), n)
	}
	var out []sent
	var bodies [][]byte
	for i, r := range reqs {
		if r.Method != http.MethodPost || r.Path != p.path {
			t.Errorf("request %d: %s %s, want POST %s", i+1, r.Method, r.Path, p.path)
		}
		s, err := p.parse(r.Body)
		if err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
		out = append(out, s)
		bodies = append(bodies, r.Body)
	}
	return out, bodies
}

// checkTurns checks that the first request offered add and sent no result,
// and that every later one sent add's result back under the provider's id.
func checkTurns(t *testing.T, p provider, got []sent) {
	t.Helper()
	for i, s := range got {
		if !reflect.DeepEqual(s.tools, []string{"add"}) {
			t.Errorf("request %d offered tools %q, want [add]", i+1, s.tools)
		}
		want := map[string]string{p.callID: "5"}
		if i == 0 {
			want = map[string]string{}
		}
		if !reflect.DeepEqual(s.results, want) {
			t.Errorf("request %d sent tool results %v, want %v", i+1, s.results, want)
		}
	}
}

func checkUsage(t *testing.T, p provider, u hitch.Usage) {
	t.Helper()
	got := [3]*int64{u.InputTokens, u.OutputTokens, u.CachedInputTokens}
	for i, name := range []string{"input", "output", "cached input"} {
		if got[i] == nil || *got[i] != p.usage[i] {
			v := "null"
			if got[i] != nil {
				v = fmt.Sprint(*got[i])
			}
			t.Errorf("%s tokens %s, want %d", name, v, p.usage[i])
		}
	}
	if u.Generations != 2 {
		t.Errorf("usage sums %d generations, want 2", u.Generations)
	}
}

func journal(t *testing.T, rt *hitch.Runtime, id string) []store.Entry {
	t.Helper()
	es, err := rt.Journal(t.Context(), id, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// count returns how many entries of each kind a journal holds.
func count(es []store.Entry) map[string]int {
	n := map[string]int{}
	for _, e := range es {
		n[e.Kind]++
	}
	return n
}

func readEffects(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return string(b)
}

func TestToolCallRoundTrip(t *testing.T) {
	t.Parallel()
	for _, p := range providers() {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			effects := filepath.Join(dir, "effects.log")
			srv := modeltest.NewServer(t, fixture(t, p, "add"), fixture(t, p, "answer"))
			a, err := newAgent(p, srv.URL, srv.Client(), effects)
			if err != nil {
				t.Fatal(err)
			}
			rt := open(t, filepath.Join(dir, "hitch.db"), a)
			run := runToEnd(t, rt, a)
			if run.Status != hitchtype.StatusCompleted || run.Outcome == nil || run.Outcome.Answer != answer {
				t.Fatalf("status %s, outcome %+v; want completed with %q", run.Status, run.Outcome, answer)
			}
			if o := run.Outcome; o.Turns != 2 || o.Attempts != 2 {
				t.Errorf("%d turns, %d attempts; want 2 and 2", o.Turns, o.Attempts)
			}
			checkUsage(t, p, run.Outcome.Usage)
			got, _ := requests(t, p, srv, 2)
			checkTurns(t, p, got)
			if e := readEffects(t, effects); e != effectLine {
				t.Errorf("effects file %q, want %q", e, effectLine)
			}
			if n := count(journal(t, rt, runID))["run.ended"]; n != 1 {
				t.Errorf("%d run.ended entries, want 1", n)
			}
		})
	}
}

func TestUsageNotReported(t *testing.T) {
	t.Parallel()
	for _, p := range providers() {
		for _, tc := range []struct {
			name    string
			replies []string
		}{
			{"alone", []string{"no_usage"}},
			// One reply that reported usage does not make the sum whole.
			{"after a reported reply", []string{"add", "no_usage"}},
		} {
			t.Run(p.name+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				var exchanges []modeltest.Exchange
				for _, r := range tc.replies {
					exchanges = append(exchanges, fixture(t, p, r))
				}
				dir := t.TempDir()
				srv := modeltest.NewServer(t, exchanges...)
				a, err := newAgent(p, srv.URL, srv.Client(), filepath.Join(dir, "effects.log"))
				if err != nil {
					t.Fatal(err)
				}
				rt := open(t, filepath.Join(dir, "hitch.db"), a)
				run := runToEnd(t, rt, a)
				if run.Status != hitchtype.StatusCompleted || run.Outcome.Answer != "The sum is 5." {
					t.Fatalf("status %s, outcome %+v", run.Status, run.Outcome)
				}
				u := run.Outcome.Usage
				if u.InputTokens != nil || u.OutputTokens != nil || u.CachedInputTokens != nil {
					t.Errorf("usage %+v: every counter should be null", u)
				}
				if u.Generations != len(tc.replies) {
					t.Errorf("usage counts %d generations, want %d", u.Generations, len(tc.replies))
				}
				// The journal's outcome says null, not zero.
				es := journal(t, rt, runID)
				ended := es[len(es)-1]
				if ended.Kind != "run.ended" || !strings.Contains(string(ended.Data), `"input_tokens":null`) {
					t.Errorf("last entry %s %s: want run.ended with input_tokens null", ended.Kind, ended.Data)
				}
				requests(t, p, srv, len(tc.replies))
			})
		}
	}
}

// TestCrashMidModelCall kills a child process while the provider holds its
// second model call open, after the first turn's tool call settled, and
// recovers the run here from the same SQLite file.
func TestCrashMidModelCall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Parallel()
	for _, p := range providers() {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			db, effects := filepath.Join(dir, "hitch.db"), filepath.Join(dir, "effects.log")
			answerFixture := fixture(t, p, "answer")
			// The held reply sends its first event, so the call is truly
			// under way, then nothing until the caller goes away.
			hold, held, release := holdOpen(answerFixture)
			srv := modeltest.NewServer(t, fixture(t, p, "add"), hold, answerFixture)
			// Registered after the server, so it runs before the server's
			// close, which waits for the held handler.
			t.Cleanup(release)

			killChild(t, held, envChild+"="+p.name, envURL+"="+srv.URL, envDB+"="+db, envEffects+"="+effects)
			if e := readEffects(t, effects); e != effectLine {
				t.Fatalf("before recovery the effects file holds %q, want %q", e, effectLine)
			}

			a, err := newAgent(p, srv.URL, srv.Client(), effects)
			if err != nil {
				t.Fatal(err)
			}
			rt := open(t, db, a)
			ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
			defer cancel()
			// The child left a model attempt without a reply, after the
			// tool call settled.
			left := journal(t, rt, runID)
			if k := count(left); k["call.settled"] != 1 || k["model.attempt"] != 2 || k["model.reply"] != 1 || left[len(left)-1].Kind != "model.attempt" {
				t.Fatalf("the child left %d entries ending in %s (%v); want it killed in turn 2's model call", len(left), left[len(left)-1].Kind, k)
			}
			recoverRun(ctx, t, rt)
			run, err := rt.Await(ctx, runID)
			if err != nil {
				t.Fatal(err)
			}
			if run.Status != hitchtype.StatusCompleted || run.Outcome == nil || run.Outcome.Answer != answer {
				t.Fatalf("status %s, outcome %+v; want completed with %q", run.Status, run.Outcome, answer)
			}
			// Turn 1, the interrupted turn 2, and turn 2 issued again.
			if o := run.Outcome; o.Attempts != 3 || o.Turns != 2 {
				t.Errorf("%d attempts, %d turns; want 3 and 2", o.Attempts, o.Turns)
			}
			// The interrupted call brought no usage back, so the totals
			// are unknown: null, never a sum that leaves it out.
			if u := run.Outcome.Usage; u.InputTokens != nil || u.OutputTokens != nil || u.CachedInputTokens != nil || u.Generations != 3 {
				t.Errorf("usage after an interrupted call = %+v, want null counters over 3 generations", u)
			}
			k := count(journal(t, rt, runID))
			for kind, want := range map[string]int{"run.ended": 1, "model.attempt": 3, "model.reply": 2, "call.started": 1, "call.settled": 1} {
				if k[kind] != want {
					t.Errorf("%d %s entries, want %d", k[kind], kind, want)
				}
			}
			if e := readEffects(t, effects); e != effectLine {
				t.Errorf("effects file %q, want the body to have run once: %q", e, effectLine)
			}
			got, bodies := requests(t, p, srv, 3)
			checkTurns(t, p, got)
			// Recovery rebuilt the history the child sent from the journal.
			var lost, again any
			if err := json.Unmarshal(bodies[1], &lost); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(bodies[2], &again); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(lost, again) {
				t.Errorf("the re-issued call differs from the interrupted one:\n%s\n%s", bodies[1], bodies[2])
			}
		})
	}
}

// holdOpen is an exchange that answers with reply's first event and keeps
// the stream open until the client goes away or release is called; held
// receives once it holds.
func holdOpen(reply modeltest.Exchange) (hold modeltest.Exchange, held <-chan struct{}, release func()) {
	first := reply.Body[:strings.Index(reply.Body, "\n\n")+2]
	holding := make(chan struct{}, 1)
	stop := make(chan struct{})
	hold.Handler = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, first)
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		select {
		case holding <- struct{}{}:
		default:
		}
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}
	return hold, holding, func() { close(stop) }
}

// recoverRun claims the run once the dead child's lease has expired by the
// store's clock.
func recoverRun(ctx context.Context, t *testing.T, rt *hitch.Runtime) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		n, err := rt.Recover(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("the run was never claimed after the child died")
		case <-tick.C:
		}
	}
}

// killChild starts the child with env and SIGKILLs it once the server
// holds the model call it waits for.
func killChild(t *testing.T, held <-chan struct{}, env ...string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	var stderr tail
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	// Whatever happens below, the child does not outlive the test.
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	select {
	case <-held:
	case <-exited:
		t.Fatalf("the child ended before its second model call: %v\n%s", waitErr, stderr.String())
	case <-time.After(waitLimit):
		t.Fatalf("the child never reached its second model call\n%s", stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(waitLimit):
		t.Fatal("the killed child did not exit")
	}
}

// tail keeps the last few KiB written to it.
type tail struct {
	mu sync.Mutex
	b  []byte
}

const tailMax = 8 << 10

func (w *tail) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b = append(w.b, p...)
	if len(w.b) > tailMax {
		w.b = w.b[len(w.b)-tailMax:]
	}
	return len(p), nil
}

func (w *tail) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.b)
}

// crashChild runs the agent against the parent's server until it is
// killed. Returning at all is a failure: the run came to rest before the
// parent could kill it mid-call.
func crashChild(name string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "e2e child:", err)
		return 2
	}
	// Bounded in case the parent is gone and nobody kills this process.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var a *hitch.Agent
	var err error
	if name == routeChild {
		a, _, err = routeAgent(os.Getenv(envURL), os.Getenv(envURL2), routeOpts{}, os.Getenv(envEffects))
	} else if p, ok := providerNamed(name); ok {
		a, err = newAgent(p, os.Getenv(envURL), nil, os.Getenv(envEffects))
	} else {
		return fail(fmt.Errorf("unknown provider %q", name))
	}
	if err != nil {
		return fail(err)
	}
	st, err := sqlite.Open(ctx, os.Getenv(envDB))
	if err != nil {
		return fail(err)
	}
	rt, err := hitch.Open(hitch.Config{Store: st, Agents: []*hitch.Agent{a}, LeaseTTL: childLeaseTTL})
	if err != nil {
		return fail(err)
	}
	if _, err := rt.Start(ctx, a, input, hitch.WithID(runID)); err != nil {
		return fail(err)
	}
	run, err := rt.Await(ctx, runID)
	if err != nil {
		return fail(err)
	}
	return fail(fmt.Errorf("run came to rest before the kill: status %s, outcome %+v", run.Status, run.Outcome))
}
