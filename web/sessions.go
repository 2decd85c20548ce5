package web

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/hitchtype"
)

// The sessions pages: a list of the tenant's sessions, and a chat view of
// one (its transcript followed live, a composer that sends, steers or
// interrupts, and the queue of waiting messages with edit and remove).
// Like every page they read and act through the API's handlers, in
// process, as the signed-in token.

// SessionsRead bounds the sessions the sessions page reads to order them
// newest first: the API lists sessions by id.
const SessionsRead = 1000

// QueueShown bounds the queued messages a session page lists; more are
// counted.
const QueueShown = 100

// TurnTail bounds the steps of a running turn a session page shows when
// it opens; the turn's run page has them all.
const TurnTail = 20

// sendModes are the modes a message can be sent with, as the composer
// offers them.
var sendModes = []string{api.ModeQueue, api.ModeSteer, api.ModeInterrupt}

// registerSessions adds the sessions pages to the console.
func (c *Console) registerSessions() {
	c.mux.HandleFunc("GET /sessions", c.signed(c.sessionsPage))
	c.mux.HandleFunc("POST /sessions", c.signed(c.createSession))
	c.mux.HandleFunc("GET /sessions/{id}", c.signed(c.sessionPage))
	c.mux.HandleFunc("GET /sessions/{id}/older", c.signed(c.olderSessionEntries))
	c.mux.HandleFunc("GET /sessions/{id}/live", c.signed(c.sessionLive))
	c.mux.HandleFunc("POST /sessions/{id}/send", c.signed(c.sendMessage))
	c.mux.HandleFunc("POST /sessions/{id}/interrupt", c.signed(c.interruptSession))
	c.mux.HandleFunc("POST /sessions/{id}/queue/{message}/edit", c.signed(c.editMessage))
	c.mux.HandleFunc("POST /sessions/{id}/queue/{message}/remove", c.signed(c.removeMessage))
}

type sessionsData struct {
	Sessions []api.Session
	More     bool // more sessions than SessionsRead exist
	Read     int
	Agents   []api.Agent
	Agent    string // the create form's values, kept on a refusal
	ID       string
}

func (c *Console) sessionsPage(w http.ResponseWriter, r *http.Request) {
	c.renderSessions(w, r, http.StatusOK, sessionsData{}, r.FormValue("error"))
}

func (c *Console) renderSessions(w http.ResponseWriter, r *http.Request, status int, d sessionsData, msg string) {
	var pg api.SessionPage
	if res := c.get(r, "/v1/sessions?limit="+strconv.Itoa(SessionsRead), &pg); !res.ok() {
		c.refused(w, r, res)
		return
	}
	d.Sessions, d.More, d.Read = pg.Sessions, pg.Next != "", SessionsRead
	slices.SortStableFunc(d.Sessions, func(a, b api.Session) int {
		if n := b.CreatedAt.Compare(a.CreatedAt); n != 0 {
			return n
		}
		return strings.Compare(b.ID, a.ID)
	})
	var ags api.Agents
	c.get(r, "/v1/agents", &ags)
	d.Agents = ags.Agents
	c.render(w, r, status, "sessions", page{Title: "Sessions", Nav: "sessions", Data: d, Error: msg})
}

func (c *Console) createSession(w http.ResponseWriter, r *http.Request) {
	d := sessionsData{Agent: r.PostFormValue("agent"), ID: strings.TrimSpace(r.PostFormValue("id"))}
	if d.Agent == "" {
		c.renderSessions(w, r, http.StatusUnprocessableEntity, d, "create session: choose an agent")
		return
	}
	res := c.post(r, "/v1/sessions", api.CreateSession{Agent: d.Agent, ID: d.ID})
	if !res.ok() {
		if res.status == http.StatusUnauthorized {
			c.refused(w, r, res)
			return
		}
		c.renderSessions(w, r, res.status, d, "create session: "+res.message())
		return
	}
	var cs api.CreatedSession
	if err := res.decode(&cs); err != nil {
		c.renderSessions(w, r, http.StatusInternalServerError, d, "create session: "+err.Error())
		return
	}
	msg := "session created"
	if !cs.Created {
		msg = "a session with this id exists: here it is"
	}
	back(w, r, "/sessions/"+url.PathEscape(cs.Session.ID), "notice", msg)
}

