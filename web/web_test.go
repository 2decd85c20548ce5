package web_test

import (
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/internal/hitchtest"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/server"
)

// quickServer is a real server (runtime, SQLite store, API and console)
// in process, without a browser, for one agent, quick, that answers "done"
// (each time, with repeat), and the given tokens.
func quickServer(t *testing.T, repeat bool, tokens ...server.Token) (*server.Server, *hitch.Runtime) {
	t.Helper()
	agent, err := hitch.Build(hitch.Spec{
		Name:   "quick",
		Model:  scripted.New("quick", scripted.Script{Turns: []scripted.Turn{{Text: "done"}}, Repeat: repeat}),
		Policy: policy.Rules{{Tools: []string{"*"}, Verdict: policy.Allow}},
	})
	if err != nil {
		t.Fatal(err)
	}
	rt, st := hitchtest.New(t, hitch.Config{Agents: []*hitch.Agent{agent}})
	srv, err := server.New(server.Config{Runtime: rt, Store: st, Agents: []*hitch.Agent{agent}, Tokens: tokens})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return srv, rt
}

// newServer is a quick server for an operator, for the console's cookie
// and form checks.
func newServer(t *testing.T) http.Handler {
	t.Helper()
	srv, _ := quickServer(t, false, server.Token{Name: "op", Tenant: "default", Role: api.RoleOperator, Hash: server.HashToken(tokAdmin)})
	return srv
}

var csrfInput = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

type browserless struct {
	t    *testing.T
	h    http.Handler
	tls  bool
	jar  map[string]*http.Cookie
	last *http.Response
}

func (b *browserless) do(method, path string, form url.Values) (*http.Response, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req := httptest.NewRequest(method, path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if b.tls {
		req.TLS = &tls.ConnectionState{}
	}
	for _, c := range b.jar {
		req.AddCookie(c)
	}
	rec := httptest.NewRecorder()
	b.h.ServeHTTP(rec, req)
	res := rec.Result()
	for _, c := range res.Cookies() {
		if c.MaxAge < 0 {
			delete(b.jar, c.Name)
		} else {
			b.jar[c.Name] = c
		}
	}
	b.last = res
	return res, rec.Body.String()
}

func (b *browserless) signIn(token string) *http.Response {
	b.t.Helper()
	_, page := b.do("GET", "/signin", nil)
	m := csrfInput.FindStringSubmatch(page)
	if m == nil {
		b.t.Fatalf("sign-in page has no csrf field:\n%s", page)
	}
	res, _ := b.do("POST", "/signin", url.Values{"csrf": {m[1]}, "token": {token}})
	return res
}

func cookie(res *http.Response, name string) *http.Cookie {
	for _, c := range res.Cookies() {
		if c.Name == name {
			return c
		}
	}
	return nil
}

func TestConsoleCookieFlags(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) }) // runs after the server's cleanup
	h := newServer(t)
	for _, overTLS := range []bool{false, true} {
		b := &browserless{t: t, h: h, tls: overTLS, jar: map[string]*http.Cookie{}}
		res := b.signIn(tokAdmin)
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/runs" {
			t.Fatalf("sign in: %d to %q", res.StatusCode, res.Header.Get("Location"))
		}
		c := cookie(res, "hitch_session")
		if c == nil {
			t.Fatal("sign in set no session cookie")
		}
		if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure != overTLS || c.Path != "/" || c.MaxAge <= 0 {
			t.Fatalf("over TLS %v: session cookie %+v: want HttpOnly, SameSite=Strict, Secure only over TLS, Path /, a Max-Age", overTLS, c)
		}
		if res, page := b.do("GET", "/runs", nil); res.StatusCode != http.StatusOK || !strings.Contains(page, "No runs yet") {
			t.Fatalf("runs after sign-in: %d\n%s", res.StatusCode, page)
		}
		if csp := b.last.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
			t.Fatalf("Content-Security-Policy %q", csp)
		}
	}
}

