package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/server"
)

// newSessionServer is newServer with an admin token, which sessions need
// to send: a real runtime, SQLite store, API and console in process.
func newSessionServer(t *testing.T) (http.Handler, *hitch.Runtime) {
	t.Helper()
	return quickServer(t, true,
		server.Token{Name: "admin", Tenant: "default", Role: api.RoleAdmin, Hash: server.HashToken(tokAdmin)},
		server.Token{Name: "viewer", Tenant: "default", Role: api.RoleViewer, Hash: server.HashToken(tokB)})
}

var keyInput = regexp.MustCompile(`name="key" value="([^"]+)"`)

// TestConsoleSessionForms checks the session forms without a browser: a
// form posted twice sends once; a refused send or edit keeps its text; a
// viewer's send is refused with the API's reason.
func TestConsoleSessionForms(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) })
	h, rt := newSessionServer(t)
	b := &browserless{t: t, h: h, jar: map[string]*http.Cookie{}}
	b.signIn(tokAdmin)
	_, page := b.do("GET", "/sessions", nil)
	if !strings.Contains(page, "No sessions yet") {
		t.Fatalf("sessions page of a fresh install:\n%s", page)
	}
	csrf := csrfInput.FindStringSubmatch(page)[1]
	res, _ := b.do("POST", "/sessions", url.Values{"csrf": {csrf}, "agent": {"quick"}, "id": {"s1"}})
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(res.Header.Get("Location"), "/sessions/s1?") {
		t.Fatalf("create: %d to %q", res.StatusCode, res.Header.Get("Location"))
	}
	res, page = b.do("POST", "/sessions", url.Values{"csrf": {csrf}, "agent": {"nobody"}, "id": {"s2"}})
	if res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(page, "is not an agent") || !strings.Contains(page, `value="s2"`) {
		t.Fatalf("create with an unknown agent: %d\n%s", res.StatusCode, page)
	}

	_, page = b.do("GET", "/sessions/s1", nil)
	if !strings.Contains(page, `cost so far <span class="session-cost">`) {
		t.Fatalf("session page does not say what the session has cost:\n%s", page)
	}
	key := keyInput.FindStringSubmatch(page)
	if key == nil {
		t.Fatalf("session page has no key field:\n%s", page)
	}
	form := url.Values{"csrf": {csrf}, "key": {key[1]}, "text": {"hello"}, "mode": {"queue"}}
	first, _ := b.do("POST", "/sessions/s1/send", form)
	again, _ := b.do("POST", "/sessions/s1/send", form)
	if first.StatusCode != http.StatusSeeOther || again.StatusCode != http.StatusSeeOther || !strings.Contains(again.Header.Get("Location"), "sent+already") {
		t.Fatalf("a form posted twice: %d %q, then %d %q", first.StatusCode, first.Header.Get("Location"), again.StatusCode, again.Header.Get("Location"))
	}
	es, err := rt.Sessions().Journal(context.Background(), "s1", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	admitted := 0
	for _, e := range es {
		if e.Kind == "message.admitted" {
			admitted++
		}
	}
	if admitted != 1 {
		t.Fatalf("a form posted twice admitted %d messages", admitted)
	}
	// Older entries come as a fragment of the page's own entries.
	res, page = b.do("GET", fmt.Sprintf("/sessions/s1/older?before=%d", es[len(es)-1].Pos+1), nil)
	if res.StatusCode != http.StatusOK || res.Header.Get("X-First") != "1" || !strings.Contains(page, "hello") {
		t.Fatalf("older session entries: %d %q\n%s", res.StatusCode, res.Header.Get("X-First"), page)
	}
	if res, page = b.do("GET", "/sessions/s1/older?before=x", nil); res.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(page, "want a session journal position") {
		t.Fatalf("older session entries before x: %d\n%s", res.StatusCode, page)
	}

	for _, tc := range []struct {
		path      string
		form      url.Values
		status    int
		msg, kept string
	}{
		{"/sessions/s1/send", url.Values{"text": {"  "}}, http.StatusUnprocessableEntity, "blank", ""},
		{"/sessions/s1/send", url.Values{"text": {"keep me"}, "mode": {"shout"}}, http.StatusUnprocessableEntity, `mode &#34;shout&#34;`, "keep me"},
		{"/sessions/s1/queue/msg_nope/edit", url.Values{"text": {"my edit"}}, http.StatusNotFound, "no longer waits", "my edit"},
		{"/sessions/nope/send", url.Values{"text": {"lost?"}}, http.StatusNotFound, "session not found", ""},
	} {
		tc.form.Set("csrf", csrf)
		res, page := b.do("POST", tc.path, tc.form)
		if res.StatusCode != tc.status || !strings.Contains(page, tc.msg) {
			t.Fatalf("POST %s %v: %d, want %d and %q:\n%s", tc.path, tc.form, res.StatusCode, tc.status, tc.msg, page)
		}
		if tc.kept != "" && !strings.Contains(page, `name="text" rows="3">`+tc.kept+`</textarea>`) {
			t.Fatalf("POST %s: the text %q is not kept in the composer:\n%s", tc.path, tc.kept, page)
		}
	}

	// A viewer may read the session, not send to it: the page offers no
	// composer, and a send posted anyway is refused with the API's reason.
	v := &browserless{t: t, h: h, jar: map[string]*http.Cookie{}}
	v.signIn(tokB)
	_, page = v.do("GET", "/sessions/s1", nil)
	if !strings.Contains(page, "hello") || strings.Contains(page, `id="msg"`) || strings.Contains(page, `/interrupt"`) {
		t.Fatalf("viewer's session page (want the transcript, no composer, no interrupt):\n%s", page)
	}
	vcsrf := csrfInput.FindStringSubmatch(page)[1]
	res, page = v.do("POST", "/sessions/s1/send", url.Values{"csrf": {vcsrf}, "text": {"let me in"}})
	if res.StatusCode != http.StatusForbidden || !strings.Contains(page, "needs admin") {
		t.Fatalf("viewer's send: %d\n%s", res.StatusCode, page)
	}
}
