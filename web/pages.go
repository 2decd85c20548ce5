package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/model"
)

// statuses are what the runs page filters by, in its order: the run
// statuses, with a completion at the turn limit (status completed, reason
// max_turns) apart from one with an answer.
var statuses = []string{"queued", "running", "waiting", "completed", "max_turns", "failed", "cancelled", "answer_invalid", "budget_exhausted"}

// statusLabel names a filter of the runs page for people.
func statusLabel(st string) string {
	switch st {
	case "max_turns":
		return "turn limit"
	case "answer_invalid":
		return "answer invalid"
	case "budget_exhausted":
		return "budget exhausted"
	}
	return st
}

// statusFilter is the API's filter for one of statuses: a plain
// completion is one without a stop reason.
func statusFilter(st string, q url.Values) {
	switch st {
	case "":
	case "max_turns":
		q.Set("status", "completed")
		q.Set("reason", "max_turns")
	case "completed":
		q.Set("status", "completed")
		q.Set("reason", "none")
	default:
		q.Set("status", st)
	}
}

// badge is how a run's state shows: its status, or "turn limit" for a
// run that completed at its turn limit rather than with an answer.
func badge(r api.Run) string {
	if r.Status == "completed" && r.Outcome != nil && r.Outcome.Reason == "max_turns" {
		return "max_turns"
	}
	return r.Status
}

// waitsFor says what a waiting run waits for.
func waitsFor(w *api.Waiting) string {
	if w == nil {
		return ""
	}
	calls := ""
	if len(w.Calls) > 0 {
		calls = " (" + strings.Join(w.Calls, ", ") + ")"
	}
	switch w.Reason {
	case "approval":
		return "for an approval" + calls
	case "uncertain":
		return "to settle an uncertain call" + calls
	case "children":
		return "for its sub-agents"
	case "event":
		return "for an event" + calls
	case "external":
		return "for an outside result" + calls
	}
	return "for " + w.Reason + calls
}

// RunsTrail bounds the cursors an older page of the runs list carries to
// link back to the newer pages (it always links the newest).
const RunsTrail = 20

var funcs = template.FuncMap{
	"ts": func(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) },
	"tsText": func(t time.Time) string {
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	"terminal": func(s string) bool { return hitchtype.Status(s).Terminal() },
	"tokens": func(n *int64) string {
		if n == nil {
			return "not reported"
		}
		return strconv.FormatInt(*n, 10)
	},
	"cost": func(c *float64) string {
		if c == nil {
			return "not reported"
		}
		return fmt.Sprintf("$%.4f", *c)
	},
	"pretty":   prettyJSON,
	"label":    statusLabel,
	"badge":    badge,
	"waitsFor": waitsFor,
	"args":     argFields,
	"relative": relative,
	"pair": func(a api.Approval, back string, p page) approvalForm {
		return approvalForm{A: a, Back: back, CSRF: p.CSRF, Can: p.Can(api.RoleOperator), Role: p.Me.Role, Approver: p.Approver}
	},
}

// approvalForm is an approval request with what its card needs: the page
// to go back to, and whether the viewer's role may answer it.
type approvalForm struct {
	A          api.Approval
	Back, CSRF string
	Can        bool
	Role       string
	Approver   string // the name the viewer last answered with
}

type runsData struct {
	Runs     []api.Run
	Status   string
	Agent    string
	Text     string
	Agents   []api.Agent
	Statuses []string
	Counts   []statusCount
	Total    string
	Next     template.URL
	// Newer and Newest link an older page back to the newer ones.
	Newer, Newest template.URL
	After         string
	// The time window: CreatedAfter and CreatedBefore as RFC 3339 (what
	// the page's script shows in the viewer's zone), FromUTC and ToUTC as
	// datetime-local values in UTC (what a browser without it shows).
	CreatedAfter, CreatedBefore string
	FromUTC, ToUTC              string
	All                         template.URL // the filters but the status
	Filtered                    bool
	// Refresh, on the first page, is how often the page's script reads
	// it again to show status changes and new runs, in milliseconds.
	Refresh int64
}

type statusCount struct {
	Status string
	N      string
	Href   template.URL
}

// localInput is the datetime-local format.
const localInput = "2006-01-02T15:04"

