package route_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/internal/testclock"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/anthropic"
	"github.com/hitch-dev/hitch/model/modeltest"
	"github.com/hitch-dev/hitch/model/openai"
	"github.com/hitch-dev/hitch/model/route"
)

const testKey = "sk-test-route-8Jd3Kq5Wz1"

// newClock is a breaker clock that moves only when the test moves it.
func newClock() *testclock.Clock { return testclock.New(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)) }

// The fixtures' models, as the providers name them in their replies.
const (
	openaiReplyModel    = "gpt-4o-mini-2024-07-18"
	anthropicReplyModel = "claude-sonnet-4-5-20250929"
)

// provider builds a real adapter against a local server.
type provider struct {
	name  string
	text  string // the fixture of a plain answer
	reply string // the model that answer names
	build func(srv *modeltest.Server) (model.Model, error)
}

// ok is the provider's plain answer.
func (p provider) ok(t *testing.T) modeltest.Exchange { return modeltest.FixtureExchange(t, p.text) }

// newFor builds the adapter against srv.
func (p provider) newFor(t *testing.T, srv *modeltest.Server) model.Model {
	t.Helper()
	m, err := p.build(srv)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var (
	openaiProvider = provider{
		name:  "openai",
		text:  "../openai/testdata/chat_text.sse",
		reply: openaiReplyModel,
		build: func(srv *modeltest.Server) (model.Model, error) {
			return openai.New(openai.Config{Model: "gpt-4o-mini", BaseURL: srv.URL + "/v1", APIKey: testKey, HTTPClient: srv.Client()})
		},
	}
	anthropicProvider = provider{
		name:  "anthropic",
		text:  "../anthropic/testdata/text.sse",
		reply: anthropicReplyModel,
		build: func(srv *modeltest.Server) (model.Model, error) {
			return anthropic.New(anthropic.Config{Model: "claude-sonnet-4-5", BaseURL: srv.URL, APIKey: testKey, HTTPClient: srv.Client()})
		},
	}
)

func hello() *model.Request {
	return &model.Request{Instructions: "Be brief.", Messages: []model.Message{{Role: model.RoleUser, Text: "Say hello."}}}
}

func newRoute(t *testing.T, clk *testclock.Clock, members ...route.Member) *route.Route {
	t.Helper()
	r, err := route.New(route.Config{Name: "main", Members: members, CoolDown: time.Minute, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func errorBody(typ, msg string) string {
	return fmt.Sprintf(`{"type":"error","error":{"type":%q,"message":%q}}`, typ, msg)
}

// TestFallback: the first provider fails with each moving class, and the
// second, a different provider, answers at once.
func TestFallback(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		first   provider
		fail    modeltest.Exchange
		timeout time.Duration
		kind    model.Kind
	}{
		{"529", anthropicProvider, modeltest.Exchange{Status: 529, Body: errorBody("overloaded_error", "Overloaded")}, 0, model.KindOverloaded},
		{"503", openaiProvider, modeltest.Exchange{Status: 503, ContentType: "text/html", Body: "<html><body>upstream connect error</body></html>"}, 0, model.KindOverloaded},
		{"429", openaiProvider, modeltest.Exchange{Status: 429, Header: map[string]string{"Retry-After": "20"},
			Body: `{"error":{"message":"Rate limit reached for gpt-4o-mini","type":"requests","code":"rate_limit_exceeded"}}`}, 0, model.KindRateLimited},
		// The server sends the stream's head, then nothing: the member's
		// timeout ends the attempt.
		{"timeout", openaiProvider, modeltest.Exchange{Body: "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"choices\":[]}\n\n", Hold: true}, 100 * time.Millisecond, model.KindTimedOut},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			second := openaiProvider
			if tc.first.name == "openai" {
				second = anthropicProvider
			}
			s1 := modeltest.NewServer(t, tc.fail)
			s2 := modeltest.NewServer(t, second.ok(t))
			m1, m2 := tc.first.newFor(t, s1), second.newFor(t, s2)
			r := newRoute(t, newClock(), route.Member{Model: m1, Timeout: tc.timeout}, route.Member{Model: m2})

			reply, err := model.Collect(r.Generate(context.Background(), hello()), nil)
			if err != nil {
				t.Fatalf("generate: %v", err)
			}
			if reply.Model != second.reply {
				t.Errorf("reply from %q, want the second provider's %q", reply.Model, second.reply)
			}
			if n1, n2 := len(s1.Requests()), len(s2.Requests()); n1 != 1 || n2 != 1 {
				t.Errorf("requests: first %d, second %d; want 1 each", n1, n2)
			}
			// The choice the engine would journal for the second attempt.
			c, err := r.Next(hello(), []route.Try{{Model: m1.Name(), Kind: tc.kind}})
			if err != nil {
				t.Fatal(err)
			}
			if c.Member.Model.Name() != m2.Name() || c.Why != route.WhyFallback || c.After != tc.kind {
				t.Errorf("next after %s: %s (%s after %s), want %s (fallback after %s)", tc.kind, c.Member.Model.Name(), c.Why, c.After, m2.Name(), tc.kind)
			}
			b := r.Breakers()
			if !b[0].Open || b[0].Kind != tc.kind || b[1].Open {
				t.Errorf("breakers after the fallback: %+v; want the first open for %s, the second closed", b, tc.kind)
			}
		})
	}
}

// TestUnreachable: a provider nobody listens for moves on as unreachable.
func TestUnreachable(t *testing.T) {
	t.Parallel()
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	m1, err := openai.New(openai.Config{Model: "gpt-4o-mini", BaseURL: deadURL + "/v1", APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	s2 := modeltest.NewServer(t, anthropicProvider.ok(t))
	r := newRoute(t, newClock(), route.Member{Model: m1}, route.Member{Model: anthropicProvider.newFor(t, s2)})
	reply, err := model.Collect(r.Generate(context.Background(), hello()), nil)
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	if reply.Model != anthropicReplyModel {
		t.Errorf("reply from %q, want %q", reply.Model, anthropicReplyModel)
	}
	if b := r.Breakers(); b[0].Kind != model.KindUnreachable {
		t.Errorf("first breaker %+v, want opened by unreachable", b[0])
	}
}

// TestNoFallback: a rejected key, a bad request and a malformed answer end
// the request at the first model; the second is never asked.
func TestNoFallback(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		ex   modeltest.Exchange
		kind model.Kind
	}{
		{"401", modeltest.Exchange{Status: 401, Body: `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error","code":"invalid_api_key"}}`}, model.KindUnauthorized},
		{"400", modeltest.Exchange{Status: 400, Body: `{"error":{"message":"Unknown parameter","type":"invalid_request_error"}}`}, model.KindInvalidRequest},
		{"malformed", modeltest.Exchange{Body: "data: {not json\n\n"}, model.KindMalformed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s1 := modeltest.NewServer(t, tc.ex)
			s2 := modeltest.NewServer(t) // any request fails the test
			r := newRoute(t, newClock(), route.Member{Model: openaiProvider.newFor(t, s1)}, route.Member{Model: anthropicProvider.newFor(t, s2)})
			_, err := model.Collect(r.Generate(context.Background(), hello()), nil)
			if got := model.KindOf(err); got != tc.kind {
				t.Fatalf("error %v (kind %s), want kind %s", err, got, tc.kind)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Errorf("error holds the key: %v", err)
			}
			if n := len(s2.Requests()); n != 0 {
				t.Errorf("the second model saw %d requests, want none", n)
			}
			if b := r.Breakers(); b[0].Open || b[0].Failures != 0 {
				t.Errorf("breaker %+v: a failure that does not move on must not open it", b[0])
			}
		})
	}
}

// TestBreaker: a model that failed is skipped by the next requests until
// its cool-down has passed on the route's clock, then asked again.
func TestBreaker(t *testing.T) {
	t.Parallel()
	clk := newClock()
	s1 := modeltest.NewServer(t,
		modeltest.Exchange{Status: 529, Body: errorBody("overloaded_error", "Overloaded")},
		anthropicProvider.ok(t))
	s2 := modeltest.NewServer(t, openaiProvider.ok(t), openaiProvider.ok(t))
	m1, m2 := anthropicProvider.newFor(t, s1), openaiProvider.newFor(t, s2)
	r := newRoute(t, clk, route.Member{Model: m1}, route.Member{Model: m2})
	ask := func(want string) {
		t.Helper()
		reply, err := model.Collect(r.Generate(context.Background(), hello()), nil)
		if err != nil {
			t.Fatalf("generate: %v", err)
		}
		if reply.Model != want {
			t.Fatalf("reply from %q, want %q", reply.Model, want)
		}
	}

	ask(openaiReplyModel) // the first fails, the second answers
	clk.Add(59 * time.Second)
	c, err := r.Next(hello(), nil)
	if err != nil {
		t.Fatal(err)
	}
	until := time.Date(2026, 3, 1, 12, 1, 0, 0, time.UTC)
	if c.Member.Model.Name() != m2.Name() || c.Why != route.WhyFirst || len(c.Skipped) != 1 ||
		c.Skipped[0].Model != m1.Name() || c.Skipped[0].Why != route.SkipCoolingDown || !c.Skipped[0].Until.Equal(until) {
		t.Fatalf("choice while cooling: %+v, want %s first with %s skipped until %s", c, m2.Name(), m1.Name(), until)
	}
	ask(openaiReplyModel) // skipped: the first server sees no request
	if n := len(s1.Requests()); n != 1 {
		t.Fatalf("the cooling model saw %d requests, want 1", n)
	}
	b := r.Breakers()
	if !b[0].Open || !b[0].Until.Equal(until) || b[0].Failures != 1 {
		t.Errorf("breaker while cooling: %+v", b[0])
	}

	clk.Add(time.Second)
	if b := r.Breakers(); b[0].Open {
		t.Errorf("breaker after the cool-down: %+v, want closed", b[0])
	}
	ask(anthropicReplyModel) // let back, and it answers
	if b := r.Breakers(); b[0].Open || b[0].Failures != 0 {
		t.Errorf("breaker after an answer: %+v, want reset", b[0])
	}
	if n1, n2 := len(s1.Requests()), len(s2.Requests()); n1 != 2 || n2 != 2 {
		t.Errorf("requests: first %d, second %d; want 2 each", n1, n2)
	}
}

// TestAttempts: a member with an attempt budget is asked that many times
// in a row before the request moves on.
func TestAttempts(t *testing.T) {
	t.Parallel()
	fail := modeltest.Exchange{Status: 503, Body: `{"error":{"message":"busy","type":"server_error"}}`}
	s1 := modeltest.NewServer(t, fail, fail)
	s2 := modeltest.NewServer(t, anthropicProvider.ok(t))
	m1, m2 := openaiProvider.newFor(t, s1), anthropicProvider.newFor(t, s2)
	r := newRoute(t, newClock(), route.Member{Model: m1, Attempts: 2}, route.Member{Model: m2})
	reply, err := model.Collect(r.Generate(context.Background(), hello()), nil)
	if err != nil {
		t.Fatal(err)
	}
	if reply.Model != anthropicReplyModel || len(s1.Requests()) != 2 {
		t.Errorf("reply from %q after %d attempts at the first; want %q after 2", reply.Model, len(s1.Requests()), anthropicReplyModel)
	}
	tries := []route.Try{{Model: m1.Name(), Kind: model.KindOverloaded}}
	if c, _ := r.Next(hello(), tries); c.Member.Model.Name() != m1.Name() || c.Why != route.WhyRetry {
		t.Errorf("after one failure: %s (%s), want %s again", c.Member.Model.Name(), c.Why, m1.Name())
	}
}

// TestRouteSpent: when every member failed with a moving class, Generate
// returns the last failure; the engine's Next starts again at the top.
func TestRouteSpent(t *testing.T) {
	t.Parallel()
	s1 := modeltest.NewServer(t, modeltest.Exchange{Status: 503, Body: `{"error":{"message":"busy","type":"server_error"}}`})
	s2 := modeltest.NewServer(t, modeltest.Exchange{Status: 529, Body: errorBody("overloaded_error", "Overloaded")})
	m1, m2 := openaiProvider.newFor(t, s1), anthropicProvider.newFor(t, s2)
	r, err := route.New(route.Config{Name: "main", Members: []route.Member{{Model: m1}, {Model: m2}}, CoolDown: -1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = model.Collect(r.Generate(context.Background(), hello()), nil)
	var me *model.Error
	if !errors.As(err, &me) || me.Provider != "anthropic" || me.Status != 529 {
		t.Fatalf("error %v, want the second member's 529", err)
	}
	c, err := r.Next(hello(), []route.Try{{Model: m1.Name(), Kind: model.KindOverloaded}, {Model: m2.Name(), Kind: model.KindOverloaded}})
	if err != nil || c.Member.Model.Name() != m1.Name() || c.Why != route.WhyAgain {
		t.Errorf("next when spent: %+v, %v; want %s again from the top", c, err, m1.Name())
	}
}

// TestSkipUnable: members without tools or structured output are passed
// over for requests that need them, and the choice says so.
func TestSkipUnable(t *testing.T) {
	t.Parallel()
	s := modeltest.NewServer(t)
	small := openaiProvider.newFor(t, s)
	big := anthropicProvider.newFor(t, s)
	r := newRoute(t, newClock(), route.Member{Model: small, NoTools: true, NoAnswer: true}, route.Member{Model: big})

	withTools := hello()
	withTools.Tools = []model.ToolSpec{{Name: "add", Schema: []byte(`{"type":"object"}`)}}
	c, err := r.Next(withTools, nil)
	if err != nil || c.Member.Model.Name() != big.Name() || len(c.Skipped) != 1 || c.Skipped[0].Why != route.SkipNoTools {
		t.Errorf("with tools: %+v, %v; want %s with %s skipped for no_tools", c, err, big.Name(), small.Name())
	}
	withAnswer := hello()
	withAnswer.Answer = &model.AnswerSpec{Name: "a", Schema: []byte(`{"type":"object"}`)}
	if c, _ := r.Next(withAnswer, nil); c.Member.Model.Name() != big.Name() || c.Skipped[0].Why != route.SkipNoAnswer {
		t.Errorf("with an answer schema: %+v", c)
	}
	if c, _ := r.Next(hello(), nil); c.Member.Model.Name() != small.Name() || len(c.Skipped) != 0 {
		t.Errorf("plain: %+v, want %s", c, small.Name())
	}

	only, err := route.New(route.Config{Name: "small", Members: []route.Member{{Model: small, NoTools: true}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := only.Next(withTools, nil); !errors.Is(err, route.ErrNoModel) {
		t.Errorf("no able member: %v, want ErrNoModel", err)
	}
}

// TestNextRecovered: an attempt that brought no answer is made again at
// the same model, whatever its breaker says.
func TestNextRecovered(t *testing.T) {
	t.Parallel()
	s := modeltest.NewServer(t)
	m1, m2 := openaiProvider.newFor(t, s), anthropicProvider.newFor(t, s)
	r := newRoute(t, newClock(), route.Member{Model: m1}, route.Member{Model: m2})
	r.Report(m2.Name(), &model.Error{Kind: model.KindOverloaded})
	c, err := r.Next(hello(), []route.Try{{Model: m1.Name(), Kind: model.KindOverloaded}, {Model: m2.Name()}})
	if err != nil || c.Member.Model.Name() != m2.Name() || c.Why != route.WhyRecovered {
		t.Errorf("after an interrupted attempt: %+v, %v; want %s recovered", c, err, m2.Name())
	}
	// A failure that does not move on stays at its model.
	c, _ = r.Next(hello(), []route.Try{{Model: m1.Name(), Kind: model.KindUnauthorized}})
	if c.Member.Model.Name() != m1.Name() || c.Why != route.WhyRetry {
		t.Errorf("after unauthorized: %+v", c)
	}
}

// TestNewProblems: every problem of a config is reported at once.
func TestNewProblems(t *testing.T) {
	t.Parallel()
	s := modeltest.NewServer(t)
	m := openaiProvider.newFor(t, s)
	_, err := route.New(route.Config{Members: []route.Member{
		{Model: m, MoveOn: []model.Kind{model.KindUnauthorized}, Attempts: -1},
		{Model: m, Timeout: -time.Second},
		{},
	}})
	if err == nil {
		t.Fatal("New accepted a bad config")
	}
	for _, want := range []string{"Name is required", "Members[0].MoveOn", "Members[0].Attempts", "Members[1].Model: openai/gpt-4o-mini is already Members[0]", "Members[1].Timeout", "Members[2].Model is nil"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if _, err := route.New(route.Config{Name: "x"}); err == nil || !strings.Contains(err.Error(), "Members is empty") {
		t.Errorf("empty route: %v", err)
	}
	r, err := route.New(route.Config{Name: "x", Members: []route.Member{{Model: m}}})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Members()[0]; got.Attempts != 1 || !slices.Equal(got.MoveOn, route.DefaultMoveOn) || r.Name() != "route/x" {
		t.Errorf("defaults: %+v, name %s", got, r.Name())
	}
}
