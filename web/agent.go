package web

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/hitch-dev/hitch/api"
)

// randomID draws the random part of an id a form carries.
func randomID() string {
	b := make([]byte, 9)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func init() {
	funcs["budgetName"] = budgetName
	funcs["budgetAmount"] = budgetAmount
	funcs["budgetUsed"] = func(unit string, v *float64) string {
		if v == nil {
			return "not reported"
		}
		return budgetAmount(unit, *v)
	}
	funcs["json"] = func(b []byte) string { return prettyJSON(string(b)) }
	funcs["inc"] = func(i int) int { return i + 1 }
	funcs["toolNotes"] = toolNotes
}

// toolNotes says how a tool's calls behave.
func toolNotes(t api.AgentTool) string {
	var notes []string
	if t.External {
		notes = append(notes, "external: another system does the work")
	}
	if t.FromSource {
		notes = append(notes, "from a tool source")
	}
	if t.Replay > 0 {
		notes = append(notes, fmt.Sprintf("replayable, %d attempts", t.Replay))
	} else {
		notes = append(notes, "at most once")
	}
	if t.Timeout != "" {
		notes = append(notes, "timeout "+t.Timeout)
	}
	return strings.Join(notes, "; ")
}

// agentData is an agent's page: its definition, and the forms that start
// a run of it and a session with it (their values kept on a refusal).
type agentData struct {
	api.AgentDetail
	// The start form: its values, and the run id drawn when the page was
	// rendered, so a form sent twice starts one run.
	RunInput, RunInstructions, RunID, RunMetadata string
	// The chat form: its text, the session's id and the message's
	// idempotency key, drawn likewise.
	Message, SessionID, Key string
	// The preview form's values, and what the preview answered: the first
	// request a run would send, or why there is none.
	PreviewInput, PreviewInstructions, PreviewSession string
	Preview                                           *api.AgentPreview
	PreviewError                                      string
}

// agentPage shows one agent's definition, as GET /v1/agents/{name} gives
// it (never a secret), with a form to start a run and one to talk to it
// in a new session, for a role that may.
func (c *Console) agentPage(w http.ResponseWriter, r *http.Request) {
	c.renderAgent(w, r, http.StatusOK, agentData{}, r.FormValue("error"))
}

func (c *Console) renderAgent(w http.ResponseWriter, r *http.Request, status int, d agentData, msg string) {
	name := r.PathValue("name")
	if res := c.get(r, "/v1/agents/"+url.PathEscape(name), &d.AgentDetail); !res.ok() {
		c.refused(w, r, res)
		return
	}
	if r.Method == http.MethodGet && r.URL.Query().Has("preview") {
		c.preview(r, name, &d)
	}
	if d.RunID == "" {
		d.RunID = "run-" + randomID()
	}
	if d.SessionID == "" {
		d.SessionID, d.Key = "chat-"+randomID(), randomKey()
	}
	c.render(w, r, status, "agent", page{Title: "Agent " + d.Name, Nav: "agents", Data: d, Error: msg})
}

// preview asks for the first request a run of the agent would send, with
// the preview form's input, instructions and session. A refusal (no such
// session, one of another agent) is said in the preview's place.
func (c *Console) preview(r *http.Request, name string, d *agentData) {
	q := r.URL.Query()
	d.PreviewInput, d.PreviewInstructions, d.PreviewSession = q.Get("input"), q.Get("instructions"), strings.TrimSpace(q.Get("session"))
	v := url.Values{"input": {d.PreviewInput}, "instructions": {d.PreviewInstructions}}
	if d.PreviewSession != "" {
		v.Set("session", d.PreviewSession)
	}
	var pv api.AgentPreview
	if res := c.get(r, "/v1/agents/"+url.PathEscape(name)+"/preview?"+v.Encode(), &pv); !res.ok() {
		d.PreviewError = "preview: " + res.message()
		return
	}
	d.Preview = &pv
}

// parseMetadata reads the start form's metadata: one key=value a line.
func parseMetadata(s string) (map[string]any, error) {
	m := map[string]any{}
	for i, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("metadata line %d %q: want key=value", i+1, line)
		}
		m[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return m, nil
}

// startRun starts a run of the page's agent. The id drawn with the page
// makes it idempotent: a form sent twice starts one run and says so.
func (c *Console) startRun(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	d := agentData{RunInput: r.PostFormValue("input"), RunInstructions: r.PostFormValue("instructions"),
		RunID: strings.TrimSpace(r.PostFormValue("id")), RunMetadata: r.PostFormValue("metadata")}
	if strings.TrimSpace(d.RunInput) == "" {
		c.renderAgent(w, r, http.StatusUnprocessableEntity, d, "start: the input is blank: write what the run is to do")
		return
	}
	meta, err := parseMetadata(d.RunMetadata)
	if err != nil {
		c.renderAgent(w, r, http.StatusUnprocessableEntity, d, "start: "+err.Error())
		return
	}
	res := c.post(r, "/v1/runs", api.StartRun{Agent: name, Input: d.RunInput, ID: d.RunID, Instructions: d.RunInstructions, Metadata: meta})
	if !res.ok() {
		if res.status == http.StatusUnauthorized {
			c.refused(w, r, res)
			return
		}
		c.renderAgent(w, r, res.status, d, "start: "+res.message()+" (nothing was started; your input is kept below)")
		return
	}
	var sr api.StartedRun
	_ = res.decode(&sr)
	msg := "run started"
	if !sr.Created {
		msg = "this run was started already (the form was sent twice): nothing new was started"
	}
	back(w, r, "/runs/"+url.PathEscape(sr.Run.ID), "notice", msg)
}

// chat starts a session with the page's agent and sends it the first
// message. The session's id and the message's key are drawn with the
// page, so a form sent twice makes one session with one message.
func (c *Console) chat(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	d := agentData{Message: r.PostFormValue("text"), SessionID: strings.TrimSpace(r.PostFormValue("session")), Key: r.PostFormValue("key")}
	if strings.TrimSpace(d.Message) == "" {
		c.renderAgent(w, r, http.StatusUnprocessableEntity, d, "send: the message is blank: write something first")
		return
	}
	res := c.post(r, "/v1/sessions", api.CreateSession{Agent: name, ID: d.SessionID})
	var cs api.CreatedSession
	if res.ok() {
		_ = res.decode(&cs)
		if len(d.Key) > 256 {
			d.Key = ""
		}
		res = c.callWith(r.Context(), sessionFrom(r.Context()).token, http.MethodPost, "/v1/sessions/"+url.PathEscape(cs.Session.ID)+"/messages", d.Key, api.Send{Text: d.Message, Mode: api.ModeQueue})
	}
	if !res.ok() {
		if res.status == http.StatusUnauthorized {
			c.refused(w, r, res)
			return
		}
		c.renderAgent(w, r, res.status, d, "send: "+res.message()+" (your message is kept below)")
		return
	}
	backAt(w, r, "/sessions/"+url.PathEscape(cs.Session.ID), "chat-h", "session "+cs.Session.ID+" started with your message")
}

// runBudget reads what bounds a run and what is left; nil when the API
// does not answer, so the run page still shows the rest.
func (c *Console) runBudget(r *http.Request, id string) *api.RunBudget {
	var b api.RunBudget
	if res := c.get(r, "/v1/runs/"+url.PathEscape(id)+"/budget", &b); !res.ok() {
		return nil
	}
	return &b
}

// budgetName names a budget counter for people.
func budgetName(name string) string {
	switch name {
	case "usd":
		return "cost (USD)"
	case "wall_time":
		return "wall time"
	}
	return strings.ReplaceAll(name, "_", " ")
}

// budgetAmount writes an amount in its unit.
func budgetAmount(unit string, v float64) string {
	switch unit {
	case "usd":
		return fmt.Sprintf("$%.4f", v)
	case "ms":
		return (time.Duration(v) * time.Millisecond).Round(time.Second).String()
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}