// runsWindow reads one end of the page's time window: from or to
// (datetime-local, taken as UTC: what a browser without the page's script
// sends), else created_after or created_before (RFC 3339: what the
// script and the page's links send).
func runsWindow(r *http.Request, rfc, local string) (time.Time, error) {
	if v := strings.TrimSpace(r.FormValue(local)); v != "" {
		t, err := time.Parse(localInput, v)
		if err != nil {
			return time.Time{}, fmt.Errorf("%s %q: want a time like 2026-12-01T08:00", local, v)
		}
		return t, nil
	}
	if v := strings.TrimSpace(r.FormValue(rfc)); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return time.Time{}, fmt.Errorf("%s %q: want a time like 2026-12-01T08:00:00Z", rfc, v)
		}
		return t, nil
	}
	return time.Time{}, nil
}

func (c *Console) runsPage(w http.ResponseWriter, r *http.Request) {
	d := runsData{Statuses: statuses, Status: r.FormValue("status"), Agent: r.FormValue("agent"), After: r.FormValue("after"),
		Text: strings.TrimSpace(r.FormValue("q"))}
	if d.Status != "" && !slices.Contains(statuses, d.Status) {
		c.render(w, r, http.StatusUnprocessableEntity, "error", page{Title: "Bad filter", Error: fmt.Sprintf("status %q: want one of %s", d.Status, strings.Join(statuses, ", "))})
		return
	}
	from, err := runsWindow(r, "created_after", "from")
	if err == nil {
		var to time.Time
		if to, err = runsWindow(r, "created_before", "to"); err == nil && !from.IsZero() && !to.IsZero() && !from.Before(to) {
			err = errors.New("the window is empty: the start of the time window must be before its end")
		}
		if err == nil && !to.IsZero() {
			d.CreatedBefore, d.ToUTC = to.UTC().Format(time.RFC3339Nano), to.UTC().Format(localInput)
		}
	}
	if err != nil {
		c.render(w, r, http.StatusUnprocessableEntity, "error", page{Title: "Bad filter", Error: err.Error()})
		return
	}
	if !from.IsZero() {
		d.CreatedAfter, d.FromUTC = from.UTC().Format(time.RFC3339Nano), from.UTC().Format(localInput)
	}
	// filters are what the list, the counts and every link share.
	filters := url.Values{}
	for k, v := range map[string]string{"agent": d.Agent, "q": d.Text, "created_after": d.CreatedAfter, "created_before": d.CreatedBefore} {
		if v != "" {
			filters.Set(k, v)
		}
	}
	d.Filtered = len(filters) > 0 || d.Status != ""
	d.All = template.URL("/runs?" + filters.Encode())
	q := url.Values{}
	maps.Copy(q, filters)
	statusFilter(d.Status, q)
	if d.After != "" {
		q.Set("after", d.After)
	} else {
		d.Refresh = RunsRefresh.Milliseconds()
	}
	q.Set("limit", "50")
	var pg api.RunPage
	if res := c.get(r, "/v1/runs?"+q.Encode(), &pg); !res.ok() {
		c.refused(w, r, res)
		return
	}
	d.Runs = pg.Runs
	// The page's own links: the filters, the console's status, and the
	// trail of cursors of the newer pages, so an older page links back.
	link := func(after string, trail []string) template.URL {
		lq := url.Values{}
		maps.Copy(lq, filters)
		if d.Status != "" {
			lq.Set("status", d.Status)
		}
		if after != "" {
			lq.Set("after", after)
		}
		if len(trail) > 0 {
			lq.Set("trail", strings.Join(trail, " "))
		}
		return template.URL("/runs?" + lq.Encode())
	}
	var trail []string
	if t := strings.TrimSpace(r.FormValue("trail")); t != "" && d.After != "" {
		trail = strings.Fields(t)
	}
	if pg.Next != "" {
		older := trail
		if d.After != "" {
			older = append(slices.Clone(trail), d.After)
		}
		if len(older) > RunsTrail {
			older = older[len(older)-RunsTrail:]
		}
		d.Next = link(pg.Next, older)
	}
	if d.After != "" {
		d.Newest = link("", nil)
		if n := len(trail); n > 0 {
			d.Newer = link(trail[n-1], trail[:n-1])
		} else {
			d.Newer = d.Newest
		}
	}
	var ags api.Agents
	c.get(r, "/v1/agents", &ags)
	d.Agents = ags.Agents
	var counts api.RunCounts
	if res := c.get(r, "/v1/runs/counts?"+filters.Encode(), &counts); !res.ok() {
		c.refused(w, r, res)
		return
	}
	for _, st := range statuses {
		sq := url.Values{"status": {st}}
		maps.Copy(sq, filters)
		n := counts.Counts[st]
		switch st {
		case "completed":
			n -= counts.MaxTurns
		case "max_turns":
			n = counts.MaxTurns
		}
		d.Counts = append(d.Counts, statusCount{st, strconv.Itoa(n), template.URL("/runs?" + sq.Encode())})
	}
	d.Total = strconv.Itoa(counts.Total)
	c.render(w, r, http.StatusOK, "runs", page{Title: "Runs", Nav: "runs", Data: d})
}

