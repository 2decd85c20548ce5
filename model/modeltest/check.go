package modeltest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/model"
)

// FixtureExchange is an exchange that answers with the file at path.
func FixtureExchange(t testing.TB, path string) Exchange {
	t.Helper()
	return Exchange{Body: Fixture(t, path)}
}

// ThroughEvent returns body up to the end of the server-sent event that
// holds marker.
func ThroughEvent(t testing.TB, body, marker string) string {
	t.Helper()
	i := Cut(t, body, marker)
	return body[:i+strings.Index(body[i:], "\n\n")+2]
}

// Run drains one Generate call: the text deltas in order and the reply.
func Run(ctx context.Context, m model.Model, req *model.Request) (deltas []string, reply *model.Reply, err error) {
	reply, err = model.Collect(m.Generate(ctx, req), func(d string) { deltas = append(deltas, d) })
	return deltas, reply, err
}

// Hello is the smallest request: brief instructions and one user message.
func Hello() *model.Request {
	return &model.Request{Instructions: "Be brief.", Messages: []model.Message{{Role: model.RoleUser, Text: "Say hello."}}}
}

// AsError returns err as a *model.Error, or fails the test.
func AsError(t testing.TB, err error) *model.Error {
	t.Helper()
	var me *model.Error
	if !errors.As(err, &me) {
		t.Fatalf("error %v (%T) is not a *model.Error", err, err)
	}
	return me
}

// CheckRequests checks that srv saw exactly n attempts, each a POST to
// path asking for a stream and carrying key as a bearer token; check (if
// not nil) looks at each request's provider-specific headers. It returns
// the request bodies.
func CheckRequests(t testing.TB, srv *Server, path, key string, n int, check func(i int, r Request)) []map[string]any {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) != n {
		t.Fatalf("server saw %d requests, want %d (one HTTP attempt per call)", len(reqs), n)
	}
	var bodies []map[string]any
	for i, r := range reqs {
		if r.Method != http.MethodPost || r.Path != path {
			t.Errorf("request %d: %s %s, want POST %s", i, r.Method, r.Path, path)
		}
		if got := r.Header.Get("Authorization"); got != "Bearer "+key {
			t.Errorf("request %d: Authorization %q", i, got)
		}
		if check != nil {
			check(i, r)
		}
		var body map[string]any
		if err := json.Unmarshal(r.Body, &body); err != nil {
			t.Fatalf("request %d: body is not JSON: %v", i, err)
		}
		if body["stream"] != true {
			t.Errorf("request %d: stream = %v", i, body["stream"])
		}
		bodies = append(bodies, body)
	}
	return bodies
}

// CancelMidStream runs Generate and cancels its context when the delta
// arrives; it returns the error the stream ended with, or fails the test
// if Generate has not returned 30 seconds later.
func CancelMidStream(t testing.TB, m model.Model, req *model.Request, delta string) error {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		var last error
		for c, err := range m.Generate(ctx, req) {
			if err != nil {
				last = err
				break
			}
			if c.Delta == delta {
				cancel()
			}
		}
		done <- last
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("Generate did not return after cancellation")
		return nil
	}
}