type sessionData struct {
	Session api.Session
	Entries []sessionEntryView
	First   int64
	Last    int64
	Older   bool
	Queue   []api.QueuedMessage
	More    int // queued messages not listed
	Modes   []string
	// RunAfter is where the running turn's steps start: the last
	// TurnTail entries of its run's journal.
	RunAfter int64
	// Cost is what the session has cost so far; nil when it could not be
	// read (the page still opens).
	Cost *api.RunningCost
	// The composer's values: kept when a send or an edit is refused.
	Text string
	Mode string
	Key  string // the send's idempotency key: a form posted twice sends once
	// Kept is an edit the server refused, kept in its form when the
	// message still waits (else in the composer, as Text).
	Kept struct{ Message, Text string }
}

func (c *Console) sessionPage(w http.ResponseWriter, r *http.Request) {
	c.renderSession(w, r, http.StatusOK, sessionData{}, r.FormValue("error"), r.FormValue("notice"))
}

// renderSession renders a session page with d's composer values.
func (c *Console) renderSession(w http.ResponseWriter, r *http.Request, status int, d sessionData, msg, notice string) {
	id := r.PathValue("id")
	esc := url.PathEscape(id)
	if res := c.get(r, "/v1/sessions/"+esc, &d.Session); !res.ok() {
		c.refused(w, r, res)
		return
	}
	after := max(0, d.Session.Position-JournalPage)
	var ep api.SessionEntryPage
	if res := c.get(r, fmt.Sprintf("/v1/sessions/%s/transcript?after=%d&limit=%d", esc, after, JournalPage), &ep); !res.ok() {
		c.refused(w, r, res)
		return
	}
	d.Entries = sessionViews(ep.Entries)
	d.First, d.Last, d.Older = window(after, ep.Entries, func(e api.SessionEntry) int64 { return e.Pos })
	var q api.Queue
	if res := c.get(r, fmt.Sprintf("/v1/sessions/%s/queue?limit=%d", esc, QueueShown), &q); !res.ok() {
		c.refused(w, r, res)
		return
	}
	d.Queue = q.Messages
	d.More = max(0, d.Session.Queued-len(q.Messages))
	if d.Kept.Message != "" && !slices.ContainsFunc(d.Queue, func(m api.QueuedMessage) bool { return m.ID == d.Kept.Message }) {
		// The message left the queue: the text goes to the composer.
		d.Text, d.Kept.Message = d.Kept.Text, ""
	}
	if d.Session.ActiveRun != "" {
		var run api.Run
		if res := c.get(r, "/v1/runs/"+url.PathEscape(d.Session.ActiveRun), &run); res.ok() {
			d.RunAfter = max(0, run.Position-TurnTail)
		}
	}
	var cost api.RunningCost
	if res := c.get(r, "/v1/sessions/"+esc+"/cost", &cost); res.ok() {
		d.Cost = &cost
	}
	d.Modes = sendModes
	if d.Mode == "" {
		d.Mode = api.ModeQueue
	}
	d.Key = randomKey()
	c.render(w, r, status, "session", page{Title: "Session " + d.Session.ID, Nav: "sessions", Data: d, Error: msg, Notice: notice})
}

func randomKey() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "console-" + base64.RawURLEncoding.EncodeToString(b)
}

// refusedHere renders a refused action on the session page itself, with
// the user's text kept; a signed-out token goes to the sign-in.
func (c *Console) refusedHere(w http.ResponseWriter, r *http.Request, res result, d sessionData, msg string) {
	if res.status == http.StatusUnauthorized {
		c.refused(w, r, res)
		return
	}
	status := res.status
	if status < 400 {
		status = http.StatusUnprocessableEntity
	}
	c.renderSession(w, r, status, d, msg, "")
}