type runData struct {
	Run       api.Run
	Entries   []entryView
	First     int64 // position of the first entry shown
	Last      int64
	Older     bool
	Limit     int // elements the live transcript keeps (LiveNodes)
	Family    []familyRow
	Uncertain []api.Call
	Approvals []api.Approval
	Waiting   string
	// Context is the context meter of the latest model request.
	Context contextData
	Budget  *api.RunBudget
	// ForkAt is the position the fork form offers: the entry whose
	// "fork here" was followed (?fork=POS), else the last before the end;
	// ForkOpen shows the form open, when one was.
	ForkAt   int64
	ForkOpen bool
}

type familyRow struct {
	Run   api.Run
	Depth int
	Self  bool
}

func (c *Console) runPage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	esc := url.PathEscape(id)
	var d runData
	if res := c.get(r, "/v1/runs/"+esc, &d.Run); !res.ok() {
		c.refused(w, r, res)
		return
	}
	d.ForkAt = max(1, d.Run.Position-1)
	if at, err := strconv.ParseInt(r.URL.Query().Get("fork"), 10, 64); err == nil && at >= 1 && at <= d.Run.Position {
		d.ForkAt, d.ForkOpen = at, true
	}
	after := max(0, d.Run.Position-JournalPage)
	var ep api.EntryPage
	if res := c.get(r, fmt.Sprintf("/v1/runs/%s/journal?after=%d&limit=%d", esc, after, JournalPage), &ep); !res.ok() {
		c.refused(w, r, res)
		return
	}
	d.Entries = views(ep.Entries)
	d.First, d.Last, d.Older = window(after, ep.Entries, func(e api.Entry) int64 { return e.Pos })
	d.Limit = LiveNodes
	if d.Run.Status == string(hitchtype.StatusWaiting) && len(ep.Entries) > 0 {
		for i := len(ep.Entries) - 1; i >= 0; i-- {
			e := ep.Entries[i]
			if e.Kind != hitchtype.KindRunWaiting {
				continue
			}
			var rw hitchtype.RunWaiting
			_ = json.Unmarshal(e.Data, &rw)
			d.Waiting = rw.Reason
			if rw.Reason == "uncertain" {
				d.Uncertain = c.uncertainCalls(r, esc, rw.Calls)
			}
			break
		}
	}
	var ap api.ApprovalPage
	if res := c.get(r, "/v1/approvals?root_id="+url.QueryEscape(d.Run.RootID)+"&limit=100", &ap); res.ok() {
		for _, a := range ap.Approvals {
			if a.RunID == d.Run.ID {
				d.Approvals = append(d.Approvals, a)
			}
		}
	}
	var fam api.RunPage
	if res := c.get(r, "/v1/runs?root_id="+url.QueryEscape(d.Run.RootID)+"&limit=1000", &fam); res.ok() && len(fam.Runs) > 1 {
		d.Family = familyTree(fam.Runs, d.Run.ID)
	}
	d.Context = c.contextMeter(r, esc)
	d.Budget = c.runBudget(r, d.Run.ID)
	p := page{Title: "Run " + d.Run.ID, Nav: "runs", Data: d, Error: r.FormValue("error"), Notice: r.FormValue("notice")}
	c.render(w, r, http.StatusOK, "run", p)
}

