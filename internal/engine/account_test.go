package engine

import (
	"context"
	"encoding/json"
	"iter"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/hook"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/tool"
)

// recorder keeps every request a model is sent; a compaction request
// gets a summary, every other request goes to the script.
type recorder struct {
	model.Model
	mu   sync.Mutex
	reqs []*model.Request
}

func (m *recorder) Generate(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	if req.Instructions == compactInstructions {
		return func(yield func(*model.Chunk, error) bool) {
			yield(&model.Chunk{Reply: &model.Reply{Text: "the echo tool was called with a long text",
				Usage: &model.Usage{InputTokens: model.Int64(50), OutputTokens: model.Int64(9)}}}, nil)
		}
	}
	return m.Model.Generate(ctx, req)
}

// addsExtra is a pre-generate hook that adds a line to every turn.
type addsExtra struct{ hook.Base }

const hookLine = "The date is 2026-12-01."

func (addsExtra) PreGenerate(context.Context, hook.Generate) (string, error) { return hookLine, nil }

// ceil4 is the bytes/4 estimate of n bytes, worked out here on its own.
func ceil4(n int) int64 { return int64(n+3) / 4 }

// wantAccount works out, from the request the model was sent, what its
// account must say: instructions split by the layers the test laid, the
// transcript by role with the summary told by its opening words.
func wantAccount(req *model.Request, system, agent, hookText string) hitchtype.ContextCategories {
	var c hitchtype.ContextCategories
	rest := len(req.Instructions)
	if system != "" {
		c.System, rest = ceil4(len(system)), rest-len(system)
	}
	if agent != "" {
		c.Agent, rest = ceil4(len(agent)), rest-len(agent)
	}
	if hookText != "" {
		c.Hook, rest = ceil4(len("\n\n"+hookText)), rest-len("\n\n"+hookText)
	}
	c.Run = ceil4(rest)
	var user, asst, res, sum int
	for _, m := range req.Messages {
		n := len(m.Text) + len(m.ToolCallID) + len(m.ToolName)
		for _, tc := range m.ToolCalls {
			n += len(tc.ID) + len(tc.Name) + len(tc.Arguments)
		}
		switch {
		case m.Role == model.RoleAssistant:
			asst += n
		case m.Role == model.RoleTool:
			res += n
		case strings.HasPrefix(m.Text, "Summary of the earlier part of this conversation"):
			sum += n
		default:
			user += n
		}
	}
	c.User, c.Assistant, c.ToolResults, c.Summary = ceil4(user), ceil4(asst), ceil4(res), ceil4(sum)
	var tools int
	for _, t := range req.Tools {
		tools += len(t.Name) + len(t.Description) + len(t.Schema)
	}
	c.Tools = ceil4(tools)
	if req.Answer != nil {
		c.AnswerSchema = ceil4(len(req.Answer.Name) + len(req.Answer.Schema))
	}
	return c
}

// requestsOf folds a run's journal into its model requests.
func requestsOf(t *testing.T, st store.Store, runID string) []hitchtype.ContextRequest {
	t.Helper()
	es, err := readAll(context.Background(), st, runID)
	if err != nil {
		t.Fatal(err)
	}
	var f hitchtype.ContextFold
	for _, e := range es {
		if err := f.Add(e.Kind, e.Data); err != nil {
			t.Fatal(err)
		}
	}
	return f.Requests()
}

func echoTool() tool.Tool {
	return tool.MustNew("echo", "Echoes its text.", func(_ context.Context, in struct {
		Text string `json:"text"`
	}) (string, error) {
		return in.Text, nil
	})
}