func TestConsoleWrongTokenRefused(t *testing.T) {
	b := &browserless{t: t, h: newServer(t), jar: map[string]*http.Cookie{}}
	res := b.signIn("not-a-token")
	if res.StatusCode != http.StatusUnauthorized || cookie(res, "hitch_session") != nil {
		t.Fatalf("a wrong token: %d, cookies %v", res.StatusCode, res.Cookies())
	}
	if res, _ := b.do("GET", "/runs", nil); res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/signin") {
		t.Fatalf("runs without a sign-in: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	// The API itself still wants its bearer token: the console's cookie
	// opens no /v1 route.
	b2 := &browserless{t: t, h: b.h, jar: map[string]*http.Cookie{}}
	b2.signIn(tokAdmin)
	if res, _ := b2.do("GET", "/v1/runs", nil); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/v1/runs with the console's cookie and no bearer token: %d", res.StatusCode)
	}
}

func TestConsoleCSRF(t *testing.T) {
	h := newServer(t)
	b := &browserless{t: t, h: h, jar: map[string]*http.Cookie{}}
	b.signIn(tokAdmin)
	_, page := b.do("GET", "/runs", nil)
	m := csrfInput.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("runs page has no csrf field:\n%s", page)
	}
	good := m[1]

	// Every POST without the session's token is refused, and changes
	// nothing: the session survives a forged sign-out.
	for _, tc := range []struct{ name, csrf string }{{"missing", ""}, {"wrong", "AAAA" + good[4:]}, {"of the sign-in form", ""}} {
		form := url.Values{}
		if tc.csrf != "" {
			form.Set("csrf", tc.csrf)
		}
		for _, path := range []string{"/signout", "/runs/r1/cancel", "/runs/r1/reconcile", "/runs/r1/workspace", "/runs/r1/approvals/c1",
			"/sessions", "/sessions/s1/send", "/sessions/s1/interrupt", "/sessions/s1/queue/m1/edit", "/sessions/s1/queue/m1/remove"} {
			res, body := b.do("POST", path, form)
			if res.StatusCode != http.StatusForbidden || !strings.Contains(body, "anti-forgery") {
				t.Fatalf("POST %s with a %s csrf token: %d\n%s", path, tc.name, res.StatusCode, body)
			}
		}
	}
	if res, _ := b.do("GET", "/runs", nil); res.StatusCode != http.StatusOK {
		t.Fatalf("session lost after forged posts: %d", res.StatusCode)
	}

	// Another session's token does not fit this one.
	other := &browserless{t: t, h: h, jar: map[string]*http.Cookie{}}
	other.signIn(tokAdmin)
	other.jar["hitch_session"].Value += "x" // a different cookie value: another session
	if res, _ := other.do("POST", "/signout", url.Values{"csrf": {good}}); res.StatusCode != http.StatusForbidden {
		t.Fatalf("a token of another session: %d", res.StatusCode)
	}

	// A sign-in form posted without its pre-session cookie is refused.
	fresh := &browserless{t: t, h: h, jar: map[string]*http.Cookie{}}
	if res, _ := fresh.do("POST", "/signin", url.Values{"csrf": {good}, "token": {tokAdmin}}); res.StatusCode != http.StatusForbidden || cookie(res, "hitch_session") != nil {
		t.Fatalf("a forged sign-in: %d", res.StatusCode)
	}

	// With the right token the post goes through to the API.
	if res, _ := b.do("POST", "/runs/nope/cancel", url.Values{"csrf": {good}}); res.StatusCode != http.StatusSeeOther ||
		!strings.Contains(res.Header.Get("Location"), "error=cancel") {
		t.Fatalf("cancel of an unknown run: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	if res, _ := b.do("POST", "/signout", url.Values{"csrf": {good}}); res.StatusCode != http.StatusSeeOther || b.jar["hitch_session"] != nil {
		t.Fatalf("sign out: %d, cookie %v", res.StatusCode, b.jar["hitch_session"])
	}
}

