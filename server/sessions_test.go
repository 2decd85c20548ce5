package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/api"
)

func createSession(t *testing.T, c *client, agent, id string) api.Session {
	t.Helper()
	var out api.CreatedSession
	c.do("POST", "/v1/sessions", api.CreateSession{Agent: agent, ID: id}).want(t, http.StatusCreated, "").decode(t, &out)
	if !out.Created || out.Session.ID == "" {
		t.Fatalf("create: %+v", out)
	}
	return out.Session
}

func sendMsg(t *testing.T, c *client, id, text, mode, key string) (api.Sent, int) {
	t.Helper()
	var hdr []string
	if key != "" {
		hdr = []string{"Idempotency-Key", key}
	}
	a := c.do("POST", "/v1/sessions/"+id+"/messages", api.Send{Text: text, Mode: mode}, hdr...)
	if a.status != 201 && a.status != 200 {
		t.Fatalf("send: %d %s", a.status, a.body)
	}
	var out api.Sent
	a.decode(t, &out)
	return out, a.status
}

// transcript reads a session's whole journal through the API, page by
// page.
func transcript(t *testing.T, c *client, id string) []api.SessionEntry {
	t.Helper()
	return allPages(t, c, "/v1/sessions/"+id+"/transcript?after=%d&limit=3",
		func(p api.SessionEntryPage) ([]api.SessionEntry, *int64) { return p.Entries, p.Next })
}

// followSession reads a session's stream from after until until says
// stop, cutting the connection every cut events and resuming with
// Last-Event-ID; it returns every entry received.
func followSession(t *testing.T, c *client, id string, after int64, cut int, until func([]api.SessionEntry) bool) []api.SessionEntry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var got []api.SessionEntry
	last := ""
	if after > 0 {
		last = strconv.FormatInt(after, 10)
	}
	for ctx.Err() == nil {
		sctx, scancel := context.WithCancel(ctx)
		resp, err := c.openStream(sctx, "/v1/sessions/"+id+"/events", last)
		if err != nil {
			scancel()
			t.Fatal(err)
		}
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			scancel()
			t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		n, done := 0, false
		_ = readEvents(resp.Body, func(ev event) bool {
			if ev.kind != api.EventEntry {
				t.Errorf("event %q: %s", ev.kind, ev.data)
				return false
			}
			var e api.SessionEntry
			if err := json.Unmarshal(ev.data, &e); err != nil {
				t.Fatalf("event data: %v", err)
			}
			if ev.id != strconv.FormatInt(e.Pos, 10) {
				t.Errorf("event id %s for position %d", ev.id, e.Pos)
			}
			got, last, n = append(got, e), ev.id, n+1
			if until(got) {
				done = true
				return false
			}
			return cut == 0 || n < cut
		})
		scancel()
		resp.Body.Close()
		if done {
			return got
		}
	}
	t.Fatalf("session %s: the stream did not reach its end in time (%d entries)", id, len(got))
	return nil
}

func ended(n int) func([]api.SessionEntry) bool {
	return func(es []api.SessionEntry) bool {
		c := 0
		for _, e := range es {
			if e.Kind == "submission.ended" {
				c++
			}
		}
		return c >= n
	}
}