// TestContextAccountOfEachRequest: every model request's entry says where
// its tokens sit, category by category as the request the model got shows
// them, sums to the estimate, and names the window and the estimator; the
// reply's usage is paired with it.
func TestContextAccountOfEachRequest(t *testing.T) {
	ctx := context.Background()
	st, _ := openClock(t)
	m := &recorder{Model: scripted.New("m", scripted.Script{Turns: []scripted.Turn{
		{Calls: []scripted.Call{{Name: "echo", Args: `{"text":"hello there"}`}}},
		{Text: `{"n": 3}`},
	}})}
	a := testAgent(m)
	a.Instructions = "You count things and answer in JSON."
	a.Tools = []tool.Tool{echoTool()}
	a.Hooks = addsExtra{}
	a.Limits.ContextWindow = 100_000
	spec, err := NewAnswerSpec(json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`))
	if err != nil {
		t.Fatal(err)
	}
	a.Answer = spec
	if err := a.Prepare(); err != nil {
		t.Fatal(err)
	}
	e := testEngine(st, "node", a, time.Minute, 20*time.Second)
	defer e.Close(ctx)
	if _, err := e.Start(ctx, a, StartParams{ID: "r", Input: "How many?", Instructions: "Be brief."}); err != nil {
		t.Fatal(err)
	}
	run, err := e.Await(ctx, "r")
	if err != nil || run.Status != hitchtype.StatusCompleted {
		t.Fatalf("run: %+v %v", run, err)
	}
	reqs := requestsOf(t, st, "r")
	if len(reqs) != 2 || len(m.reqs) != 2 {
		t.Fatalf("%d requests journaled, %d sent; want 2", len(reqs), len(m.reqs))
	}
	for i, r := range reqs {
		acct := r.Context
		if acct == nil {
			t.Fatalf("request %d has no context account", i+1)
		}
		if acct.Estimator != "bytes/4" || acct.Window != 100_000 {
			t.Errorf("request %d: estimator %q, window %d", i+1, acct.Estimator, acct.Window)
		}
		want := wantAccount(m.reqs[i], "", a.Instructions, hookLine)
		if acct.Categories != want {
			t.Errorf("request %d: categories\n%+v, want\n%+v", i+1, acct.Categories, want)
		}
		if acct.Estimate != want.Sum() || acct.Estimate != acct.Categories.Sum() {
			t.Errorf("request %d: estimate %d, categories sum to %d", i+1, acct.Estimate, want.Sum())
		}
		for name, v := range map[string]int64{"agent": want.Agent, "run": want.Run, "hook": want.Hook, "tools": want.Tools,
			"user": want.User, "answer_schema": want.AnswerSchema} {
			if v == 0 {
				t.Errorf("request %d: category %s is empty", i+1, name)
			}
		}
		if r.Result != "reply" || r.Usage == nil || r.Usage.InputTokens == nil {
			t.Errorf("request %d: result %q, usage %+v", i+1, r.Result, r.Usage)
		}
	}
	if c := reqs[1].Context.Categories; c.Assistant == 0 || c.ToolResults == 0 {
		t.Errorf("the second request holds a reply and a result: %+v", c)
	}
}

// TestContextAccountThroughCompaction: the summary call's account counts
// hitch's own instructions, and the requests after it count the summary
// apart from the user's messages.
func TestContextAccountThroughCompaction(t *testing.T) {
	ctx := context.Background()
	st, _ := openClock(t)
	long := `{"text":"` + strings.Repeat("lorem ipsum ", 40) + `"}`
	m := &recorder{Model: scripted.New("m", scripted.Script{Turns: []scripted.Turn{
		{Calls: []scripted.Call{{Name: "echo", Args: long}}},
	}, Repeat: true})}
	a := testAgent(m)
	a.Tools = []tool.Tool{echoTool()}
	a.Limits.ContextWindow = 600
	a.Limits.KeepTurns = 1
	a.Limits.ModelAttempts = 6
	if err := a.Prepare(); err != nil {
		t.Fatal(err)
	}
	e := testEngine(st, "node", a, time.Minute, 20*time.Second)
	defer e.Close(ctx)
	if _, err := e.Start(ctx, a, StartParams{ID: "r", Input: "Echo until told to stop."}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Await(ctx, "r"); err != nil {
		t.Fatal(err)
	}
	reqs := requestsOf(t, st, "r")
	if len(reqs) != len(m.reqs) {
		t.Fatalf("%d requests journaled, %d sent", len(reqs), len(m.reqs))
	}
	var compactions, summarized int
	for i, r := range reqs {
		acct := r.Context
		system := ""
		if r.Purpose == "compaction" {
			system, compactions = compactInstructions, compactions+1
		}
		want := wantAccount(m.reqs[i], system, a.Instructions, "")
		if acct == nil || acct.Categories != want || acct.Estimate != want.Sum() || acct.Window != 600 {
			t.Fatalf("request %d (%s): account %+v, want categories %+v summing to %d in a window of 600", i+1, r.Purpose, acct, want, want.Sum())
		}
		if r.Purpose == "" && want.Summary > 0 {
			summarized++
		}
	}
	if compactions == 0 || summarized == 0 {
		t.Fatalf("%d compactions, %d requests carrying a summary; want both", compactions, summarized)
	}
}

// TestReplayOfAJournalWithoutContextAccounts: a run parked by a journal
// written before accounts existed (its model.attempt entries have no
// context) resumes and ends; its old requests fold with no account, its
// new ones with one.
func TestReplayOfAJournalWithoutContextAccounts(t *testing.T) {
	ctx := context.Background()
	m := scripted.New("m", scripted.Script{Turns: []scripted.Turn{{Calls: []scripted.Call{{Name: "echo", Args: `{"text":"x"}`}}}, {Text: "done"}}})
	st, eng, _, db := parkedOnFile(t, m, echoTool())
	res, err := db.ExecContext(ctx, `UPDATE journal SET data = json_remove(data, '$.context') WHERE kind = 'model.attempt'`)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("%d model.attempt rows made old, want 1", n)
	}
	if old := requestsOf(t, st, "r"); len(old) != 1 || old[0].Context != nil || old[0].Result != "reply" {
		t.Fatalf("old journal folds to %+v", old)
	}
	if err := eng.AnswerApproval(ctx, "r", ApprovalAnswerParams{Call: "t1c1", Approve: true, By: "ops"}, time.Second); err != nil {
		t.Fatal(err)
	}
	run, err := eng.Await(ctx, "r")
	if err != nil || run.Status != hitchtype.StatusCompleted {
		t.Fatalf("resumed run: %+v %v", run, err)
	}
	reqs := requestsOf(t, st, "r")
	if len(reqs) != 2 || reqs[0].Context != nil || reqs[1].Context == nil || reqs[1].Context.Estimate != reqs[1].Context.Categories.Sum() {
		t.Fatalf("requests after the replay: %+v", reqs)
	}
}
