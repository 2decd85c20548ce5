package hitch_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/sessions"
	"github.com/hitch-dev/hitch/tool"
)

// longReply calls add with a bulky argument for a number of turns, then
// answers; asked to summarize (a request without tools), it summarizes.
func longReply(turns int) func(context.Context, *model.Request) (*model.Reply, error) {
	return func(_ context.Context, req *model.Request) (*model.Reply, error) {
		usage := &model.Usage{InputTokens: model.Int64(100), OutputTokens: model.Int64(10), CachedInputTokens: model.Int64(0)}
		// Adds done: tool results shown, plus those an earlier summary
		// stands for.
		done := 0
		for _, msg := range req.Messages {
			if msg.Role == model.RoleTool {
				done++
			}
			if i := strings.Index(msg.Text, "SUMMARY adds="); i >= 0 && strings.HasPrefix(msg.Text, "Summary of the earlier part") {
				var n int
				fmt.Sscanf(msg.Text[i:], "SUMMARY adds=%d", &n)
				done += n
			}
		}
		if len(req.Tools) == 0 {
			return &model.Reply{Text: fmt.Sprintf("SUMMARY adds=%d", done), Usage: usage}, nil
		}
		reply := &model.Reply{Usage: usage}
		if done >= turns {
			reply.Text = "finished"
		} else {
			reply.ToolCalls = []model.ToolCall{{ID: fmt.Sprintf("c%d", len(req.Messages)), Name: "add",
				Arguments: fmt.Sprintf(`{"a":%d,"b":1,"note":"%s"}`, done, strings.Repeat("x", 400))}}
		}
		return reply, nil
	}
}

func TestCompactionNearTheContextWindow(t *testing.T) {
	t.Parallel()
	m := &funcModel{fn: longReply(10)}
	add := tool.MustNew("add", "Adds.", func(_ context.Context, in struct {
		A    int    `json:"a"`
		B    int    `json:"b"`
		Note string `json:"note"`
	}) (int, error) {
		return in.A + in.B, nil
	})
	a := build(t, hitch.Spec{Model: m, Tools: []tool.Tool{add}, Limits: hitch.Limits{ModelAttempts: 40, ContextWindow: 800, KeepTurns: 2}})
	rt, _ := setup(t, a)
	run := runToRest(t, rt, a, "add ten times")
	if run.Status != hitchtype.StatusCompleted || run.Outcome.Answer != "finished" {
		t.Fatalf("status %s, outcome %+v", run.Status, run.Outcome)
	}
	es := journal(t, rt, run.ID)
	if strings.Count(kinds(es), "context.compacted") == 0 {
		t.Fatalf("no compaction happened: %s", kinds(es))
	}
	// Every request after a compaction starts with the input and the
	// summary, and never splits a tool call from its result.
	compacted := false
	reqs := m.requests()
	for i, req := range reqs {
		if len(req.Tools) == 0 {
			compacted = true
			continue
		}
		if est := len(fmt.Sprint(req.Messages)) / 4; est > 3000 {
			t.Errorf("request %d is about %d tokens: compaction did not bound it", i, est)
		}
		if !compacted {
			continue
		}
		if !strings.HasPrefix(req.Messages[1].Text, "Summary of the earlier part") {
			t.Fatalf("request %d does not carry the summary: %+v", i, req.Messages[1])
		}
		for j, msg := range req.Messages {
			if msg.Role == model.RoleTool && (j == 0 || req.Messages[j-1].Role != model.RoleAssistant && req.Messages[j-1].Role != model.RoleTool) {
				t.Fatalf("request %d: a tool result at %d has no call before it", i, j)
			}
		}
	}
	n := strings.Count(kinds(es), "context.compacted")
	if len(reqs) != 11+n {
		t.Errorf("%d model calls with %d compactions; want the 11 the task needs plus the summaries: the summary lost work", len(reqs), n)
	}
	// The summary calls count as model attempts and their usage is kept.
	if u := run.Outcome.Usage; u.InputTokens == nil || u.Generations != run.Outcome.Attempts {
		t.Errorf("usage %+v over %d attempts", u, run.Outcome.Attempts)
	}
}