// uncertainCalls reads each uncertain call's record, so its card says what
// it was and where it ran; a call the API cannot read is shown by its id.
func (c *Console) uncertainCalls(r *http.Request, run string, keys []string) []api.Call {
	out := make([]api.Call, 0, len(keys))
	for _, k := range keys {
		var call api.Call
		if res := c.get(r, "/v1/runs/"+run+"/calls/"+url.PathEscape(k), &call); !res.ok() {
			call = api.Call{ID: k}
		}
		out = append(out, call)
	}
	return out
}

// familyTree orders a family depth first, oldest child first.
func familyTree(runs []api.Run, self string) []familyRow {
	kids := map[string][]api.Run{}
	var root *api.Run
	for i := len(runs) - 1; i >= 0; i-- { // oldest first
		rn := runs[i]
		if rn.ParentID == "" || rn.ID == rn.RootID {
			root = &runs[i]
			continue
		}
		kids[rn.ParentID] = append(kids[rn.ParentID], rn)
	}
	if root == nil {
		return nil
	}
	var out []familyRow
	var walk func(api.Run, int)
	walk = func(rn api.Run, depth int) {
		out = append(out, familyRow{Run: rn, Depth: depth, Self: rn.ID == self})
		for _, k := range kids[rn.ID] {
			walk(k, depth+1)
		}
	}
	walk(*root, 0)
	return out
}

// window is what a page shows of a journal whose entries es were read
// after position after: the first and last positions shown (first is
// after+1 and last after when none were read) and whether older entries
// exist.
func window[E any](after int64, es []E, pos func(E) int64) (first, last int64, older bool) {
	first, last = after+1, after
	if n := len(es); n > 0 {
		first, last = pos(es[0]), pos(es[n-1])
	}
	return first, last, first > 1
}

// olderEntries answers the page of entries before a position, as HTML.
func (c *Console) olderEntries(w http.ResponseWriter, r *http.Request) {
	var ep api.EntryPage
	c.olderPage(w, r, "journal", "/v1/runs/"+url.PathEscape(r.PathValue("id"))+"/journal", &ep, func() {
		c.renderFragment(w, "entries", "entries", views(ep.Entries))
	})
}

// rawEntry answers one journal entry as the journal holds it (JSON, with
// '<', '>' and '&' as themselves): the raw-JSON toggle of every entry.
func (c *Console) rawEntry(w http.ResponseWriter, r *http.Request) {
	pos, err := strconv.ParseInt(r.PathValue("pos"), 10, 64)
	if err != nil || pos < 1 {
		http.Error(w, fmt.Sprintf("position %q: want 1 or more", r.PathValue("pos")), http.StatusUnprocessableEntity)
		return
	}
	var ep api.EntryPage
	res := c.get(r, fmt.Sprintf("/v1/runs/%s/journal?after=%d&limit=1", url.PathEscape(r.PathValue("id")), pos-1), &ep)
	switch {
	case !res.ok():
		http.Error(w, res.message(), res.status)
		return
	case len(ep.Entries) == 0:
		http.Error(w, fmt.Sprintf("run %s has no entry %d", r.PathValue("id"), pos), http.StatusNotFound)
		return
	}
	b, _ := json.Marshal(ep.Entries[0])
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = io.WriteString(w, prettyJSON(string(b)))
}

// olderPage answers a page of a journal before the position ?before=:
// it reads the API's page route path (after= and limit= added) into the
// page value into and calls render, or refuses; what names the journal in
// a refusal.
func (c *Console) olderPage(w http.ResponseWriter, r *http.Request, what, path string, into any, render func()) {
	before, err := strconv.ParseInt(r.FormValue("before"), 10, 64)
	if err != nil || before < 1 {
		c.render(w, r, http.StatusUnprocessableEntity, "error", page{Title: "Bad position", Error: fmt.Sprintf("before %q: want a %s position, 1 or more", r.FormValue("before"), what)})
		return
	}
	after := max(0, before-1-JournalPage)
	if limit := before - 1 - after; limit > 0 {
		if res := c.get(r, fmt.Sprintf("%s?after=%d&limit=%d", path, after, limit), into); !res.ok() {
			c.refused(w, r, res)
			return
		}
	}
	w.Header().Set("X-First", strconv.FormatInt(after+1, 10))
	render()
}

