package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/internal/testproc"
)

// writeSessionConfig adds the agent the session tests talk to: its first
// turn runs a command that waits until the test creates the file "go" in
// the workspace, so the turn is running for as long as the test needs;
// its second answers; its third waits for a file that never comes.
func writeSessionConfig(t *testing.T) (dir, ws string) {
	t.Helper()
	dir = writeConfig(t)
	cfg, err := os.ReadFile(filepath.Join(dir, "hitch.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(cfg), "models:\n", "models:\n  waiter: {provider: scripted, script: waiter.yaml}\n", 1)
	s = strings.Replace(s, "agents:\n", "agents:\n  - {name: waiter, model: waiter, policy: allow_all, tools: [bash], workspace: ws}\n", 1)
	script := `repeat: true
turns:
  - calls: [{name: bash, args: '{"command": "while [ ! -e go ]; do sleep 0.05; done; echo released"}'}]
  - text: carried on, and said hi as you asked
  - calls: [{name: bash, args: '{"command": "while [ ! -e never ]; do sleep 0.05; done"}'}]
`
	testproc.WriteFiles(t, dir, map[string]string{"hitch.yaml": s, "waiter.yaml": script})
	return dir, filepath.Join(dir, "ws")
}

// until polls a predicate in the page until it holds.
func until(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	get(t, ctx, what, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(50*time.Second)))
}

// clearMsgs drops the page's notices, so a wait for the next one cannot
// be met by the last.
var clearMsgs = chromedp.Evaluate[chromedp.Void](`document.querySelectorAll(".msg").forEach((e) => e.remove())`)

// setText sets a text field's value, as typing would.
func setText(sel, v string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector(%q).value = %q`, sel, v))
}

// jsClick clicks an element from the page's script: steadier than a
// click by node across the page loads that each form post makes.
func jsClick(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector(%q).click()`, sel))
}

func queued(t *testing.T, base, id string) []api.QueuedMessage {
	t.Helper()
	st, b := call(t, base, tokAdmin, "GET", "/v1/sessions/"+id+"/queue", nil)
	var q api.Queue
	if st != http.StatusOK || json.Unmarshal(b, &q) != nil {
		t.Fatalf("queue of %s: %d %s", id, st, b)
	}
	return q.Messages
}

