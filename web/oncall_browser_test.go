package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/hitch-dev/hitch/api"
)

// shotBoth takes a screenshot at 1280 px and one at 360 px (name-360),
// checking the page fits the narrow width.
func shotBoth(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	shot(t, ctx, name)
	do(t, ctx, "narrow", chromedp.EmulateViewport(360, 780))
	if w := get(t, ctx, "page width", chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); w > 360 {
		t.Errorf("%s is %d px wide at a 360 px viewport", name, w)
	}
	shot(t, ctx, name+"-360")
	do(t, ctx, "wide", chromedp.EmulateViewport(1280, 900))
}

// journalOf reads a run's whole journal through the API.
func journalOf(t *testing.T, base, id string) []api.Entry {
	t.Helper()
	var all []api.Entry
	after := int64(0)
	for {
		st, b := call(t, base, tokAdmin, "GET", fmt.Sprintf("/v1/runs/%s/journal?after=%d&limit=1000", id, after), nil)
		var page api.EntryPage
		if st != http.StatusOK || json.Unmarshal(b, &page) != nil {
			t.Fatalf("journal of %s: %d %s", id, st, b)
		}
		all = append(all, page.Entries...)
		if page.Next == nil {
			return all
		}
		after = *page.Next
	}
}

// TestConsoleOnCall is the console as the person on call meets it: an
// approval card that says everything the decision needs, a count of what
// waits in the navigation, and a viewer who is offered no control.
func TestConsoleOnCall(t *testing.T) {
	ctx := browser(t)
	base := serve(t, writeConfig(t))
	id := start(t, base, "gate", "append a line to side, then show it")
	if r := await(t, base, id); r.Status != "waiting" {
		t.Fatalf("gate run %s is %s", id, r.Status)
	}
	card := fmt.Sprintf(`article.approval:has(a[href="/runs/%s"])`, id)

	t.Run("an approval card shows the command as typed", func(t *testing.T) {
		do(t, ctx, "sign in", signIn(base, tokAdmin), chromedp.WaitVisible(css(".signout button")),
			chromedp.Navigate(base+"/approvals"), chromedp.WaitVisible(css(card)))
		if got := text(t, ctx, card+" pre.argv"); got != gateCommand {
			t.Fatalf("the card shows the command as\n%q\nwant\n%q", got, gateCommand)
		}
		body := text(t, ctx, card)
		for _, want := range []string{"bash", "policy rule 1", "shell", "append a line to side", "gate", "in 6 days 23 h"} {
			if !strings.Contains(body, want) {
				t.Errorf("the card lacks %q:\n%s", want, body)
			}
		}
		if n := text(t, ctx, "#nav-pending"); n != "1" {
			t.Errorf("the navigation counts %q approvals waiting, want 1", n)
		}
		shotBoth(t, ctx, "approvals-card")
		do(t, ctx, "run page", chromedp.Navigate(base+"/runs/"+id), chromedp.WaitVisible(css(".k-model-reply .call")))
		if got := text(t, ctx, ".k-model-reply pre.argv"); got != gateCommand {
			t.Fatalf("the transcript shows the command as %q", got)
		}
		if call := text(t, ctx, ".k-model-reply .call .cid"); !strings.Contains(call, "call t1c1") {
			t.Errorf("the model's call is named %q, want the journal's id t1c1 and the provider's", call)
		}
		// One card per call: its decision sits in it, timed from the ask.
		if dur := text(t, ctx, "#call-t1c1 .steps > li.k-call-decided .dur"); !strings.HasPrefix(dur, "+") {
			t.Errorf("the decision in the call's card says %q, want its time since the call was asked", dur)
		}
		if n := count(t, ctx, "#entries > li.k-call-decided"); n != 0 {
			t.Errorf("%d decisions stand outside their call's card", n)
		}
		// Every entry has its JSON a click away, as the journal holds it.
		do(t, ctx, "raw JSON", chromedp.Click(css("li.k-model-reply > .eh a.raw")), chromedp.WaitVisible(css("li.k-model-reply > pre.json")))
		if raw := text(t, ctx, "li.k-model-reply > pre.json"); !strings.Contains(raw, `"kind": "model.reply"`) || !strings.Contains(raw, `>> side`) {
			t.Errorf("the reply's JSON:\n%s", raw)
		}
		shotBoth(t, ctx, "run-waiting")
		// An agent's page (a policy table, the start forms) fits 360 px.
		do(t, ctx, "agent page", chromedp.Navigate(base+"/agents/gate"), chromedp.WaitVisible(css("#policy table")))
		shotBoth(t, ctx, "agent-gate")
	})

	t.Run("cancel asks for confirmation and journals why", func(t *testing.T) {
		id := start(t, base, "gate", "a run to cancel")
		if r := await(t, base, id); r.Status != "waiting" {
			t.Fatalf("gate run %s is %s", id, r.Status)
		}
		const why = `the customer withdrew the request <#4711> & said "stop"`
		do(t, ctx, "open the cancel form", chromedp.Navigate(base+"/runs/"+id), chromedp.WaitVisible(css("details.cancel summary")),
			chromedp.Click(css("details.cancel summary")), chromedp.WaitVisible(chromedp.ID("cancel-reason")),
			chromedp.SendKeys(chromedp.ID("cancel-reason"), why),
			// Unconfirmed, the browser keeps the form: nothing is sent.
			chromedp.Click(chromedp.ID("cancel-submit")))
		if invalid := get(t, ctx, "confirmation checked", chromedp.Evaluate[bool](`document.getElementById("cancel-confirm").matches(":invalid")`)); !invalid {
			t.Fatal("the form went without its confirmation")
		}
		if r := await(t, base, id); r.Status != "waiting" {
			t.Fatalf("an unconfirmed cancel left run %s %s", id, r.Status)
		}
		do(t, ctx, "confirm", chromedp.Click(chromedp.ID("cancel-confirm")), chromedp.Click(chromedp.ID("cancel-submit")),
			chromedp.WaitVisible(css(".msg.ok")), chromedp.WaitReady(css(`#summary[data-status="cancelled"]`)))
		if why2 := text(t, ctx, "#summary dd.why"); why2 != why {
			t.Errorf("the run page says why %q, want %q", why2, why)
		}
		r := await(t, base, id)
		if r.Status != "cancelled" || r.Outcome == nil || r.Outcome.CancelReason != why || r.Outcome.CancelledBy != "admin" {
			t.Fatalf("cancelled run: %+v", r.Outcome)
		}
		var ended bool
		for _, e := range journalOf(t, base, id) {
			if e.Kind == "run.ended" {
				var o api.Outcome
				ended = json.Unmarshal(e.Data, &o) == nil && o.CancelReason == why && o.CancelledBy == "admin"
			}
		}
		if !ended {
			t.Fatal("the journal's run.ended does not carry who cancelled and why")
		}
		shot(t, ctx, "run-cancelled")
	})

	t.Run("fork here on an entry makes a new run, on today's workspace", func(t *testing.T) {
		id := start(t, base, "gate", "a run to fork")
		if r := await(t, base, id); r.Status != "waiting" {
			t.Fatalf("gate run %s is %s", id, r.Status)
		}
		do(t, ctx, "run page", chromedp.Navigate(base+"/runs/"+id), chromedp.WaitVisible(chromedp.ID("entries")))
		href := get(t, ctx, "fork here", chromedp.Evaluate[string](`document.querySelector("#e1 a.fork-here").getAttribute("href")`))
		if want := "/runs/" + id + "?fork=1#fork"; href != want {
			t.Fatalf("entry #1's fork link goes to %q, want %q", href, want)
		}
		do(t, ctx, "follow it", chromedp.Navigate(base+href))
		do(t, ctx, "fork form", chromedp.WaitVisible(chromedp.ID("fork-confirm")))
		if at := get(t, ctx, "position", chromedp.Evaluate[string](`document.getElementById("fork-at").value`)); at != "1" {
			t.Errorf("the fork form offers #%s, want the entry clicked (#1)", at)
		}
		if w := text(t, ctx, "details.fork .warning"); !strings.Contains(w, "workspace as it is now") {
			t.Errorf("the fork form does not warn about the workspace: %q", w)
		}
		do(t, ctx, "fork", chromedp.Click(chromedp.ID("fork-confirm")), chromedp.Click(chromedp.ID("fork-submit")),
			chromedp.WaitVisible(css(".msg.ok")))
		if msg := text(t, ctx, ".msg.ok"); !strings.Contains(msg, "forked from "+id+" at #1") || !strings.Contains(msg, "workspace as it is now") {
			t.Errorf("after the fork: %q", msg)
		}
		forkID := strings.TrimPrefix(get(t, ctx, "where", chromedp.Evaluate[string](`location.pathname`)), "/runs/")
		es := journalOf(t, base, forkID)
		var started struct {
			ForkedFrom struct {
				Run string
				Pos int64
			} `json:"forked_from"`
		}
		if forkID == id || len(es) == 0 || json.Unmarshal(es[0].Data, &started) != nil || started.ForkedFrom.Run != id || started.ForkedFrom.Pos != 1 {
			t.Fatalf("the fork %s: %+v", forkID, es)
		}
		// The fork's record names its source, and its page links to the
		// source at the fork's position.
		if r := await(t, base, forkID); r.ForkedFrom == nil || r.ForkedFrom.Run != id || r.ForkedFrom.Pos != 1 {
			t.Errorf("the fork's record: forked from %+v, want %s at 1", r.ForkedFrom, id)
		}
		if f := text(t, ctx, "dd.forked-from"); !strings.Contains(f, id) || !strings.Contains(f, "#1") {
			t.Errorf("the fork's page says it came from %q", f)
		}
		if href := get(t, ctx, "source link", chromedp.Evaluate[string](`document.querySelector("dd.forked-from a").getAttribute("href")`)); href != "/runs/"+id+"#e1" {
			t.Errorf("the source link goes to %q, want /runs/%s#e1", href, id)
		}
		shot(t, ctx, "run-forked")
	})

	t.Run("triage: what a run waits for, a turn-limit ending, newer pages", func(t *testing.T) {
		loop := start(t, base, "loop", "never answers")
		if r := await(t, base, loop); r.Status != "completed" || r.Outcome == nil || r.Outcome.Reason != "max_turns" {
			t.Fatalf("loop run: %+v", r)
		}
		do(t, ctx, "runs", chromedp.Navigate(base+"/runs"), chromedp.WaitVisible(css("table.runs")))
		row := func(id string) string { return text(t, ctx, fmt.Sprintf(`tr[data-run=%q]`, id)) }
		if got := row(loop); !strings.Contains(got, "turn limit") || strings.Contains(got, "completed") {
			t.Errorf("the turn-limit run's row: %q", got)
		}
		if got := row(id); !strings.Contains(got, "waiting for an approval (t1c1)") {
			t.Errorf("the waiting run's row: %q", got)
		}
		counts := text(t, ctx, "#counts")
		if !strings.Contains(counts, "turn limit 1") {
			t.Errorf("counts: %q", counts)
		}
		do(t, ctx, "completed only", chromedp.Navigate(base+"/runs?status=completed"), chromedp.WaitVisible(css("#counts")))
		if n := count(t, ctx, fmt.Sprintf(`tr[data-run=%q]`, loop)); n != 0 {
			t.Error("the turn-limit run is listed among the completed")
		}
		do(t, ctx, "turn limit only", chromedp.Navigate(base+"/runs?status=max_turns"), chromedp.WaitVisible(css("table.runs")))
		if n := count(t, ctx, "#run-rows tr"); n != 1 || row(loop) == "" {
			t.Errorf("the turn-limit filter lists %d runs", n)
		}
		do(t, ctx, "run page", chromedp.Navigate(base+"/runs/"+loop), chromedp.WaitVisible(css("#summary")))
		if badge := text(t, ctx, "#summary h1 .st"); badge != "turn limit" {
			t.Errorf("the run page's badge reads %q", badge)
		}
		// Enough runs for two pages: the older one links back, and the
		// first page is live again.
		for i := range 50 {
			start(t, base, "kid", fmt.Sprintf("filler %d", i))
		}
		do(t, ctx, "older page", chromedp.Navigate(base+"/runs"), chromedp.WaitVisible(css(`a[rel="next"]`)),
			chromedp.Click(css(`a[rel="next"]`)), chromedp.WaitVisible(css(`a[rel="prev"]`)))
		if live := get(t, ctx, "older page live", chromedp.Evaluate[bool](`document.getElementById("runs-live").hasAttribute("data-refresh")`)); live {
			t.Error("an older page refreshes itself")
		}
		do(t, ctx, "newer", chromedp.Click(css(`a[rel="prev"]`)), chromedp.WaitVisible(css(`a[rel="next"]`)))
		if live := get(t, ctx, "first page live", chromedp.Evaluate[bool](`document.getElementById("runs-live").hasAttribute("data-refresh") && !location.search.includes("after=")`)); !live {
			t.Error("the newer link does not lead back to the live first page")
		}
	})

	t.Run("a run started from an agent's page completes", func(t *testing.T) {
		do(t, ctx, "agent page", chromedp.Navigate(base+"/agents/kid"), chromedp.WaitVisible(chromedp.ID("run-input")),
			chromedp.SendKeys(chromedp.ID("run-input"), "look around"),
			chromedp.SendKeys(chromedp.ID("run-metadata"), "ticket=4711"),
			chromedp.Click(chromedp.ID("run-start")), chromedp.WaitVisible(css(".msg.ok")),
			chromedp.WaitReady(css(`#summary[data-status="completed"]`)), chromedp.WaitVisible(css(".k-run-ended")))
		id := get(t, ctx, "run id", chromedp.Evaluate[string](`document.getElementById("summary").dataset.run`))
		if r := await(t, base, id); r.Status != "completed" || r.Outcome.Answer != "kid done" || !strings.HasPrefix(id, "run-") {
			t.Fatalf("the run started from the console: %s %+v", id, r)
		}
		if started := text(t, ctx, ".k-run-started"); !strings.Contains(started, "look around") || !strings.Contains(started, `"ticket": "4711"`) {
			t.Errorf("run.started: %s", started)
		}
		do(t, ctx, "chat", chromedp.Navigate(base+"/agents/kid"), chromedp.WaitVisible(chromedp.ID("chat-text")),
			chromedp.SendKeys(chromedp.ID("chat-text"), "hello there"),
			chromedp.Click(chromedp.ID("chat-send")), chromedp.WaitVisible(css("#chat .k-submission-ended")))
		if chat := text(t, ctx, "#chat"); !strings.Contains(chat, "hello there") || !strings.Contains(chat, "kid done") {
			t.Errorf("the new session's transcript: %s", chat)
		}
	})

	t.Run("a viewer is offered no control", func(t *testing.T) {
		do(t, ctx, "sign in as a viewer",
			chromedp.Navigate(base+"/runs"), chromedp.WaitVisible(css(".signout button")),
			chromedp.Click(css(".signout button")), chromedp.WaitVisible(chromedp.ID("token")),
			signIn(base, tokView), chromedp.WaitVisible(css("table.runs")))
		for _, path := range []string{"/approvals", "/runs/" + id, "/runs/" + id + "/workspace", "/sessions", "/agents/gate"} {
			do(t, ctx, "open "+path, chromedp.Navigate(base+path), chromedp.WaitReady(css(`html[data-ready="1"]`)))
			if n := count(t, ctx, `main form[method="post"]`); n != 0 {
				t.Errorf("a viewer sees %d forms that change something on %s", n, path)
			}
		}
		do(t, ctx, "approvals", chromedp.Navigate(base+"/approvals"), chromedp.WaitVisible(css(card)))
		if body := text(t, ctx, card); !strings.Contains(body, "may read this request but not answer it") || !strings.Contains(body, gateCommand) {
			t.Errorf("a viewer's card:\n%s", body)
		}
		shot(t, ctx, "approvals-viewer")
	})
}
