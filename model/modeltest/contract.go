package modeltest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/model"
)

// Provider is a provider's model as the contract every provider keeps
// (Contract) drives it: over a loopback Server answering in the
// provider's real wire format, from its recorded fixtures.
type Provider struct {
	// Name is the provider as a model.Error names it.
	Name string
	// Key is the API key the model sends; no error may hold it.
	Key string
	// New returns the model over a new Server answering exchanges in
	// order.
	New func(t *testing.T, exchanges ...Exchange) (model.Model, *Server)
	// Closed returns the model pointed at a port nothing listens on.
	Closed func() (model.Model, error)
	// Keyless returns the model, given no key, over srv; it reports
	// KeylessName and sends its requests to Path, with no key at all
	// although Ambient (pairs of name and value) sets the environment
	// variables the provider's SDK would read a key or base URL from.
	Keyless     func(srv *Server) (model.Model, error)
	KeylessName string
	Path        string
	Ambient     []string
	// CheckRequests checks that srv saw exactly n attempts, as the
	// provider sends them.
	CheckRequests func(t *testing.T, srv *Server, n int)
	// Fixtures is the path prefix of the recorded streams: Fixtures +
	// "text.sse" answers "Hello there!" in deltas starting with "Hello";
	// Fixtures + "no_usage.sse" answers NoUsageText without usage.
	Fixtures    string
	NoUsageText string
	// CutAt marks where the text stream's connection drops, after its
	// first delta; ShortThrough marks the last event of a stream that ends
	// cleanly before the provider said it was done.
	CutAt, ShortThrough string
	// Retryable are the provider's answers that a later attempt may get
	// past; Permanent those it will not.
	Retryable []RetryCase
	Permanent []PermanentCase
	// Invalid are requests refused before anything is sent.
	Invalid []*model.Request
}

// RetryCase is a refusal worth another attempt.
type RetryCase struct {
	Name string
	Fail Exchange
	Kind model.Kind
	// After is the wait the refusal asks for; Slack how much later the
	// wait may be (a date is read against the clock).
	After, Slack time.Duration
}

// PermanentCase is a refusal no retry gets past: its kind, and a piece of
// the provider's message the error keeps.
type PermanentCase struct {
	Name   string
	Status int
	Body   string
	Kind   model.Kind
	Msg    string
}