func (c *Console) renderFragment(w http.ResponseWriter, page, name string, data any) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := c.tmpl[page].ExecuteTemplate(w, name, data); err != nil {
		http.Error(w, "render: "+err.Error(), http.StatusInternalServerError)
	}
}

// cancel cancels a run once the form confirms it and says why; the API
// journals the reason, with the signed-in token's name.
func (c *Console) cancel(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	to := "/runs/" + url.PathEscape(id)
	reason := strings.TrimSpace(r.PostFormValue("reason"))
	switch {
	case r.PostFormValue("confirm") != "yes":
		back(w, r, to, "error", "cancel: tick the box to confirm that the run is to be cancelled; nothing was changed")
		return
	case reason == "":
		back(w, r, to, "error", "cancel: say why the run is cancelled (the journal keeps it); nothing was changed")
		return
	}
	if res := c.post(r, "/v1/runs/"+url.PathEscape(id)+"/cancel", api.Cancel{Reason: reason}); !res.ok() {
		back(w, r, to, "error", "cancel: "+res.message())
		return
	}
	back(w, r, to, "notice", "cancelled")
}

// fork forks a run at a position once the form confirms that the fork
// works on today's workspace, and shows the new run.
func (c *Console) fork(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	to := "/runs/" + url.PathEscape(id)
	at, err := strconv.ParseInt(strings.TrimSpace(r.PostFormValue("at")), 10, 64)
	switch {
	case err != nil || at < 1:
		back(w, r, to, "error", "fork: the position is a journal entry's number (#), 1 or more; nothing was created")
		return
	case r.PostFormValue("confirm") != "yes":
		back(w, r, to, "error", "fork: tick the box to confirm that the fork works on the workspace as it is now; nothing was created")
		return
	}
	body := api.ForkRun{At: at, Message: strings.TrimSpace(r.PostFormValue("message")),
		Instructions: strings.TrimSpace(r.PostFormValue("instructions")), Reply: strings.TrimSpace(r.PostFormValue("reply"))}
	res := c.post(r, "/v1/runs/"+url.PathEscape(id)+"/fork", body)
	if !res.ok() {
		if res.status == http.StatusUnauthorized {
			c.refused(w, r, res)
			return
		}
		back(w, r, fmt.Sprintf("%s?fork=%d", to, at), "error", "fork: "+res.message())
		return
	}
	var sr api.StartedRun
	_ = res.decode(&sr)
	back(w, r, "/runs/"+url.PathEscape(sr.Run.ID), "notice", fmt.Sprintf("forked from %s at #%d; it works on the workspace as it is now", id, at))
}

func (c *Console) reconcile(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	to := "/runs/" + url.PathEscape(id)
	body := api.Reconcile{Call: r.PostFormValue("call")}
	text := r.PostFormValue("output")
	switch as := r.PostFormValue("as"); as {
	case "unconfirmed":
		body.Unconfirmed = true
	case "failed":
		body.Error = strings.TrimSpace(text)
		if body.Error == "" {
			body.Error = "the call did not act: confirmed by " + sessionFrom(r.Context()).me.Name
		}
	case "output":
		body.Output = text
		if strings.TrimSpace(body.Output) == "" {
			back(w, r, to, "error", "reconcile "+body.Call+": output is blank: give the call's result, or settle it as failed or unconfirmed")
			return
		}
	default:
		back(w, r, to, "error", fmt.Sprintf("reconcile %s: settle %q: want output, failed or unconfirmed", body.Call, as))
		return
	}
	if res := c.post(r, "/v1/runs/"+url.PathEscape(id)+"/reconcile", body); !res.ok() {
		back(w, r, to, "error", "reconcile "+body.Call+": "+res.message())
		return
	}
	back(w, r, to, "notice", "call "+body.Call+" reconciled")
}

