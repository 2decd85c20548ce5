package hitch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/hitchtest"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/sessions"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/tool"
)

// funcModel answers with fn and records every request.
type funcModel struct {
	fn   func(ctx context.Context, req *model.Request) (*model.Reply, error)
	mu   sync.Mutex
	reqs []*model.Request
}

func (m *funcModel) Name() string { return "test/func" }

func (m *funcModel) Generate(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	m.mu.Lock()
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	return func(yield func(*model.Chunk, error) bool) {
		r, err := m.fn(ctx, req)
		if err != nil {
			yield(nil, err)
			return
		}
		yield(&model.Chunk{Reply: r}, nil)
	}
}

func (m *funcModel) requests() []*model.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]*model.Request(nil), m.reqs...)
}

func lastUser(req *model.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == model.RoleUser {
			return req.Messages[i].Text
		}
	}
	return ""
}

func text(s string) *model.Reply {
	return &model.Reply{Text: s, Usage: &model.Usage{InputTokens: model.Int64(10), OutputTokens: model.Int64(2)}}
}

// echo answers every request with the last user message.
func echo() *funcModel {
	return &funcModel{fn: func(_ context.Context, req *model.Request) (*model.Reply, error) {
		return text("echo: " + lastUser(req)), nil
	}}
}

// validTranscript fails when a request holds a tool call without exactly
// one result, in order, before the next message of another kind.
func validTranscript(t *testing.T, req *model.Request) {
	t.Helper()
	var pending []string
	for i, m := range req.Messages {
		switch m.Role {
		case model.RoleTool:
			if len(pending) == 0 || pending[0] != m.ToolCallID {
				t.Fatalf("message %d: a result for %q, but the calls waiting for results are %v", i, m.ToolCallID, pending)
			}
			pending = pending[1:]
		default:
			if len(pending) > 0 {
				t.Fatalf("message %d (%s) comes before the results of calls %v", i, m.Role, pending)
			}
			for _, c := range m.ToolCalls {
				pending = append(pending, c.ID)
			}
		}
	}
	if len(pending) > 0 {
		t.Fatalf("the request ends with calls %v without results", pending)
	}
}