func TestSessionRoutes(t *testing.T) {
	e := newEnv(t)

	// Create is idempotent by id; without an id the server names it.
	s := createSession(t, e.admin, "quick", "chat1")
	var again api.CreatedSession
	e.admin.do("POST", "/v1/sessions", api.CreateSession{Agent: "quick", ID: "chat1"}).want(t, 200, "").decode(t, &again)
	if again.Created || again.Session.ID != s.ID || again.Session.CreatedAt != s.CreatedAt {
		t.Fatalf("repeated create: %+v", again)
	}
	e.admin.do("POST", "/v1/sessions", api.CreateSession{Agent: "slow", ID: "chat1"}).want(t, 409, api.TypeConflict)
	anon := createSession(t, e.admin, "quick", "")
	if !strings.HasPrefix(anon.ID, "ses_") || anon.Tenant != "default" || anon.Agent != "quick" {
		t.Fatalf("session without an id: %+v", anon)
	}
	a := e.admin.do("POST", "/v1/sessions", api.CreateSession{Agent: "nobody"}).want(t, 422, api.TypeInvalid)
	if !strings.Contains(string(a.body), "body.agent") {
		t.Errorf("unknown agent: %s", a.body)
	}
	a = e.admin.do("POST", "/v1/sessions", map[string]any{"agent": "quick", "id": "bad id"}).want(t, 422, api.TypeInvalid)
	if !strings.Contains(string(a.body), "body.id") {
		t.Errorf("bad id: %s", a.body)
	}
	e.view.do("POST", "/v1/sessions", api.CreateSession{Agent: "quick"}).want(t, 403, api.TypeForbidden)

	// Send, durable on the answer; the same key again admits nothing.
	sent, status := sendMsg(t, e.admin, "chat1", "hello", "", "k1")
	if status != 201 || sent.Duplicate || sent.Mode != "queue" || sent.MessageID == "" {
		t.Fatalf("send: %d %+v", status, sent)
	}
	dup, status := sendMsg(t, e.admin, "chat1", "hello", "", "k1")
	if status != 200 || !dup.Duplicate || dup.MessageID != sent.MessageID || dup.Position != sent.Position {
		t.Fatalf("retried send: %d %+v, first %+v", status, dup, sent)
	}
	a = e.admin.do("POST", "/v1/sessions/chat1/messages", map[string]any{"text": "x", "mode": "shout"}).want(t, 422, api.TypeInvalid)
	if !strings.Contains(string(a.body), "body.mode") {
		t.Errorf("bad mode: %s", a.body)
	}
	a = e.admin.do("POST", "/v1/sessions/chat1/messages", map[string]any{"text": "  "}).want(t, 422, api.TypeInvalid)
	if !strings.Contains(string(a.body), "body.text") {
		t.Errorf("blank text: %s", a.body)
	}
	e.admin.do("POST", "/v1/sessions/nope/messages", api.Send{Text: "x"}).want(t, 404, api.TypeNotFound)
	e.view.do("POST", "/v1/sessions/chat1/messages", api.Send{Text: "x"}).want(t, 403, api.TypeForbidden)
	sendMsg(t, e.admin, "chat1", "again", "", "")

	// The stream, cut after every 2 events and resumed, equals the
	// transcript read by pages.
	got := followSession(t, e.view, "chat1", 0, 2, ended(2))
	all := transcript(t, e.view, "chat1")
	if len(got) > len(all) {
		t.Fatalf("stream has %d entries, transcript %d", len(got), len(all))
	}
	for i := range got {
		if g, w := got[i], all[i]; g.Pos != w.Pos || g.Kind != w.Kind || string(g.Data) != string(w.Data) {
			t.Fatalf("entry %d: stream %+v, transcript %+v", i, g, w)
		}
	}
	// ?after resumes past a position.
	tail := followSession(t, e.view, "chat1", 3, 0, func(es []api.SessionEntry) bool { return es[len(es)-1].Pos >= all[len(all)-1].Pos })
	if tail[0].Pos != 4 {
		t.Fatalf("resume after 3 starts at %d", tail[0].Pos)
	}
	e.view.do("GET", "/v1/sessions/chat1/events?after=x", nil).want(t, 422, api.TypeInvalid)

	var st api.SessionStatus
	e.view.do("GET", "/v1/sessions/chat1/status", nil).want(t, 200, "").decode(t, &st)
	if len(st.Submissions) != 2 || st.Submissions[0].Outcome != "completed" || st.Submissions[0].Answer != "quick done" || st.Usage.Generations != 2 {
		t.Fatalf("status: %+v", st)
	}

	// List by id with a cursor.
	var p1, p2 api.SessionPage
	e.view.do("GET", "/v1/sessions?limit=1", nil).want(t, 200, "").decode(t, &p1)
	if len(p1.Sessions) != 1 || p1.Next == "" {
		t.Fatalf("page 1: %+v", p1)
	}
	e.view.do("GET", "/v1/sessions?limit=1&after="+p1.Next, nil).want(t, 200, "").decode(t, &p2)
	if len(p2.Sessions) != 1 || p2.Sessions[0].ID == p1.Sessions[0].ID {
		t.Fatalf("page 2: %+v after %+v", p2, p1)
	}

	// Another tenant sees nothing: 404 for every route, an empty list.
	var pb api.SessionPage
	e.other.do("GET", "/v1/sessions", nil).want(t, 200, "").decode(t, &pb)
	if len(pb.Sessions) != 0 {
		t.Fatalf("tenant b lists %+v", pb)
	}
	for _, r := range []struct{ method, path string }{
		{"GET", "/v1/sessions/chat1"}, {"GET", "/v1/sessions/chat1/status"}, {"GET", "/v1/sessions/chat1/queue"},
		{"GET", "/v1/sessions/chat1/transcript"}, {"GET", "/v1/sessions/chat1/events"},
		{"POST", "/v1/sessions/chat1/messages"}, {"POST", "/v1/sessions/chat1/interrupt"},
		{"POST", "/v1/sessions/chat1/queue/m/edit"}, {"POST", "/v1/sessions/chat1/queue/m/remove"},
	} {
		var body any
		switch {
		case strings.HasSuffix(r.path, "/messages"):
			body = api.Send{Text: "x"}
		case strings.HasSuffix(r.path, "/edit"):
			body = api.Edit{Text: "x"}
		}
		a := e.other.do(r.method, r.path, body).want(t, 404, api.TypeNotFound)
		if strings.Contains(string(a.body), "quick") {
			t.Errorf("%s %s tells tenant b something: %s", r.method, r.path, a.body)
		}
	}
	// An id tenant default uses is as free as any to tenant b: b gets its
	// own session, and default's is untouched.
	var mine api.CreatedSession
	e.other.do("POST", "/v1/sessions", api.CreateSession{Agent: "quick", ID: "chat1"}).want(t, 201, "").decode(t, &mine)
	if !mine.Created || mine.Session.ID != "chat1" || mine.Session.Tenant != "b" || mine.Session.Position != 0 {
		t.Errorf("tenant b creating chat1: %+v", mine)
	}
	var theirs api.Session
	e.view.do("GET", "/v1/sessions/chat1", nil).want(t, 200, "").decode(t, &theirs)
	if theirs.Tenant != "default" || theirs.Position == 0 {
		t.Errorf("tenant default's chat1 after b's create: %+v", theirs)
	}

	// Tenant b's own session: its own, with its submissions' runs.
	b := createSession(t, e.other, "quick", "chatb")
	if b.Tenant != "b" {
		t.Fatalf("tenant b's session: %+v", b)
	}
	sendMsg(t, e.other, "chatb", "hello from b", "", "")
	followSession(t, e.other, "chatb", 0, 0, ended(1))
	var stb api.SessionStatus
	e.other.do("GET", "/v1/sessions/chatb/status", nil).want(t, 200, "").decode(t, &stb)
	if len(stb.Submissions) != 1 {
		t.Fatalf("tenant b's status: %+v", stb)
	}
	var run api.Run
	e.other.do("GET", "/v1/runs/"+stb.Submissions[0].RunID, nil).want(t, 200, "").decode(t, &run)
	if run.Tenant != "b" {
		t.Fatalf("tenant b's submission run: %+v", run)
	}
	e.view.do("GET", "/v1/runs/"+stb.Submissions[0].RunID, nil).want(t, 404, api.TypeNotFound)
	e.view.do("GET", "/v1/sessions/chatb", nil).want(t, 404, api.TypeNotFound)
	e.other.do("GET", "/v1/sessions", nil).want(t, 200, "").decode(t, &pb)
	if len(pb.Sessions) != 2 || pb.Sessions[0].ID != "chat1" || pb.Sessions[1].ID != "chatb" {
		t.Fatalf("tenant b lists %+v", pb)
	}
	var pa api.SessionPage
	e.view.do("GET", "/v1/sessions?limit=1000", nil).want(t, 200, "").decode(t, &pa)
	for _, ses := range pa.Sessions {
		if ses.ID == "chatb" || ses.Tenant != "default" {
			t.Fatalf("tenant default lists %+v", ses)
		}
	}
}