// workspacePage shows a run's granted roots, with grant and revoke. It is
// a page of its own: listing the roots reads the run's whole journal.
func (c *Console) workspacePage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var d struct {
		Run   api.Run
		Roots []string
	}
	if res := c.get(r, "/v1/runs/"+url.PathEscape(id), &d.Run); !res.ok() {
		c.refused(w, r, res)
		return
	}
	var roots api.Roots
	if res := c.get(r, "/v1/runs/"+url.PathEscape(id)+"/workspace", &roots); !res.ok() {
		c.refused(w, r, res)
		return
	}
	d.Roots = roots.Roots
	c.render(w, r, http.StatusOK, "workspace", page{Title: "Workspace of " + id, Nav: "runs", Data: d, Error: r.FormValue("error"), Notice: r.FormValue("notice")})
}

func (c *Console) workspace(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	to := "/runs/" + url.PathEscape(id) + "/workspace"
	op := r.PostFormValue("op")
	if op != "grant" && op != "revoke" {
		back(w, r, to, "error", fmt.Sprintf("op %q: want grant or revoke", op))
		return
	}
	path := strings.TrimSpace(r.PostFormValue("path"))
	if res := c.post(r, "/v1/runs/"+url.PathEscape(id)+"/workspace/"+op, api.Root{Path: path}); !res.ok() {
		back(w, r, to, "error", op+" "+path+": "+res.message())
		return
	}
	back(w, r, to, "notice", op+" "+path+": done")
}

// answer approves or rejects a request, from the inbox or a run page.
func (c *Console) answer(w http.ResponseWriter, r *http.Request) {
	id, call := r.PathValue("id"), r.PathValue("call")
	to := r.PostFormValue("back")
	if to != "/approvals" {
		to = "/runs/" + url.PathEscape(id)
	}
	op := r.PostFormValue("op")
	if op != "approve" && op != "reject" {
		back(w, r, to, "error", fmt.Sprintf("op %q: want approve or reject", op))
		return
	}
	body := api.Answer{Credential: api.Credential{Name: strings.TrimSpace(r.PostFormValue("approver")), Secret: r.PostFormValue("secret")}, Reason: r.PostFormValue("reason")}
	if body.Credential.Name == "" || body.Credential.Secret == "" {
		back(w, r, to, "error", op+" "+call+": give the approver's name and secret")
		return
	}
	res := c.post(r, fmt.Sprintf("/v1/runs/%s/approvals/%s/%s", url.PathEscape(id), url.PathEscape(call), op), body)
	if !res.ok() {
		msg := res.message()
		switch res.problem().Type {
		case api.TypeExpired:
			msg = "this request expired before the answer: the run was told it lapsed (" + msg + ")"
		case api.TypeRefused:
			msg = "this request was already answered elsewhere, or no longer waits (" + msg + ")"
		}
		back(w, r, to, "error", op+" "+call+": "+msg)
		return
	}
	// The name (never the secret) fills the next form.
	setCookie(w, r, approverCookie, url.QueryEscape(body.Credential.Name), ApproverKept)
	verb := "approved"
	if op == "reject" {
		verb = "rejected"
	}
	back(w, r, to, "notice", call+" "+verb)
}

func (c *Console) approvalsPage(w http.ResponseWriter, r *http.Request) {
	var ap api.ApprovalPage
	q := url.Values{"limit": {"100"}}
	if a := r.FormValue("after"); a != "" {
		q.Set("after", a)
	}
	if res := c.get(r, "/v1/approvals?"+q.Encode(), &ap); !res.ok() {
		c.refused(w, r, res)
		return
	}
	c.render(w, r, http.StatusOK, "approvals", page{Title: "Approvals", Nav: "approvals", Data: ap, Error: r.FormValue("error"), Notice: r.FormValue("notice")})
}

func (c *Console) agentsPage(w http.ResponseWriter, r *http.Request) {
	var ags api.Agents
	if res := c.get(r, "/v1/agents", &ags); !res.ok() {
		c.refused(w, r, res)
		return
	}
	c.render(w, r, http.StatusOK, "agents", page{Title: "Agents", Nav: "agents", Data: ags})
}

// entryView is one journal entry made readable.
type entryView struct {
	RunID   string
	Call    string // the call an entry of a call's lifecycle belongs to
	Pos     int64
	Kind    string
	At      time.Time
	Class   string
	Title   string
	Text    string
	Calls   []callView
	Fields  []field
	Details string // long text shown folded
}