// TestSessionTranscriptIsCompacted: a session of many short exchanges. The
// transcript each submission starts from grows by one exchange a time; once
// a request would fill most of the context window, the submission's run
// summarizes the older part of it, and the next submissions start from that
// summary and the exchanges since, so what the model is given stays
// bounded. The session journal keeps every message and answer.
func TestSessionTranscriptIsCompacted(t *testing.T) {
	t.Parallel()
	const exchanges, window = 200, 400
	var mu sync.Mutex
	var asked []*model.Request // requests for answers, not summaries
	summaries := 0
	m := &funcModel{fn: func(_ context.Context, req *model.Request) (*model.Reply, error) {
		if strings.Contains(req.Instructions, "You compress the history") {
			mu.Lock()
			summaries++
			n := summaries
			mu.Unlock()
			return &model.Reply{Text: fmt.Sprintf("SUMMARY %d", n)}, nil
		}
		mu.Lock()
		asked = append(asked, req)
		mu.Unlock()
		return &model.Reply{Text: "answer to " + lastUser(req)}, nil
	}}
	a := build(t, hitch.Spec{Model: m, Limits: hitch.Limits{ContextWindow: window, KeepTurns: 3}})
	rt, _ := setup(t, a)
	ctx := context.Background()
	if _, _, err := rt.Sessions().Open(ctx, a, sessions.Options{ID: "long"}); err != nil {
		t.Fatal(err)
	}
	for i := range exchanges {
		if _, err := rt.Sessions().Send(ctx, "long", fmt.Sprintf("question %03d", i), sessions.SendOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := rt.Sessions().Await(ctx, "long"); err != nil {
			t.Fatal(err)
		}
	}
	if len(asked) != exchanges {
		t.Fatalf("%d answer requests for %d messages", len(asked), exchanges)
	}
	// Bounded: no request given to the model for an answer outgrows the
	// context window (estimated as hitch does, 4 bytes a token), however
	// long the session.
	longest, most := 0, 0
	for _, req := range asked {
		n := len(req.Instructions)
		for _, msg := range req.Messages {
			n += len(msg.Text)
		}
		longest, most = max(longest, n/4+1), max(most, len(req.Messages))
	}
	if longest > window {
		t.Errorf("a request of about %d tokens (%d messages) after %d exchanges, over the %d-token window", longest, most, exchanges, window)
	}
	t.Logf("%d exchanges: %d summaries, the largest answer request about %d tokens, %d messages", exchanges, summaries, longest, most)
	if summaries == 0 || summaries > exchanges/5 {
		t.Errorf("%d summaries for %d exchanges", summaries, exchanges)
	}
	// The last request starts from a summary and keeps the latest
	// exchanges verbatim, in order, ending with the new question.
	last := asked[len(asked)-1]
	if len(last.Messages) == 0 || !strings.HasPrefix(last.Messages[0].Text, "Summary of the earlier part") || !strings.Contains(last.Messages[0].Text, "SUMMARY") {
		t.Errorf("the last request does not start from a summary: %+v", last.Messages[:min(3, len(last.Messages))])
	}
	var texts []string
	for _, msg := range last.Messages[1:] {
		texts = append(texts, msg.Text)
	}
	want := fmt.Sprintf("question %03d|answer to question %03d|question %03d", exchanges-2, exchanges-2, exchanges-1)
	if got := strings.Join(texts, "|"); !strings.HasSuffix(got, want) {
		t.Errorf("the last request ends %q, want the latest exchanges verbatim, ending %q", got, want)
	}
	// Nothing is lost from the session journal.
	st, err := rt.Sessions().Status(ctx, "long")
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Submissions) != exchanges {
		t.Fatalf("%d submissions, want %d", len(st.Submissions), exchanges)
	}
	for i, sub := range st.Submissions {
		if sub.Text != fmt.Sprintf("question %03d", i) || sub.Answer != "answer to "+sub.Text {
			t.Fatalf("submission %d: %+v", i, sub)
		}
	}
}