func awaitSession(t *testing.T, rt *hitch.Runtime, id string) sessions.Status {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := rt.Sessions().Await(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func openSession(t *testing.T, rt *hitch.Runtime, a *hitch.Agent, id string) sessions.Session {
	t.Helper()
	s, _, err := rt.Sessions().Open(t.Context(), a, sessions.Options{ID: id, Metadata: map[string]any{"user": "ann"}})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func send(t *testing.T, rt *hitch.Runtime, sid, msg string, o sessions.SendOptions) sessions.SendResult {
	t.Helper()
	res, err := rt.Sessions().Send(t.Context(), sid, msg, o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func sessionKinds(t *testing.T, rt *hitch.Runtime, sid string) []string {
	t.Helper()
	es, err := rt.Sessions().Journal(t.Context(), sid, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Kind
	}
	return out
}

func TestSessionQueueIsFIFOAndExactlyOnce(t *testing.T) {
	t.Parallel()
	m := echo()
	a := build(t, hitch.Spec{Name: "chat", Model: m})
	rt, _ := setup(t, a)
	s := openSession(t, rt, a, "fifo")
	const n = 6
	for i := range n {
		send(t, rt, s.ID, fmt.Sprintf("m%d", i), sessions.SendOptions{})
	}
	st := awaitSession(t, rt, s.ID)
	if len(st.Submissions) != n || len(st.Queue) != 0 || st.Session.ActiveRun != "" {
		t.Fatalf("status: %d submissions, %d queued, active %q", len(st.Submissions), len(st.Queue), st.Session.ActiveRun)
	}
	for i, sub := range st.Submissions {
		want := fmt.Sprintf("m%d", i)
		if sub.Text != want || sub.Outcome != hitchtype.SubmissionCompleted || sub.Answer != "echo: "+want {
			t.Fatalf("submission %d = %+v, want %s completed", i, sub, want)
		}
		if sub.Usage == nil || sub.Usage.InputTokens == nil || *sub.Usage.InputTokens != 10 {
			t.Fatalf("submission %d usage = %+v", i, sub.Usage)
		}
	}
	if st.Usage.InputTokens == nil || *st.Usage.InputTokens != 10*n || st.Usage.Generations != n {
		t.Fatalf("session usage = %+v", st.Usage)
	}
	reqs := m.requests()
	if len(reqs) != n {
		t.Fatalf("%d model requests, want %d (one per submission)", len(reqs), n)
	}
	// Each submission sees the earlier ones: their messages and answers.
	for i, req := range reqs {
		validTranscript(t, req)
		if len(req.Messages) != 2*i+1 {
			t.Fatalf("request %d has %d messages, want %d", i, len(req.Messages), 2*i+1)
		}
		for j := range i {
			if req.Messages[2*j].Text != fmt.Sprintf("m%d", j) || req.Messages[2*j+1].Text != fmt.Sprintf("echo: m%d", j) {
				t.Fatalf("request %d: history %d = %+v", i, j, req.Messages[2*j:2*j+2])
			}
		}
	}
}

func TestSessionSendIsIdempotentByKey(t *testing.T) {
	t.Parallel()
	a := build(t, hitch.Spec{Name: "chat", Model: echo()})
	rt, _ := setup(t, a)
	s := openSession(t, rt, a, "idem")
	first := send(t, rt, s.ID, "hello", sessions.SendOptions{IdempotencyKey: "k1"})
	again := send(t, rt, s.ID, "hello", sessions.SendOptions{IdempotencyKey: "k1"})
	if first.Duplicate || !again.Duplicate || again.MessageID != first.MessageID || again.Position != first.Position {
		t.Fatalf("first %+v, again %+v", first, again)
	}
	st := awaitSession(t, rt, s.ID)
	if len(st.Submissions) != 1 {
		t.Fatalf("%d submissions, want 1", len(st.Submissions))
	}
	// Reopening the session returns it; another agent is refused.
	if _, _, err := rt.Sessions().Open(t.Context(), a, sessions.Options{ID: s.ID}); err != nil {
		t.Fatal(err)
	}
	other := build(t, hitch.Spec{Name: "other", Model: echo()})
	rt2, _ := setup(t, a, other)
	openSession(t, rt2, a, "mine")
	if _, _, err := rt2.Sessions().Open(t.Context(), other, sessions.Options{ID: "mine"}); !errors.Is(err, sessions.ErrAgent) {
		t.Fatalf("open another agent's session: %v", err)
	}
}

// TestSessionsClientOpenAndList: the runtime's client says whether Open
// created the session, and pages List with a cursor; a nil or unregistered
// agent is refused as before.
func TestSessionsClientOpenAndList(t *testing.T) {
	t.Parallel()
	a := build(t, hitch.Spec{Name: "chat", Model: echo()})
	rt, _ := setup(t, a)
	ctx := t.Context()
	for i, want := range []bool{true, false} {
		if s, created, err := rt.Sessions().Open(ctx, a, sessions.Options{ID: "s1"}); err != nil || created != want || s.ID != "s1" {
			t.Fatalf("open %d: %+v created=%v %v", i, s, created, err)
		}
	}
	if _, _, err := rt.Sessions().Open(ctx, a, sessions.Options{ID: "s2"}); err != nil {
		t.Fatal(err)
	}
	page, next, err := rt.Sessions().List(ctx, sessions.ListParams{Limit: 1})
	if err != nil || len(page) != 1 || page[0].ID != "s1" || next != "s1" {
		t.Fatalf("first page: %+v next=%q %v", page, next, err)
	}
	page, next, err = rt.Sessions().List(ctx, sessions.ListParams{After: next, Limit: 2})
	if err != nil || len(page) != 1 || page[0].ID != "s2" || next != "" {
		t.Fatalf("last page: %+v next=%q %v", page, next, err)
	}
	var none *hitch.Agent
	if _, _, err := rt.Sessions().Open(ctx, none, sessions.Options{}); err == nil || !strings.Contains(err.Error(), "agent is nil") {
		t.Fatalf("open with a nil agent: %v", err)
	}
	stranger := build(t, hitch.Spec{Name: "stranger", Model: echo()})
	if _, _, err := rt.Sessions().Open(ctx, stranger, sessions.Options{}); !errors.Is(err, hitch.ErrUnknownAgent) {
		t.Fatalf("open with an unregistered agent: %v", err)
	}
}

func TestSessionBadInput(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	m := &funcModel{fn: func(ctx context.Context, req *model.Request) (*model.Reply, error) {
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return text("ok"), nil
	}}
	a := build(t, hitch.Spec{Name: "chat", Model: m})
	rt, _ := hitchtest.New(t, hitch.Config{Agents: []*hitch.Agent{a}, Sessions: sessions.Config{MaxMessageBytes: 64}})
	ctx := t.Context()
	if _, err := rt.Sessions().Send(ctx, "nope", "hi", sessions.SendOptions{}); !errors.Is(err, sessions.ErrNotFound) {
		t.Fatalf("send to an unknown session: %v", err)
	}
	s := openSession(t, rt, a, "bad")
	_, err := rt.Sessions().Send(ctx, s.ID, strings.Repeat("x", 65), sessions.SendOptions{})
	if !errors.Is(err, sessions.ErrMessageTooLarge) || !strings.Contains(err.Error(), "MaxMessageBytes") {
		t.Fatalf("oversize message: %v", err)
	}
	if _, err := rt.Sessions().Send(ctx, s.ID, "hi", sessions.SendOptions{Mode: "shout"}); err == nil || !strings.Contains(err.Error(), "SendOptions.Mode") {
		t.Fatalf("bad mode: %v", err)
	}
	if _, err := rt.Sessions().Send(ctx, s.ID, "", sessions.SendOptions{}); err == nil {
		t.Fatal("an empty message was admitted")
	}
	if _, _, err := rt.Sessions().Open(ctx, a, sessions.Options{ID: "has space"}); !errors.Is(err, sessions.ErrBadID) {
		t.Fatalf("bad session id: %v", err)
	}
	first := send(t, rt, s.ID, "first", sessions.SendOptions{})
	second := send(t, rt, s.ID, "second", sessions.SendOptions{})
	third := send(t, rt, s.ID, "third", sessions.SendOptions{})
	var mse *sessions.MessageStateError
	if err := rt.Sessions().Edit(ctx, s.ID, first.MessageID, "changed"); !errors.As(err, &mse) || mse.State != hitchtype.StateStarted {
		t.Fatalf("edit a started submission: %v", err)
	}
	if err := rt.Sessions().Remove(ctx, s.ID, first.MessageID); !errors.As(err, &mse) {
		t.Fatalf("remove a started submission: %v", err)
	}
	if err := rt.Sessions().Edit(ctx, s.ID, "msg_none", "x"); !errors.Is(err, sessions.ErrMessageNotFound) {
		t.Fatalf("edit an unknown message: %v", err)
	}
	if err := rt.Sessions().Edit(ctx, s.ID, second.MessageID, "second, edited"); err != nil {
		t.Fatal(err)
	}
	if err := rt.Sessions().Remove(ctx, s.ID, third.MessageID); err != nil {
		t.Fatal(err)
	}
	q, err := rt.Sessions().Queue(ctx, s.ID, 0)
	if err != nil || len(q) != 1 || q[0].Text != "second, edited" {
		t.Fatalf("queue: %+v %v", q, err)
	}
	close(release)
	got := awaitSession(t, rt, s.ID)
	if len(got.Submissions) != 2 || got.Submissions[1].Text != "second, edited" {
		t.Fatalf("submissions: %+v", got.Submissions)
	}
}

// holdTool blocks until release is closed or its context ends; started
// gets a value when it begins.
func holdTool(t *testing.T, name string, started chan<- string, release <-chan struct{}) tool.Tool {
	t.Helper()
	return tool.MustNew(name, "Waits.", func(ctx context.Context, _ struct{}) (string, error) {
		started <- name
		select {
		case <-release:
			return name + " done", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	})
}

func TestSessionSteerJoinsAtTheTurnBoundary(t *testing.T) {
	t.Parallel()
	started := make(chan string, 4)
	release := make(chan struct{})
	m := &funcModel{fn: func(_ context.Context, req *model.Request) (*model.Reply, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == model.RoleUser && last.Text == "task" {
			return &model.Reply{ToolCalls: []model.ToolCall{{ID: "c1", Name: "hold", Arguments: "{}"}}}, nil
		}
		return text("done after: " + lastUser(req)), nil
	}}
	a := build(t, hitch.Spec{Name: "chat", Model: m, Tools: []tool.Tool{holdTool(t, "hold", started, release)}})
	rt, _ := setup(t, a)
	s := openSession(t, rt, a, "steer")
	send(t, rt, s.ID, "task", sessions.SendOptions{})
	<-started
	steer := send(t, rt, s.ID, "also check the logs", sessions.SendOptions{Mode: sessions.ModeSteer})
	close(release)
	st := awaitSession(t, rt, s.ID)
	if len(st.Submissions) != 1 {
		t.Fatalf("%d submissions, want 1 (the steer joined it)", len(st.Submissions))
	}
	sub := st.Submissions[0]
	if sub.Answer != "done after: also check the logs" || len(sub.Joined) != 1 || sub.Joined[0] != steer.MessageID {
		t.Fatalf("submission = %+v", sub)
	}
	// The run's journal: the call settles, then the message joins, then
	// the next model request.
	es := journal(t, rt, sub.RunID)
	idx := func(kind string, from int) int {
		for i := from; i < len(es); i++ {
			if es[i].Kind == kind {
				return i
			}
		}
		t.Fatalf("no %s after %d in %s", kind, from, kinds(es))
		return -1
	}
	settled := idx(hitchtype.KindCallSettled, 0)
	joined := idx(hitchtype.KindSessionSteered, settled)
	idx(hitchtype.KindModelAttempt, joined)
	reqs := m.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	for _, r := range reqs {
		validTranscript(t, r)
	}
	msgs := reqs[1].Messages
	if l := msgs[len(msgs)-1]; l.Role != model.RoleUser || l.Text != "also check the logs" || msgs[len(msgs)-2].Role != model.RoleTool {
		t.Fatalf("second request ends %+v", msgs[len(msgs)-2:])
	}
	// A steer into an idle session is a normal send.
	send(t, rt, s.ID, "next", sessions.SendOptions{Mode: sessions.ModeSteer})
	if st := awaitSession(t, rt, s.ID); len(st.Submissions) != 2 || st.Submissions[1].Text != "next" || st.Submissions[1].Outcome != hitchtype.SubmissionCompleted {
		t.Fatalf("idle steer: %+v", st.Submissions)
	}
}

func TestSessionSteerAfterTheLastBoundaryIsQueued(t *testing.T) {
	t.Parallel()
	inModel := make(chan struct{}, 1)
	release := make(chan struct{})
	m := &funcModel{fn: func(ctx context.Context, req *model.Request) (*model.Reply, error) {
		if lastUser(req) == "task" {
			inModel <- struct{}{}
			<-release
		}
		return text("re: " + lastUser(req)), nil
	}}
	a := build(t, hitch.Spec{Name: "chat", Model: m})
	rt, _ := setup(t, a)
	s := openSession(t, rt, a, "late")
	send(t, rt, s.ID, "task", sessions.SendOptions{})
	<-inModel // the final turn is in flight: no boundary is left
	send(t, rt, s.ID, "late steer", sessions.SendOptions{Mode: sessions.ModeSteer})
	close(release)
	st := awaitSession(t, rt, s.ID)
	if len(st.Submissions) != 2 || st.Submissions[1].Text != "late steer" || st.Submissions[1].Answer != "re: late steer" {
		t.Fatalf("submissions = %+v", st.Submissions)
	}
}

func TestSessionInterruptLeavesAValidTranscript(t *testing.T) {
	t.Parallel()
	started := make(chan string, 4)
	never := make(chan struct{})
	m := &funcModel{fn: func(_ context.Context, req *model.Request) (*model.Reply, error) {
		switch last := req.Messages[len(req.Messages)-1]; {
		case last.Role == model.RoleUser && last.Text == "task":
			return &model.Reply{Text: "working", ToolCalls: []model.ToolCall{
				{ID: "c1", Name: "quick", Arguments: "{}"},
				{ID: "c2", Name: "hold", Arguments: "{}"},
			}}, nil
		case last.Role == model.RoleUser:
			return text("stopped; " + last.Text), nil
		}
		return text("unexpected"), nil
	}}
	quick := tool.MustNew("quick", "Returns at once.", func(context.Context, struct{}) (string, error) { return "quick ok", nil })
	a := build(t, hitch.Spec{Name: "chat", Model: m, Tools: []tool.Tool{quick, holdTool(t, "hold", started, never)}})
	rt, _ := setup(t, a)
	s := openSession(t, rt, a, "intr")
	send(t, rt, s.ID, "task", sessions.SendOptions{})
	send(t, rt, s.ID, "queued behind", sessions.SendOptions{})
	<-started
	send(t, rt, s.ID, "stop now", sessions.SendOptions{Mode: sessions.ModeInterrupt})
	st := awaitSession(t, rt, s.ID)
	if len(st.Submissions) != 3 {
		t.Fatalf("%d submissions: %+v", len(st.Submissions), st.Submissions)
	}
	first, second, third := st.Submissions[0], st.Submissions[1], st.Submissions[2]
	if first.Outcome != hitchtype.SubmissionAborted || first.Reason != "interrupted" || first.Status != hitchtype.StatusCancelled {
		t.Fatalf("interrupted submission = %+v", first)
	}
	if second.Text != "stop now" || second.Outcome != hitchtype.SubmissionCompleted || third.Text != "queued behind" {
		t.Fatalf("after the interrupt: %+v then %+v", second, third)
	}
	reqs := m.requests()
	for _, r := range reqs {
		validTranscript(t, r)
	}
	// The interrupting message's request shows the interrupted work, each
	// call with one result; the one cut off says it was cancelled.
	var req *model.Request
	for _, r := range reqs {
		if lastUser(r) == "stop now" {
			req = r
		}
	}
	var results []model.Message
	for _, msg := range req.Messages {
		if msg.Role == model.RoleTool {
			results = append(results, msg)
		}
	}
	if len(results) != 2 || results[0].Text != "quick ok" || !results[1].IsError || !strings.Contains(results[1].Text, "cancelled") {
		t.Fatalf("tool results in the next request: %+v", results)
	}
	k := sessionKinds(t, rt, s.ID)
	if !slicesContains(k, hitchtype.KindSubmissionInterrupt) {
		t.Fatalf("session journal %v has no interrupt", k)
	}
}

func slicesContains(ss []string, v string) bool {
	for _, s := range ss {
		if s == v {
			return true
		}
	}
	return false
}

// Two runtimes on one SQLite file send to and drive one session: never two
// submissions at once, and FIFO holds.
func TestSessionTwoRuntimesOneSession(t *testing.T) {
	t.Parallel()
	var inflight, worst atomic.Int64
	m := &funcModel{fn: func(_ context.Context, req *model.Request) (*model.Reply, error) {
		n := inflight.Add(1)
		defer inflight.Add(-1)
		for {
			w := worst.Load()
			if n <= w || worst.CompareAndSwap(w, n) {
				break
			}
		}
		time.Sleep(2 * time.Millisecond) // work, so that overlaps would show
		return text("echo: " + lastUser(req)), nil
	}}
	a := build(t, hitch.Spec{Name: "chat", Model: m})
	path := filepath.Join(t.TempDir(), "hitch.db")
	rtA, _ := setupAt(t, path, a)
	rtB, _ := setupAt(t, path, a)
	openSession(t, rtA, a, "shared")
	if _, _, err := rtB.Sessions().Open(t.Context(), a, sessions.Options{ID: "shared"}); err != nil {
		t.Fatal(err)
	}
	const n = 16
	order := make(chan string, n)
	var mu sync.Mutex
	for i := range n {
		rt := rtA
		if i%2 == 1 {
			rt = rtB
		}
		// Sends are serialised so admission order is known; the runs
		// race between the two runtimes.
		mu.Lock()
		send(t, rt, "shared", fmt.Sprintf("m%02d", i), sessions.SendOptions{})
		order <- fmt.Sprintf("m%02d", i)
		mu.Unlock()
	}
	close(order)
	awaitSession(t, rtA, "shared")
	st := awaitSession(t, rtB, "shared")
	if len(st.Submissions) != n {
		t.Fatalf("%d submissions, want %d", len(st.Submissions), n)
	}
	i := 0
	for want := range order {
		sub := st.Submissions[i]
		if sub.Text != want || sub.Outcome != hitchtype.SubmissionCompleted {
			t.Fatalf("submission %d = %+v, want %s completed", i, sub, want)
		}
		i++
	}
	if w := worst.Load(); w != 1 {
		t.Fatalf("%d model calls of one session ran at once, want 1", w)
	}
}

// A session whose message was admitted but never started (its node died
// before) is started by RecoverSessions.
func TestRecoverSessionsStartsWhatNoNodeStarted(t *testing.T) {
	t.Parallel()
	a := build(t, hitch.Spec{Name: "chat", Model: echo()})
	rt, st := setup(t, a)
	openSession(t, rt, a, "orphan")
	ss := st.(store.SessionStore)
	data, _ := json.Marshal(hitchtype.MessageAdmitted{ID: "m1", Mode: hitchtype.ModeQueue, Text: "hi"})
	if _, err := ss.SessionAppend(t.Context(), store.SessionAppendParams{SessionID: "orphan", After: store.AnyPosition,
		Kind: hitchtype.KindMessageAdmitted, Data: data}); err != nil {
		t.Fatal(err)
	}
	n, err := rt.RecoverSessions(t.Context())
	if err != nil || n != 1 {
		t.Fatalf("recover sessions: %d, %v", n, err)
	}
	if got := awaitSession(t, rt, "orphan"); len(got.Submissions) != 1 || got.Submissions[0].Answer != "echo: hi" {
		t.Fatalf("submissions: %+v", got.Submissions)
	}
}

// sessionChild, run in a child process, sends one keyed message, says so,
// and hangs in its model call until it is killed.
func init() {
	if db := os.Getenv("HITCH_SESSION_CHILD_DB"); db != "" {
		os.Exit(sessionChild(db))
	}
}

func sessionChild(db string) int {
	ctx := context.Background()
	hang := &funcModel{fn: func(context.Context, *model.Request) (*model.Reply, error) { select {} }}
	a, err := hitch.Build(hitch.Spec{Name: "chat", Model: hang, Policy: policy.AllowAll()})
	if err != nil {
		return childFail(err)
	}
	rt, err := childOpen(ctx, db, hitch.Config{Agents: []*hitch.Agent{a}})
	if err != nil {
		return childFail(err)
	}
	if _, _, err := rt.Sessions().Open(ctx, a, sessions.Options{ID: "crash"}); err != nil {
		return childFail(err)
	}
	res, err := rt.Sessions().Send(ctx, "crash", "do it once", sessions.SendOptions{IdempotencyKey: "key-1"})
	if err != nil {
		return childFail(err)
	}
	fmt.Println("SENT " + res.MessageID)
	select {} // the reply never reaches the caller
}

// A send committed by a process that is SIGKILLed before its caller hears
// back is retried with the same key: one admission, one submission, and the
// submission the dead process started is recovered.
func TestSessionSendSurvivesAKillBeforeTheReply(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "hitch.db")
	cmd, lines := startChild(t, nil, "HITCH_SESSION_CHILD_DB="+db)
	first := strings.TrimPrefix(awaitLine(t, cmd, lines, "SENT", 1, func(l string) bool { return strings.HasPrefix(l, "SENT ") }), "SENT ")
	killChild(t, cmd)
	// This process's store clock runs an hour ahead, so the dead child's
	// lease has run out without waiting; the key is kept for 24 hours.
	rt, _ := reopenAhead(t, db, time.Hour, build(t, hitch.Spec{Name: "chat", Model: echo()}))
	res := send(t, rt, "crash", "do it once", sessions.SendOptions{IdempotencyKey: "key-1"})
	if !res.Duplicate || res.MessageID != first {
		t.Fatalf("retry: %+v, want a duplicate of %s", res, first)
	}
	if n, err := rt.Recover(t.Context()); err != nil || n != 1 {
		t.Fatalf("recover: %d %v, want the dead child's run", n, err)
	}
	got := awaitSession(t, rt, "crash")
	if len(got.Submissions) != 1 || got.Submissions[0].Answer != "echo: do it once" {
		t.Fatalf("submissions: %+v", got.Submissions)
	}
	admitted := 0
	for _, k := range sessionKinds(t, rt, "crash") {
		if k == hitchtype.KindMessageAdmitted {
			admitted++
		}
	}
	if admitted != 1 {
		t.Fatalf("%d admissions, want 1", admitted)
	}
}

// An interrupt whose process died after the session journaled it and
// before the run was cancelled is applied by recovery: RecoverSessions
// cancels the run, its submission ends aborted, and the interrupting
// message runs next — not only when a client retries the send.
func TestSessionInterruptRecordedButNotAppliedIsRecovered(t *testing.T) {
	t.Parallel()
	started := make(chan string, 4)
	never := make(chan struct{})
	m := &funcModel{fn: func(_ context.Context, req *model.Request) (*model.Reply, error) {
		if last := req.Messages[len(req.Messages)-1]; last.Role == model.RoleUser && last.Text == "task" {
			return &model.Reply{ToolCalls: []model.ToolCall{{ID: "c1", Name: "hold", Arguments: "{}"}}}, nil
		} else if last.Role == model.RoleUser {
			return text("done: " + last.Text), nil
		}
		return text("unexpected"), nil
	}}
	a := build(t, hitch.Spec{Name: "chat", Model: m, Tools: []tool.Tool{holdTool(t, "hold", started, never)}})
	rt, st := setup(t, a)
	s := openSession(t, rt, a, "lost-interrupt")
	send(t, rt, s.ID, "task", sessions.SendOptions{})
	<-started
	// What the dead process made durable: the interrupting message and the
	// interrupt of the active run, but no cancel of the run.
	ss := st.(store.SessionStore)
	ctx := t.Context()
	row, err := ss.SessionGet(ctx, s.ID)
	if err != nil || row.ActiveRun == "" {
		t.Fatalf("session: %+v %v", row, err)
	}
	msg, _ := json.Marshal(hitchtype.MessageAdmitted{ID: "msg_urgent", Mode: sessions.ModeInterrupt, Text: "stop now"})
	intr, _ := json.Marshal(hitchtype.SubmissionInterrupted{RunID: row.ActiveRun, MessageID: "msg_urgent"})
	for _, e := range []store.SessionAppendParams{
		{SessionID: s.ID, After: store.AnyPosition, Kind: hitchtype.KindMessageAdmitted, Data: msg},
		{SessionID: s.ID, After: store.AnyPosition, Kind: hitchtype.KindSubmissionInterrupt, Data: intr},
	} {
		if _, err := ss.SessionAppend(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rt.RecoverSessions(ctx); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	status, err := rt.Sessions().Await(wctx, s.ID)
	if err != nil {
		t.Fatalf("the session never came to rest: the recorded interrupt was not applied: %v", err)
	}
	if len(status.Submissions) != 2 {
		t.Fatalf("%d submissions: %+v", len(status.Submissions), status.Submissions)
	}
	first, second := status.Submissions[0], status.Submissions[1]
	if first.Outcome != hitchtype.SubmissionAborted || first.Reason != "interrupted" {
		t.Errorf("the interrupted submission ended %+v", first)
	}
	if second.Text != "stop now" || second.Outcome != hitchtype.SubmissionCompleted {
		t.Errorf("then %+v", second)
	}
}