// inlineOrFolded shows a short text inline and folds a long one.
func inlineOrFolded(s string) (inline, folded string) {
	if f := fold(argField{Value: s}); f.Head == "" {
		return s, ""
	}
	return "", cut(s)
}

// field is one labelled fact of an entry: a text, or a time shown in the
// viewer's zone.
type field struct {
	Label, Value string
	At           time.Time
}

// callView is a tool call a model reply asks for, named by the journal's
// id of it (Key) and, when it differs, the provider's (ID).
type callView struct {
	Key, ID, Name string
	Args          []argField
}

// callViews lays out the tool calls of the reply of model turn turn.
func callViews(turn int, calls []model.ToolCall) []callView {
	out := make([]callView, 0, len(calls))
	for i, tc := range calls {
		cv := callView{Key: hitchtype.CallKey(turn, i+1), ID: tc.ID, Name: tc.Name, Args: argFields(tc.Arguments)}
		if cv.ID == cv.Key {
			cv.ID = ""
		}
		out = append(out, cv)
	}
	return out
}

func views(es []api.Entry) []entryView {
	out := make([]entryView, 0, len(es))
	for _, e := range es {
		out = append(out, view(e))
	}
	return out
}

func cut(s string) string {
	if len(s) <= MaxShown {
		return s
	}
	return s[:MaxShown] + fmt.Sprintf("\n… (%d more bytes: read the journal through the API)", len(s)-MaxShown)
}