func (c *Console) sendMessage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	to := "/sessions/" + url.PathEscape(id)
	d := sessionData{Text: r.PostFormValue("text"), Mode: r.PostFormValue("mode")}
	if d.Mode == "" {
		d.Mode = api.ModeQueue
	}
	if !slices.Contains(sendModes, d.Mode) {
		c.refusedHere(w, r, result{}, d, fmt.Sprintf("send: mode %q: want one of %s", d.Mode, strings.Join(sendModes, ", ")))
		return
	}
	if strings.TrimSpace(d.Text) == "" {
		c.refusedHere(w, r, result{}, d, "send: the message is blank: write something first")
		return
	}
	key := r.PostFormValue("key")
	if len(key) > 256 {
		key = ""
	}
	res := c.callWith(r.Context(), sessionFrom(r.Context()).token, http.MethodPost, "/v1/sessions/"+url.PathEscape(id)+"/messages", key, api.Send{Text: d.Text, Mode: d.Mode})
	if !res.ok() {
		c.refusedHere(w, r, res, d, "send: "+res.message()+" (the message was not sent; it is still in the composer)")
		return
	}
	var sent api.Sent
	_ = res.decode(&sent)
	msg := fmt.Sprintf("message %s sent (%s)", sent.MessageID, sent.Mode)
	if sent.Duplicate {
		msg = fmt.Sprintf("message %s was sent already: nothing new was sent", sent.MessageID)
	}
	backAt(w, r, to, "composer", msg)
}

func (c *Console) interruptSession(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	to := "/sessions/" + url.PathEscape(id)
	var before api.Session
	c.get(r, "/v1/sessions/"+url.PathEscape(id), &before)
	if res := c.post(r, "/v1/sessions/"+url.PathEscape(id)+"/interrupt", nil); !res.ok() {
		c.refusedHere(w, r, res, sessionData{}, "interrupt: "+res.message())
		return
	}
	msg := "nothing was running: the session is as it was"
	if before.ActiveRun != "" {
		msg = "run " + before.ActiveRun + " interrupted"
	}
	back(w, r, to, "notice", msg)
}

func (c *Console) editMessage(w http.ResponseWriter, r *http.Request) {
	id, msg := r.PathValue("id"), r.PathValue("message")
	to := "/sessions/" + url.PathEscape(id)
	d := sessionData{}
	d.Kept.Message, d.Kept.Text = msg, r.PostFormValue("text")
	if strings.TrimSpace(d.Kept.Text) == "" {
		c.refusedHere(w, r, result{}, d, "edit "+msg+": the text is blank: write the new text, or remove the message")
		return
	}
	res := c.post(r, fmt.Sprintf("/v1/sessions/%s/queue/%s/edit", url.PathEscape(id), url.PathEscape(msg)), api.Edit{Text: d.Kept.Text})
	if !res.ok() {
		why := res.message()
		if res.problem().Type == api.TypeRefused || res.status == http.StatusNotFound {
			why += ": it no longer waits, so it was not changed. Your text is kept below"
		}
		c.refusedHere(w, r, res, d, "edit "+msg+": "+why)
		return
	}
	backAt(w, r, to, "queue-sec", "message "+msg+" edited")
}

func (c *Console) removeMessage(w http.ResponseWriter, r *http.Request) {
	id, msg := r.PathValue("id"), r.PathValue("message")
	to := "/sessions/" + url.PathEscape(id)
	res := c.post(r, fmt.Sprintf("/v1/sessions/%s/queue/%s/remove", url.PathEscape(id), url.PathEscape(msg)), nil)
	if !res.ok() {
		c.refusedHere(w, r, res, sessionData{}, "remove "+msg+": "+res.message())
		return
	}
	backAt(w, r, to, "queue-sec", "message "+msg+" removed")
}

// backAt redirects after a POST to a place on a session page, with a
// notice.
func backAt(w http.ResponseWriter, r *http.Request, to, anchor, notice string) {
	http.Redirect(w, r, to+"?notice="+url.QueryEscape(notice)+"#"+anchor, http.StatusSeeOther)
}

// olderSessionEntries answers the page of session entries before a
// position, as HTML.
func (c *Console) olderSessionEntries(w http.ResponseWriter, r *http.Request) {
	var ep api.SessionEntryPage
	c.olderPage(w, r, "session journal", "/v1/sessions/"+url.PathEscape(r.PathValue("id"))+"/transcript", &ep, func() {
		c.renderFragment(w, "session", "sentries", sessionViews(ep.Entries))
	})
}