func TestConsoleSession(t *testing.T) {
	ctx := browser(t)
	dir, ws := writeSessionConfig(t)
	base := serve(t, dir)
	const sid = "chat-1"
	inQueue := func(msg string) string { return fmt.Sprintf(`#queue li[data-id=%q]`, msg) }
	send := func(text, mode string) chromedp.Action[chromedp.Void] {
		return chromedp.Steps(clearMsgs,
			setText("#msg", text),
			jsClick(`input[name="mode"][value="`+mode+`"]`),
			jsClick("#send"),
			chromedp.WaitVisible(css(".msg.ok")),
			chromedp.WaitReady(css(`html[data-ready="1"]`)))
	}

	do(t, ctx, "sign in", signIn(base, tokAdmin), chromedp.WaitVisible(css(".signout button")))
	do(t, ctx, "sessions, empty", chromedp.Navigate(base+"/sessions"), chromedp.WaitVisible(css(".empty")))
	if empty := text(t, ctx, ".empty"); !strings.Contains(empty, "No sessions yet") {
		t.Fatalf("empty state %q", empty)
	}

	do(t, ctx, "create a session",
		chromedp.SetValue(chromedp.ID("new-agent"), "waiter"),
		chromedp.SendKeys(chromedp.ID("new-id"), sid),
		jsClick(`form[action="/sessions"] button`),
		chromedp.WaitVisible(chromedp.ID("chat")))
	if loc := get(t, ctx, "location", chromedp.Location()); !strings.Contains(loc, "/sessions/"+sid) {
		t.Fatalf("created session opened at %s", loc)
	}

	// The first message starts a turn that waits for the file.
	do(t, ctx, "send the first message", send("please wait for the file", "queue"),
		chromedp.WaitVisible(css("#chat .k-submission-started")))
	for _, m := range []string{"second", "third", "fourth"} {
		do(t, ctx, "queue "+m, send(m, "queue"))
	}
	until(t, ctx, "three messages wait", `document.querySelectorAll("#queue li[data-id]").length === 3`)
	q := queued(t, base, sid)
	if len(q) != 3 {
		t.Fatalf("queue %+v", q)
	}
	m2, m3, m4 := q[0].ID, q[1].ID, q[2].ID

	do(t, ctx, "edit the third", clearMsgs,
		jsClick(inQueue(m3)+" summary"),
		setText(inQueue(m3)+" textarea", "third, edited"),
		jsClick(inQueue(m3)+` form[action$="/edit"] button`),
		chromedp.WaitVisible(css(".msg.ok")))
	if got := text(t, ctx, inQueue(m3)+" pre"); got != "third, edited" {
		t.Fatalf("edited message shows %q", got)
	}
	do(t, ctx, "remove the fourth", clearMsgs,
		jsClick(inQueue(m4)+` form[action$="/remove"] button`),
		chromedp.WaitVisible(css(".msg.ok")))
	if n := count(t, ctx, "#queue li[data-id]"); n != 2 {
		t.Fatalf("%d messages wait after a remove, want 2", n)
	}
	if q := queued(t, base, sid); len(q) != 2 || q[1].Text != "third, edited" {
		t.Fatalf("queue after edit and remove: %+v", q)
	}

	// Steer the running turn; then start editing the second message, and
	// let the turn go on while the edit is still in its form.
	// By keyboard: the steer mode, the text, and Ctrl+Enter.
	do(t, ctx, "steer", chromedp.WaitReady(css(`html[data-ready="1"]`)), clearMsgs,
		chromedp.Focus(css(`input[name="mode"][value="queue"]`)),
		chromedp.KeyEvent(kb.ArrowRight),
		chromedp.SendKeys(chromedp.ID("msg"), "also say hi"),
		chromedp.KeyEvent("\r", chromedp.KeyModifiers(kb.ModifierCtrl)),
		chromedp.WaitVisible(css(".msg.ok")))
	if msg := text(t, ctx, ".msg.ok"); !strings.Contains(msg, "(steer)") {
		t.Fatalf("notice %q", msg)
	}
	if state := text(t, ctx, "#ses-state"); !strings.Contains(state, "working") {
		t.Fatalf("state while the turn waits: %q", state)
	}
	// The running turn's steps show in the chat: the model asked for the
	// command that waits.
	until(t, ctx, "the running turn's steps", `[...document.querySelectorAll("#chat .turn.live .k-model-reply .tool")].some((e) => e.textContent === "bash")`)
	do(t, ctx, "scroll the transcript to its end", chromedp.Evaluate[chromedp.Void](`document.getElementById("chat").scrollTop = 1e9`))
	shot(t, ctx, "session")
	do(t, ctx, "edit the second, unsaved",
		jsClick(inQueue(m2)+" summary"),
		setText(inQueue(m2)+" textarea", "second, changed too late"))
	composer := get(t, ctx, "composer position", chromedp.Evaluate[float64](`document.getElementById("composer").getBoundingClientRect().top + scrollY`))
	if err := os.WriteFile(filepath.Join(ws, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	until(t, ctx, "the steer joins and the answer streams in", `document.querySelector("#chat .k-message-joined") !== null && document.querySelector("#chat .k-submission-ended") !== null`)
	// The steer shows in the turn's steps, and the answer follows them.
	until(t, ctx, "the steer in the turn's steps", `[...document.querySelectorAll("#chat .turn .k-session-steered")].some((e) => e.textContent.includes("also say hi")) && document.querySelector("#chat .turn").nextElementSibling.matches(".k-submission-ended")`)
	answer := text(t, ctx, "#chat .k-submission-ended pre")
	if answer != "carried on, and said hi as you asked" {
		t.Fatalf("answer %q", answer)
	}
	// The second message and the edited third start in turn; the third's
	// turn waits for good.
	until(t, ctx, "the queue moves on", `document.querySelectorAll("#chat .k-submission-started").length === 3`)
	if moved := get(t, ctx, "composer position", chromedp.Evaluate[float64](`document.getElementById("composer").getBoundingClientRect().top + scrollY`)); moved != composer {
		t.Errorf("the composer moved from %.0f to %.0f while the transcript streamed", composer, moved)
	}
	var run string
	{
		var es api.SessionEntryPage
		_, b := call(t, base, tokAdmin, "GET", "/v1/sessions/"+sid+"/transcript?limit=1000", nil)
		_ = json.Unmarshal(b, &es)
		for _, e := range es.Entries {
			if e.Kind == "message.joined" {
				var j struct {
					RunID string `json:"run_id"`
				}
				_ = json.Unmarshal(e.Data, &j)
				run = j.RunID
			}
		}
		_, b = call(t, base, tokAdmin, "GET", "/v1/runs/"+run+"/journal?limit=1000", nil)
		if run == "" || !strings.Contains(string(b), `"session.steered"`) || !strings.Contains(string(b), "also say hi") {
			t.Fatalf("the steer is not in the turn's run %q:\n%.2000s", run, b)
		}
	}
	// The unsaved edit is still in its form, marked; saving it now is
	// refused, and the text is kept.
	if v := value(t, ctx, inQueue(m2)+" textarea"); v != "second, changed too late" {
		t.Fatalf("the unsaved edit was replaced: %q", v)
	}
	do(t, ctx, "save the late edit", clearMsgs,
		jsClick(inQueue(m2)+` form[action$="/edit"] button`),
		chromedp.WaitVisible(css(".msg.err")))
	if msg := text(t, ctx, ".msg.err"); !strings.Contains(msg, "no longer waits") || !strings.Contains(msg, m2) {
		t.Fatalf("refusal %q", msg)
	}
	if v := value(t, ctx, "#msg"); v != "second, changed too late" {
		t.Fatalf("the refused edit's text is not in the composer: %q", v)
	}

	// Send the kept text as an interrupt: the waiting turn ends aborted and
	// the message runs next.
	do(t, ctx, "interrupt with a message", clearMsgs,
		jsClick(`input[name="mode"][value="interrupt"]`),
		jsClick("#send"),
		chromedp.WaitVisible(css(".msg.ok")))
	until(t, ctx, "the turn is interrupted", `document.querySelector("#chat .k-submission-interrupted") !== null && document.querySelectorAll("#chat .o-aborted").length === 1 && document.querySelectorAll("#chat .k-submission-started").length === 4`)
	do(t, ctx, "queue one more", send("and then?", "queue"))
	until(t, ctx, "one waits", `document.querySelectorAll("#queue li[data-id]").length === 1`)

	do(t, ctx, "narrow", chromedp.EmulateViewport(360, 780), chromedp.Reload(), chromedp.WaitVisible(chromedp.ID("chat")))
	if w := get(t, ctx, "page width", chromedp.Evaluate[int](`document.documentElement.scrollWidth`)); w > 360 {
		t.Errorf("session page is %d px wide at a 360 px viewport", w)
	}
	shot(t, ctx, "session-360")
	do(t, ctx, "wide", chromedp.EmulateViewport(1280, 900))

	// The interrupt button, with nothing queued: the session comes to rest.
	last := queued(t, base, sid)
	if len(last) != 1 {
		t.Fatalf("queue %+v", last)
	}
	do(t, ctx, "remove the last", clearMsgs,
		jsClick(inQueue(last[0].ID)+` form[action$="/remove"] button`),
		chromedp.WaitVisible(css(".msg.ok")))
	do(t, ctx, "interrupt", clearMsgs, jsClick("#interrupt"), chromedp.WaitVisible(css(".msg.ok")))
	if msg := text(t, ctx, ".msg.ok"); !strings.Contains(msg, "interrupted") {
		t.Fatalf("notice %q", msg)
	}
	until(t, ctx, "the session rests", `document.querySelectorAll("#chat .o-aborted").length === 2 && document.getElementById("ses-state").textContent.includes("idle")`)

	do(t, ctx, "sessions list", chromedp.Navigate(base+"/sessions"), chromedp.WaitVisible(css("table.sessions")))
	if listed := text(t, ctx, "table.sessions"); !strings.Contains(listed, sid) {
		t.Fatalf("sessions list lacks %s: %s", sid, listed)
	}

	// Tenant B sees none of it.
	do(t, ctx, "sign out and in as B",
		jsClick(".signout button"), chromedp.WaitVisible(chromedp.ID("token")),
		signIn(base, tokB), chromedp.WaitVisible(css(".signout button")),
		chromedp.Navigate(base+"/sessions"), chromedp.WaitVisible(css(".empty")))
	do(t, ctx, "open A's session", chromedp.Navigate(base+"/sessions/"+sid), chromedp.WaitVisible(css(".msg.err")))
	if msg := text(t, ctx, ".msg.err"); !strings.Contains(msg, "session not found") {
		t.Fatalf("tenant b opening %s: %q", sid, msg)
	}
}