// TestSessionQueue edits, removes and interrupts while a submission waits
// for an approval.
func TestSessionQueue(t *testing.T) {
	e := newEnv(t)
	createSession(t, e.admin, "gate", "q")
	first, _ := sendMsg(t, e.admin, "q", "one", "", "")
	second, _ := sendMsg(t, e.admin, "q", "two", "", "")
	third, _ := sendMsg(t, e.admin, "q", "three", "", "")

	var q api.Queue
	e.view.do("GET", "/v1/sessions/q/queue", nil).want(t, 200, "").decode(t, &q)
	if len(q.Messages) != 2 || q.Messages[0].ID != second.MessageID || q.Messages[1].ID != third.MessageID {
		t.Fatalf("queue: %+v", q)
	}
	e.admin.do("POST", "/v1/sessions/q/queue/"+second.MessageID+"/edit", api.Edit{Text: "two, edited"}).want(t, 200, "").decode(t, &q)
	if len(q.Messages) != 2 || q.Messages[0].Text != "two, edited" {
		t.Fatalf("after the edit: %+v", q)
	}
	e.admin.do("POST", "/v1/sessions/q/queue/"+third.MessageID+"/remove", nil).want(t, 200, "").decode(t, &q)
	if len(q.Messages) != 1 || q.Messages[0].ID != second.MessageID {
		t.Fatalf("after the removal: %+v", q)
	}
	a := e.admin.do("POST", "/v1/sessions/q/queue/"+first.MessageID+"/edit", api.Edit{Text: "late"}).want(t, 409, api.TypeRefused)
	if !strings.Contains(string(a.body), "started") || strings.Contains(string(a.body), first.MessageID) {
		t.Errorf("a refused edit should say the message started, and not repeat its id: %s", a.body)
	}
	e.admin.do("POST", "/v1/sessions/q/queue/"+third.MessageID+"/remove", nil).want(t, 409, api.TypeRefused)
	e.admin.do("POST", "/v1/sessions/q/queue/msg_nope/remove", nil).want(t, 404, api.TypeNotFound)
	e.admin.do("POST", "/v1/sessions/q/queue/"+second.MessageID+"/edit", map[string]any{"text": ""}).want(t, 422, api.TypeInvalid)
	e.view.do("POST", "/v1/sessions/q/queue/"+second.MessageID+"/remove", nil).want(t, 403, api.TypeForbidden)
	e.view.do("POST", "/v1/sessions/q/interrupt", nil).want(t, 403, api.TypeForbidden)

	// Interrupt the waiting submission: it ends aborted, and the edited
	// message runs next (and waits for its approval in turn).
	var ses api.Session
	e.op.do("POST", "/v1/sessions/q/interrupt", nil).want(t, 200, "").decode(t, &ses)
	followSession(t, e.view, "q", 0, 0, func(es []api.SessionEntry) bool {
		for _, en := range es {
			if en.Kind == "submission.started" && strings.Contains(string(en.Data), second.MessageID) {
				return true
			}
		}
		return false
	})
	var st api.SessionStatus
	e.view.do("GET", "/v1/sessions/q/status", nil).want(t, 200, "").decode(t, &st)
	if len(st.Submissions) != 2 {
		t.Fatalf("status: %+v", st)
	}
	if s := st.Submissions[0]; s.MessageID != first.MessageID || s.Outcome != "aborted" {
		t.Errorf("first submission: %+v", s)
	}
	if s := st.Submissions[1]; s.MessageID != second.MessageID || s.Text != "two, edited" {
		t.Errorf("second submission: %+v", s)
	}
	if len(st.Queue) != 0 {
		t.Errorf("queue left: %+v", st.Queue)
	}
	e.op.do("POST", "/v1/sessions/q/interrupt", nil).want(t, 200, "")
	followSession(t, e.view, "q", 0, 0, ended(2))
}