// TestConsoleSignInSaysWhy: a sign-in that expired, a cookie that cannot
// be read and a token the server no longer accepts each go back to the
// sign-in page, which says which it was.
func TestConsoleSignInSaysWhy(t *testing.T) {
	h := newServer(t)
	b64 := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, tc := range []struct {
		name, cookie, why, says string
	}{
		{"expired", fmt.Sprintf("t.%d.%s", time.Now().Add(-13*time.Hour).Unix(), b64(tokAdmin)), "expired", "Your sign-in expired"},
		{"unreadable", "t.not-a-sign-in", "unreadable", "could not be read"},
		{"refused", fmt.Sprintf("t.%d.%s", time.Now().Unix(), b64("a-token-nobody-issued")), "refused", "no longer accepts the token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &browserless{t: t, h: h, jar: map[string]*http.Cookie{"hitch_session": {Name: "hitch_session", Value: tc.cookie}}}
			res, _ := b.do("GET", "/runs?status=waiting", nil)
			loc, _ := url.Parse(res.Header.Get("Location"))
			if res.StatusCode != http.StatusSeeOther || loc.Path != "/signin" || loc.Query().Get("why") != tc.why || loc.Query().Get("next") != "/runs?status=waiting" {
				t.Fatalf("GET /runs: %d to %q, want the sign-in with why=%s and the page to return to", res.StatusCode, loc, tc.why)
			}
			if b.jar["hitch_session"] != nil {
				t.Fatal("the unusable cookie was kept")
			}
			_, page := b.do("GET", loc.String(), nil)
			if !strings.Contains(page, tc.says) {
				t.Fatalf("the sign-in page does not say %q:\n%s", tc.says, page)
			}
			// A form posted with such a cookie says the same, with no redirect.
			b.jar["hitch_session"] = &http.Cookie{Name: "hitch_session", Value: tc.cookie}
			if res, page := b.do("POST", "/runs/x/cancel", url.Values{"csrf": {"x"}}); res.StatusCode != http.StatusUnauthorized || !strings.Contains(page, tc.says) {
				t.Fatalf("POST with a %s sign-in: %d\n%s", tc.name, res.StatusCode, page)
			}
		})
	}
}

// TestConsoleStartIdempotent: the start form carries a run id drawn with
// the page, so the same form sent twice starts one run and says so; a
// refused start keeps what was typed.
func TestConsoleStartIdempotent(t *testing.T) {
	// An operator may not start runs: its agent page offers no form.
	op := &browserless{t: t, h: newServer(t), jar: map[string]*http.Cookie{}}
	op.signIn(tokAdmin)
	if _, page := op.do("GET", "/agents/quick", nil); strings.Contains(page, "/start") || strings.Contains(page, "/chat") {
		t.Fatalf("an operator's agent page offers a start:\n%s", page)
	}
	h, _ := newSessionServer(t)
	b := &browserless{t: t, h: h, jar: map[string]*http.Cookie{}}
	b.signIn(tokAdmin)
	_, page := b.do("GET", "/agents/quick", nil)
	csrf := csrfInput.FindStringSubmatch(page)
	id := regexp.MustCompile(`name="id" value="([^"]+)"`).FindStringSubmatch(page)
	if csrf == nil || id == nil {
		t.Fatalf("the agent page has no start form:\n%s", page)
	}
	form := url.Values{"csrf": {csrf[1]}, "id": {id[1]}, "input": {"do it"}, "metadata": {"ticket=1\nwho = me"}}
	for i, want := range []string{"notice=run+started", "started+already"} {
		res, _ := b.do("POST", "/agents/quick/start", form)
		if loc := res.Header.Get("Location"); res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/runs/"+id[1]+"?") || !strings.Contains(loc, want) {
			t.Fatalf("start %d: %d to %q, want the run's page saying %q", i+1, res.StatusCode, loc, want)
		}
	}
	form.Set("metadata", "no equals sign")
	if res, page := b.do("POST", "/agents/quick/start", form); res.StatusCode != http.StatusUnprocessableEntity ||
		!strings.Contains(page, "metadata line 1") || !strings.Contains(page, ">do it</textarea>") {
		t.Fatalf("bad metadata: %d\n%s", res.StatusCode, page)
	}
}
