package hitch_test

import (
	"context"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/canary"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/sandbox"
	"github.com/hitch-dev/hitch/sandbox/local"
	"github.com/hitch-dev/hitch/sessions"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/sqlite"
	"github.com/hitch-dev/hitch/tool"
	"github.com/hitch-dev/hitch/triggers"
)

// inboundCanary is a declared secret the tests below send in through every
// input a caller has.
const inboundCanary = "cnry-inbound-Vq83kZp0Lw51"

// redactingSetup opens a SQLite store in its own folder and a runtime
// that redacts the canary. close closes both, so the folder's files can
// be read raw.
func redactingSetup(t *testing.T, agents ...*hitch.Agent) (rt *hitch.Runtime, st store.Store, find *canary.Finder, dir string, close func()) {
	t.Helper()
	find, err := canary.New(map[string]string{"CANARY": inboundCanary})
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	st, err = sqlite.Open(context.Background(), filepath.Join(dir, "hitch.db"))
	if err != nil {
		t.Fatal(err)
	}
	rt, err = hitch.Open(hitch.Config{Store: st, Agents: agents, Secrets: find.Redactor(), CancelPoll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	close = func() {
		if closed {
			return
		}
		closed = true
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := rt.Close(ctx); err != nil {
			t.Errorf("close runtime: %v", err)
		}
		if err := st.Close(); err != nil {
			t.Errorf("close store: %v", err)
		}
	}
	t.Cleanup(close)
	return rt, st, find, dir, close
}

// storeLeaks reads every file of the store's folder raw and reports each
// spelling of the canary found.
func storeLeaks(t *testing.T, find *canary.Finder, dir string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "hitch.db*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no store file in %s: %v", dir, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if l := find.Find(b); l != "" {
			t.Errorf("%s holds %s", filepath.Base(f), l)
		}
	}
}

// Editing a queued message passes the same redaction as sending it: the
// store, the submission's run.started, its title and the model's context
// hold the marker, never the value.
func TestEditRedactsLikeSend(t *testing.T) {
	t.Parallel()
	started := make(chan string, 1)
	release := make(chan struct{})
	m := &funcModel{fn: func(_ context.Context, req *model.Request) (*model.Reply, error) {
		if last := req.Messages[len(req.Messages)-1]; last.Role == model.RoleUser && last.Text == "task" {
			return &model.Reply{ToolCalls: []model.ToolCall{{ID: "c1", Name: "hold", Arguments: "{}"}}}, nil
		}
		return text("done"), nil
	}}
	a := build(t, hitch.Spec{Name: "chat", Model: m, Tools: []tool.Tool{holdTool(t, "hold", started, release)}})
	rt, _, find, dir, closeAll := redactingSetup(t, a)
	ctx := t.Context()
	s := openSession(t, rt, a, "edit")
	send(t, rt, s.ID, "task", sessions.SendOptions{})
	<-started
	queued := send(t, rt, s.ID, "later", sessions.SendOptions{})
	if err := rt.Sessions().Edit(ctx, s.ID, queued.MessageID, "use "+inboundCanary+" now"); err != nil {
		t.Fatal(err)
	}
	close(release)
	status := awaitSession(t, rt, s.ID)
	if len(status.Submissions) != 2 {
		t.Fatalf("submissions %+v", status.Submissions)
	}
	sub := status.Submissions[1]
	if want := "use [secret:CANARY] now"; sub.Text != want {
		t.Errorf("the edited submission's text is %q, want %q", sub.Text, want)
	}
	run, err := rt.Get(ctx, sub.RunID)
	if err != nil {
		t.Fatal(err)
	}
	var seen strings.Builder
	seen.WriteString(run.Title + "\n")
	for _, e := range journal(t, rt, sub.RunID) {
		seen.Write(e.Data)
	}
	for _, req := range m.requests() {
		for _, msg := range req.Messages {
			seen.WriteString(msg.Text + "\n")
		}
	}
	if l := find.Find([]byte(seen.String())); l != "" {
		t.Errorf("the run's title, journal or the model's context holds %s", l)
	}
	if !strings.Contains(seen.String(), "use [secret:CANARY] now") {
		t.Errorf("the model never saw the redacted edit:\n%s", seen.String())
	}
	closeAll()
	storeLeaks(t, find, dir)
}

// The entry kinds of hitchtype, by what puts a caller's text into them.
// Each kind is in exactly one of the two tables: a kind added to hitchtype
// without a row fails TestEveryInboundTextPassesTheRedactionPoint, so its
// way in is thought about, and driven below when it carries outside text.
var (
	// kindsWithOutsideText carry text a caller hands the runtime; the
	// scenario below sends the canary through each.
	kindsWithOutsideText = map[string]string{
		hitchtype.KindRunStarted:        "Start's input and WithInstructions",
		hitchtype.KindCallReconcile:     "Reconcile's output and by",
		hitchtype.KindApprovalDeny:      "Reject's reason",
		hitchtype.KindRootGranted:       "GrantRoot's by",
		hitchtype.KindRootRevoked:       "RevokeRoot's by",
		hitchtype.KindWakeDelivered:     "Wake's data and by",
		hitchtype.KindCallCompleted:     "CompleteCall's output and by",
		hitchtype.KindMessageAdmitted:   "Send's text, in every mode",
		hitchtype.KindMessageEdited:     "Edit's text",
		hitchtype.KindSessionSteered:    "a steering message's text",
		hitchtype.KindSubmissionStarted: "the started message's text",
	}
	// kindsWithoutOutsideText carry only what the runtime, the model, the
	// agent's code or its tools made (every entry a runner stages passes
	// the same redaction: TestSecretsNeverReachJournalContextOrDeltas).
	kindsWithoutOutsideText = map[string]string{
		hitchtype.KindContext:             "the agent's instructions and what its hooks add",
		hitchtype.KindModelAttempt:        "attempt counters",
		hitchtype.KindModelReply:          "the model's reply",
		hitchtype.KindModelFailed:         "the provider's error",
		hitchtype.KindModelLost:           "attempt counters",
		hitchtype.KindCompacted:           "the model's summary",
		hitchtype.KindCallDecided:         "the policy's verdict",
		hitchtype.KindCallRejected:        "the runtime's reason",
		hitchtype.KindCallHooked:          "a hook's verdict",
		hitchtype.KindHookDecided:         "named hooks' answers (redacted like every staged entry: config's TestHookSecretCanary)",
		hitchtype.KindCallStarted:         "the model's arguments",
		hitchtype.KindCallSettled:         "the tool's result",
		hitchtype.KindCallFailed:          "the tool's error",
		hitchtype.KindCallUncertain:       "the runtime's reason",
		hitchtype.KindCallLost:            "the tool's error or the runtime's reason",
		hitchtype.KindAnswerRefused:       "the model's answer and the validator's reason",
		hitchtype.KindApprovalGrant:       "the approver's name, from the agent's approvers",
		hitchtype.KindApprovalLapse:       "the call's key",
		hitchtype.KindRunWaiting:          "what the run waits on",
		hitchtype.KindRunEnded:            "the run's outcome",
		hitchtype.KindMessageRemoved:      "the message's id",
		hitchtype.KindMessageJoined:       "ids",
		hitchtype.KindSubmissionInterrupt: "ids",
		hitchtype.KindSubmissionEnded:     "the run's outcome",
		hitchtype.KindWakeArmed:           "the model's arguments",
		hitchtype.KindWakeExpired:         "the call's key",
		hitchtype.KindCallPending:         "the call's deadline",
		hitchtype.KindCallTimedOut:        "the call's key",
	}
)

// hitchtypeKinds reads the entry kinds from hitchtype's source: every
// string constant whose name starts with Kind.
func hitchtypeKinds(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("hitchtype", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{} // value → constant
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !strings.HasPrefix(name.Name, "Kind") || i >= len(vs.Values) {
						continue
					}
					if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
						v, err := strconv.Unquote(lit.Value)
						if err != nil {
							t.Fatal(err)
						}
						kinds[v] = name.Name
					}
				}
			}
		}
	}
	if len(kinds) < 30 {
		t.Fatalf("found %d entry kinds in hitchtype: the parse missed them", len(kinds))
	}
	return kinds
}