// Contract runs the tests every provider passes: no key taken from the
// environment, errors classified with their wait and the provider's
// message, one HTTP attempt per call, a cut or short stream, a reply
// without usage, a cancel mid-stream, a server that is not there and
// requests refused before sending. The test calling it must not be
// parallel: it sets environment variables.
func Contract(t *testing.T, p Provider) {
	t.Run("NoAmbientKey", func(t *testing.T) {
		for i := 0; i+1 < len(p.Ambient); i += 2 {
			t.Setenv(p.Ambient[i], p.Ambient[i+1])
		}
		srv := NewServer(t, FixtureExchange(t, p.Fixtures+"text.sse"))
		m, err := p.Keyless(srv)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := Run(t.Context(), m, Hello()); err != nil {
			t.Fatal(err)
		}
		r := srv.Requests()[0]
		if r.Path != p.Path || r.Header.Get("X-Api-Key") != "" || r.Header.Get("Authorization") != "" {
			t.Errorf("path %s, x-api-key %q, authorization %q", r.Path, r.Header.Get("X-Api-Key"), r.Header.Get("Authorization"))
		}
		if m.Name() != p.KeylessName {
			t.Errorf("name %q", m.Name())
		}
	})
	t.Run("RetryableThenSuccess", func(t *testing.T) {
		t.Parallel()
		for _, tc := range p.Retryable {
			t.Run(tc.Name, func(t *testing.T) {
				t.Parallel()
				m, srv := p.New(t, tc.Fail, FixtureExchange(t, p.Fixtures+"text.sse"))
				_, _, err := Run(t.Context(), m, Hello())
				me := AsError(t, err)
				if me.Kind != tc.Kind || !me.Kind.Retryable() || me.Status != tc.Fail.Status || me.Message == "" || me.Provider != p.Name {
					t.Errorf("error %+v", me)
				}
				if me.RetryAfter < tc.After || me.RetryAfter > tc.After+tc.Slack {
					t.Errorf("retry after %v, want %v (+%v)", me.RetryAfter, tc.After, tc.Slack)
				}
				// The engine tries again; the second attempt succeeds.
				_, reply, err := Run(t.Context(), m, Hello())
				if err != nil || reply.Text != "Hello there!" {
					t.Fatalf("second call: %v %+v", err, reply)
				}
				p.CheckRequests(t, srv, 2)
			})
		}
	})
	t.Run("PermanentErrors", func(t *testing.T) {
		t.Parallel()
		for _, tc := range p.Permanent {
			t.Run(tc.Name, func(t *testing.T) {
				t.Parallel()
				m, srv := p.New(t, Exchange{Status: tc.Status, Body: tc.Body})
				_, _, err := Run(t.Context(), m, Hello())
				me := AsError(t, err)
				if me.Kind != tc.Kind || me.Kind.Retryable() || me.Status != tc.Status || !strings.Contains(me.Message, tc.Msg) {
					t.Errorf("error %+v", me)
				}
				p.CheckRequests(t, srv, 1)
			})
		}
	})
	t.Run("StreamCut", func(t *testing.T) {
		t.Parallel()
		body := Fixture(t, p.Fixtures+"text.sse")
		cut := Exchange{Body: body, CutAfter: Cut(t, body, p.CutAt)}
		short := Exchange{Body: ThroughEvent(t, body, p.ShortThrough)}
		m, srv := p.New(t, cut, short)
		for _, name := range []string{"dropped", "short"} {
			deltas, _, err := Run(t.Context(), m, Hello())
			me := AsError(t, err)
			if me.Kind != model.KindUnreachable || !me.Kind.Retryable() {
				t.Errorf("%s: error %+v", name, me)
			}
			if len(deltas) == 0 || deltas[0] != "Hello" {
				t.Errorf("%s: deltas before the cut %q", name, deltas)
			}
		}
		p.CheckRequests(t, srv, 2)
	})
	t.Run("NoUsage", func(t *testing.T) {
		t.Parallel()
		m, _ := p.New(t, FixtureExchange(t, p.Fixtures+"no_usage.sse"))
		_, reply, err := Run(t.Context(), m, Hello())
		if err != nil {
			t.Fatal(err)
		}
		if reply.Usage != nil || reply.Text != p.NoUsageText {
			t.Errorf("reply %+v usage %+v", reply, reply.Usage)
		}
	})
	t.Run("CancelMidStream", func(t *testing.T) {
		t.Parallel()
		body := Fixture(t, p.Fixtures+"text.sse")
		// The server sends the first delta and then stalls, as a slow model would.
		m, _ := p.New(t, Exchange{Body: ThroughEvent(t, body, `"Hello"`), Hold: true})
		err := CancelMidStream(t, m, Hello(), "Hello")
		if me := AsError(t, err); me.Kind != model.KindCancelled || !errors.Is(err, context.Canceled) {
			t.Errorf("error %+v", me)
		}
	})
	t.Run("Unreachable", func(t *testing.T) {
		t.Parallel()
		m, err := p.Closed()
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = Run(t.Context(), m, Hello())
		if me := AsError(t, err); me.Kind != model.KindUnreachable || strings.Contains(me.Error(), p.Key) {
			t.Errorf("error %+v", me)
		}
	})
	t.Run("BadRequests", func(t *testing.T) {
		t.Parallel()
		m, srv := p.New(t)
		for _, req := range p.Invalid {
			_, _, err := Run(t.Context(), m, req)
			if me := AsError(t, err); me.Kind != model.KindInvalidRequest {
				t.Errorf("request %+v: error %+v", req, me)
			}
		}
		if n := len(srv.Requests()); n != 0 {
			t.Errorf("%d requests sent for invalid input", n)
		}
	})
}

// NoKey fails the test if err, or any error it wraps, holds key in any of
// its printed forms.
func NoKey(t testing.TB, err error, key string) {
	t.Helper()
	for e := err; e != nil; e = errors.Unwrap(e) {
		for _, s := range []string{e.Error(), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e)} {
			if strings.Contains(s, key) {
				t.Fatalf("key leaked: %s", s)
			}
		}
	}
}