// TestIdempotentSendAfterKill SIGKILLs the server while a send is in
// flight, at several points (before the admission, between its commit
// and the answer, after the answer); the send retried with the same key
// on a restarted server admits one message, worked once.
func TestIdempotentSendAfterKill(t *testing.T) {
	dir := testConfig(t, true)
	p := serve(t, dir)
	c := &client{t: t, url: p.URL, token: tokAdmin}
	createSession(t, c, "quick", "k")
	for i := range 6 {
		key := fmt.Sprintf("key%d", i)
		done := make(chan struct{})
		go func() {
			defer close(done)
			req, _ := http.NewRequest("POST", p.URL+"/v1/sessions/k/messages", strings.NewReader(`{"text":"once"}`))
			req.Header.Set("Authorization", "Bearer "+tokAdmin)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Idempotency-Key", key)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		time.Sleep(time.Duration(i) * 700 * time.Microsecond) // where the kill lands, not a synchronisation
		p.Kill()
		<-done
		p = serve(t, dir)
		c = &client{t: t, url: p.URL, token: tokAdmin}
		sendMsg(t, c, "k", "once", "", key)
		followSession(t, c, "k", 0, 0, ended(i+1))
		admitted := 0
		for _, en := range transcript(t, c, "k") {
			if en.Kind == "message.admitted" {
				admitted++
			}
		}
		if admitted != i+1 {
			t.Fatalf("after %d keyed sends, %d admissions", i+1, admitted)
		}
	}
}