// Every entry kind that carries a caller's text is driven with a declared
// secret in that text, and holds the marker, never the value; the session's
// metadata and a trigger's definition, kept beside the journals, too. The
// tables above must name every kind hitchtype declares.
func TestEveryInboundTextPassesTheRedactionPoint(t *testing.T) {
	t.Parallel()
	kinds := hitchtypeKinds(t)
	for v, name := range kinds {
		_, out := kindsWithOutsideText[v]
		_, in := kindsWithoutOutsideText[v]
		switch {
		case !out && !in:
			t.Errorf("hitchtype.%s (%q) has no row: say whether a caller's text enters it, and if so drive it below", name, v)
		case out && in:
			t.Errorf("hitchtype.%s (%q) is in both tables", name, v)
		}
	}
	for _, table := range []map[string]string{kindsWithOutsideText, kindsWithoutOutsideText} {
		for v := range table {
			if _, ok := kinds[v]; !ok {
				t.Errorf("%q is in a table but not a kind of hitchtype", v)
			}
		}
	}

	const c = inboundCanary
	const marker = "[secret:CANARY]"
	approvers := members(t)
	// ask: one call per run; each parks the run on what the caller answers.
	ask := func(name string, tools []tool.Tool, pol policy.Policy, call string, args string) *hitch.Agent {
		m := scripted.New(name, scripted.Script{Turns: []scripted.Turn{{Calls: []scripted.Call{{Name: call, Args: args}}}, {Text: "over"}}})
		ws := t.TempDir()
		return build(t, hitch.Spec{Name: name, Model: m, Tools: tools, Policy: pol, Approvers: approvers,
			Workspace: func() (sandbox.Sandbox, []tool.Tool, error) {
				sb, err := local.New(local.Config{Root: ws})
				return sb, tools, err
			}})
	}
	unsure := tool.MustNew("unsure", "Acts; nobody knows whether it did.", func(context.Context, struct{}) (string, error) {
		return "", tool.Uncertain(errors.New("the line went dead"))
	})
	charge := tool.MustNew("charge", "Charges a card.", func(context.Context, struct{}) (string, error) { return "charged", nil })
	ship, err := tool.NewExternal("ship", "Ships; the warehouse answers later.", nil, tool.WithTimeout(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	reconciled := ask("reconciled", []tool.Tool{unsure}, policy.AllowAll(), "unsure", "{}")
	rejected := ask("rejected", []tool.Tool{charge}, payPolicy, "charge", "{}")
	woken := ask("woken", []tool.Tool{tool.AwaitEvent()}, policy.AllowAll(), "await_event", awaitDeploy)
	completed := ask("completed", []tool.Tool{ship}, policy.AllowAll(), "ship", "{}")
	started := make(chan string, 1)
	release := make(chan struct{})
	chatModel := &funcModel{fn: func(_ context.Context, req *model.Request) (*model.Reply, error) {
		if last := req.Messages[len(req.Messages)-1]; last.Role == model.RoleUser && last.Text == "task" {
			return &model.Reply{ToolCalls: []model.ToolCall{{ID: "c1", Name: "hold", Arguments: "{}"}}}, nil
		}
		return text("done"), nil
	}}
	chat := build(t, hitch.Spec{Name: "chat", Model: chatModel, Tools: []tool.Tool{holdTool(t, "hold", started, release)}})
	rt, _, find, dir, closeAll := redactingSetup(t, reconciled, rejected, woken, completed, chat)
	ctx := t.Context()
	var runs []string
	park := func(a *hitch.Agent, opts ...hitch.StartOption) string {
		run := runToRest(t, rt, a, "go "+c, opts...)
		if run.Status != hitchtype.StatusWaiting {
			t.Fatalf("%s: %s, want waiting", a.Name(), run.Status)
		}
		runs = append(runs, run.ID)
		return run.ID
	}
	do := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	id := park(reconciled, hitch.WithInstructions("answer as "+c))
	root := t.TempDir()
	do("grant", rt.GrantRoot(ctx, id, root, "ops "+c))
	do("revoke", rt.RevokeRoot(ctx, id, root, "ops "+c))
	do("reconcile", rt.Reconcile(ctx, id, hitch.Reconciliation{Call: "t1c1", Output: "it did: " + c, By: "ops " + c}))
	id = park(rejected)
	do("reject", rt.Reject(ctx, id, "t1c1", proof(t, approvers, "alice", "a-secret", "payments"), "not with "+c))
	id = park(woken)
	do("wake", rt.Wake(ctx, id, "deploy.done", json.RawMessage(`{"note":"`+c+`"}`), "ci "+c))
	id = park(completed)
	do("complete", rt.CompleteCall(ctx, id, hitch.Completion{Call: "t1c1", Output: "shipped " + c, By: "warehouse " + c}))
	for _, id := range runs {
		if run, err := rt.Await(ctx, id); err != nil || run.Status != hitchtype.StatusCompleted {
			t.Fatalf("run %s: %s %v", id, run.Status, err)
		}
	}

	s, _, err := rt.Sessions().Open(ctx, chat, sessions.Options{ID: "ses", Metadata: map[string]any{"user": c}})
	do("open session", err)
	send(t, rt, s.ID, "task", sessions.SendOptions{})
	<-started
	send(t, rt, s.ID, "steer "+c, sessions.SendOptions{Mode: sessions.ModeSteer})
	queued := send(t, rt, s.ID, "queued "+c, sessions.SendOptions{})
	do("edit", rt.Sessions().Edit(ctx, s.ID, queued.MessageID, "edited "+c))
	close(release)
	status := awaitSession(t, rt, s.ID)
	for _, sub := range status.Submissions {
		runs = append(runs, sub.RunID)
	}
	_, _, err = rt.Triggers().Create(ctx, triggers.Spec{ID: "later", At: time.Now().Add(24 * time.Hour), Agent: "chat", Input: "fire " + c},
		triggers.Options{})
	do("create trigger", err)

	var entries []store.Entry
	for _, id := range runs {
		entries = append(entries, journal(t, rt, id)...)
	}
	ses, err := rt.Sessions().Journal(ctx, s.ID, 0, 0)
	do("session journal", err)
	for _, e := range ses {
		entries = append(entries, store.Entry{Kind: e.Kind, Data: e.Data})
	}
	carried := map[string]bool{}
	for _, e := range entries {
		if strings.Contains(string(e.Data), marker) {
			carried[e.Kind] = true
		}
		if l := find.Find(e.Data); l != "" {
			t.Errorf("a %s entry holds %s", e.Kind, l)
		}
	}
	for kind, how := range kindsWithOutsideText {
		if !carried[kind] {
			t.Errorf("no %s entry carried the caller's text (%s) as %s", kind, how, marker)
		}
	}
	closeAll()
	storeLeaks(t, find, dir)
}