func view(e api.Entry) entryView {
	v := entryView{RunID: e.RunID, Pos: e.Pos, Kind: e.Kind, At: e.At, Class: "k-" + strings.ReplaceAll(e.Kind, ".", "-"), Title: e.Kind}
	if k, _, _ := strings.Cut(e.Kind, "."); k == "call" || k == "approval" || k == "wake" {
		// Entries of a call's lifecycle carry its id: the page folds
		// them into the call's card.
		var head struct {
			Call string `json:"call"`
		}
		_ = json.Unmarshal(e.Data, &head)
		v.Call = head.Call
	}
	add := func(label, value string) {
		if value != "" {
			v.Fields = append(v.Fields, field{Label: label, Value: cut(value)})
		}
	}
	switch e.Kind {
	case hitchtype.KindRunStarted:
		var d hitchtype.RunStarted
		_ = json.Unmarshal(e.Data, &d)
		v.Title = fmt.Sprintf("started: %s v%d", d.Agent, d.Version)
		v.Text = cut(d.Input)
		add("instructions", d.Instructions)
		if len(d.Metadata) > 0 {
			add("metadata", prettyJSON(string(d.Metadata)))
		}
	case hitchtype.KindModelReply:
		var d hitchtype.ModelReply
		_ = json.Unmarshal(e.Data, &d)
		v.Title = fmt.Sprintf("model reply, turn %d", d.Turn)
		v.Text = cut(d.Reply.Text)
		v.Calls = callViews(d.Turn, d.Reply.ToolCalls)
		if u := d.Reply.Usage; u != nil {
			add("usage", fmt.Sprintf("in %s, out %s", funcs["tokens"].(func(*int64) string)(u.InputTokens), funcs["tokens"].(func(*int64) string)(u.OutputTokens)))
		} else {
			add("usage", "not reported")
		}
	case hitchtype.KindModelAttempt:
		var d hitchtype.ModelAttempt
		_ = json.Unmarshal(e.Data, &d)
		v.Title = fmt.Sprintf("model call, turn %d attempt %d", d.Turn, d.Attempt)
		add("purpose", d.Purpose)
		add("context", contextField(d.Context))
	case hitchtype.KindModelFailed:
		var d hitchtype.ModelFailed
		_ = json.Unmarshal(e.Data, &d)
		v.Title = fmt.Sprintf("model failed, attempt %d", d.Attempt)
		v.Text = cut(d.Message)
	case hitchtype.KindCallDecided:
		var d hitchtype.CallDecided
		_ = json.Unmarshal(e.Data, &d)
		v.Title = fmt.Sprintf("policy: %s %s", d.Call, d.Verdict)
		add("reason", d.Reason)
		add("requirement", d.Requirement)
		add("rule", d.Rule)
		if d.ExpiresAt != nil {
			v.Fields = append(v.Fields, field{Label: "expires", At: *d.ExpiresAt})
		}
	case hitchtype.KindCallStarted:
		var d hitchtype.CallStarted
		_ = json.Unmarshal(e.Data, &d)
		v.Title = fmt.Sprintf("call %s started (attempt %d)", d.Call, d.Attempt)
		add("node", d.Node)
	case hitchtype.KindCallSettled:
		var d hitchtype.CallSettled
		_ = json.Unmarshal(e.Data, &d)
		v.Title = "result of " + d.Call
		v.Text, v.Details = inlineOrFolded(d.Output)
	case hitchtype.KindCallFailed, hitchtype.KindCallRejected:
		var d hitchtype.CallFailed
		_ = json.Unmarshal(e.Data, &d)
		v.Title = fmt.Sprintf("call %s %s", d.Call, strings.TrimPrefix(e.Kind, "call."))
		v.Text = cut(d.Error)
	case hitchtype.KindCallUncertain:
		var d hitchtype.CallUncertain
		_ = json.Unmarshal(e.Data, &d)
		v.Title = "call " + d.Call + " uncertain"
		v.Text = cut(d.Reason)
	case hitchtype.KindCallLost:
		var d hitchtype.CallLost
		_ = json.Unmarshal(e.Data, &d)
		v.Title = fmt.Sprintf("call %s attempt %d lost", d.Call, d.Attempt)
		v.Text = cut(d.Reason)
	case hitchtype.KindCallReconcile:
		var d hitchtype.CallReconciled
		_ = json.Unmarshal(e.Data, &d)
		v.Title = "call " + d.Call + " reconciled"
		switch {
		case d.Unconfirmed:
			v.Text = "unconfirmed"
		case d.Error != "":
			v.Text = "failed: " + cut(d.Error)
		default:
			v.Details = cut(d.Output)
		}
		add("by", d.By)
	case hitchtype.KindApprovalGrant, hitchtype.KindApprovalDeny:
		var d hitchtype.ApprovalAnswer
		_ = json.Unmarshal(e.Data, &d)
		v.Title = fmt.Sprintf("approval of %s %s", d.Call, strings.TrimPrefix(e.Kind, "approval."))
		add("by", d.By)
		add("reason", d.Reason)
	case hitchtype.KindApprovalLapse:
		var d hitchtype.ApprovalExpired
		_ = json.Unmarshal(e.Data, &d)
		v.Title = "approval of " + d.Call + " expired"
	case hitchtype.KindRootGranted, hitchtype.KindRootRevoked:
		var d hitchtype.RootChanged
		_ = json.Unmarshal(e.Data, &d)
		v.Title = strings.Replace(e.Kind, ".", " ", 1) + " " + d.Path
		add("by", d.By)
	case hitchtype.KindRunWaiting:
		var d hitchtype.RunWaiting
		_ = json.Unmarshal(e.Data, &d)
		v.Title = "waiting: " + d.Reason
		add("calls", strings.Join(d.Calls, ", "))
	case hitchtype.KindRunEnded:
		var d hitchtype.Outcome
		_ = json.Unmarshal(e.Data, &d)
		v.Title = "ended: " + string(d.Status)
		v.Text = cut(d.Answer)
		add("reason", d.Reason)
		add("error", d.Error)
		add("cancelled by", d.CancelledBy)
		add("why", d.CancelReason)
		add("uncertain", strings.Join(d.Uncertain, ", "))
	case hitchtype.KindSessionSteered:
		var d hitchtype.SessionSteered
		_ = json.Unmarshal(e.Data, &d)
		v.Title = "steered by message " + d.MessageID
		v.Text = cut(d.Text)
	case hitchtype.KindContext:
		var d hitchtype.Context
		_ = json.Unmarshal(e.Data, &d)
		v.Title = "context"
		add("tools", strings.Join(d.Tools, ", "))
		v.Details = cut(d.Instructions)
	default:
		v.Details = cut(prettyJSON(string(e.Data)))
	}
	return v
}