// sessionLive streams a session's journal to the browser as server-sent
// events whose data is each entry rendered as HTML. It follows the API's
// own stream of the session, in process; a session does not end, so the
// stream lasts until the browser leaves.
func (c *Console) sessionLive(w http.ResponseWriter, r *http.Request) {
	c.relay(w, r, "/v1/sessions/"+url.PathEscape(r.PathValue("id"))+"/events", "session journal", func(ev sseEvent) (string, bool) {
		if ev.event != api.EventEntry {
			return failedFrame(ev), false
		}
		var e api.SessionEntry
		if err := json.Unmarshal([]byte(ev.data), &e); err != nil {
			return "", false
		}
		return c.entryFrame(e.Pos, "session", "sentry", sessionView(e))
	})
}

// sessionEntryView is one session journal entry made readable: a user's
// message, an answer, or a line about the session's course.
type sessionEntryView struct {
	Pos    int64
	Kind   string
	At     time.Time
	Class  string // "user", "agent" or "note", and the kind
	Who    string
	Title  string
	Text   string
	Mode   string
	Run    string
	Fields []field
}

func sessionViews(es []api.SessionEntry) []sessionEntryView {
	out := make([]sessionEntryView, 0, len(es))
	for _, e := range es {
		out = append(out, sessionView(e))
	}
	return out
}

func sessionView(e api.SessionEntry) sessionEntryView {
	v := sessionEntryView{Pos: e.Pos, Kind: e.Kind, At: e.At, Class: "note k-" + strings.ReplaceAll(e.Kind, ".", "-"), Title: e.Kind}
	add := func(label, value string) {
		if value != "" {
			v.Fields = append(v.Fields, field{Label: label, Value: cut(value)})
		}
	}
	switch e.Kind {
	case hitchtype.KindMessageAdmitted:
		var d hitchtype.MessageAdmitted
		_ = json.Unmarshal(e.Data, &d)
		v.Class = "user k-message-admitted"
		v.Who, v.Title, v.Text, v.Mode = "user", "message "+d.ID, cut(d.Text), string(d.Mode)
	case hitchtype.KindMessageEdited:
		var d hitchtype.MessageEdited
		_ = json.Unmarshal(e.Data, &d)
		v.Title = "message " + d.ID + " edited"
		v.Text = cut(d.Text)
	case hitchtype.KindMessageRemoved:
		var d hitchtype.MessageRemoved
		_ = json.Unmarshal(e.Data, &d)
		v.Title = "message " + d.ID + " removed from the queue"
	case hitchtype.KindMessageJoined:
		var d hitchtype.MessageJoined
		_ = json.Unmarshal(e.Data, &d)
		v.Title, v.Run = "message "+d.ID+" steered the running turn", d.RunID
	case hitchtype.KindSubmissionStarted:
		var d hitchtype.SubmissionStarted
		_ = json.Unmarshal(e.Data, &d)
		v.Title, v.Run = "working on message "+d.MessageID, d.RunID
	case hitchtype.KindSubmissionInterrupt:
		var d hitchtype.SubmissionInterrupted
		_ = json.Unmarshal(e.Data, &d)
		v.Title, v.Run = "interrupted", d.RunID
		if d.MessageID != "" {
			v.Title = "interrupted by message " + d.MessageID
		}
	case hitchtype.KindSubmissionEnded:
		var d hitchtype.SubmissionEnded
		_ = json.Unmarshal(e.Data, &d)
		v.Class = "agent k-submission-ended o-" + string(d.Outcome)
		v.Who, v.Run = "agent", d.RunID
		v.Title = "answer to " + d.MessageID
		if d.Outcome != hitchtype.SubmissionCompleted {
			v.Title = fmt.Sprintf("message %s %s", d.MessageID, d.Outcome)
		}
		v.Text = cut(d.Answer)
		add("reason", d.Reason)
		add("error", d.Error)
		tok := funcs["tokens"].(func(*int64) string)
		add("usage", fmt.Sprintf("in %s, out %s, cost %s", tok(d.Usage.InputTokens), tok(d.Usage.OutputTokens), funcs["cost"].(func(*float64) string)(d.CostUSD)))
	default:
		v.Text = cut(prettyJSON(string(e.Data)))
	}
	return v
}
