package client_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/client"
	"github.com/hitch-dev/hitch/config"
	"github.com/hitch-dev/hitch/internal/testproc"
	"github.com/hitch-dev/hitch/server"
	"github.com/hitch-dev/hitch/store/sqlite"
	"iter"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fixture is an in-process server over a real SQLite store, its runtime
// sweeping, behind a handler that can cut event streams.
type fixture struct {
	url string
	cut *cutter
	rt  *hitch.Runtime
}

const token = "test-token-0123456789"

func newFixture(t *testing.T) *fixture {
	t.Helper()
	files := map[string]string{
		"hitch.yaml": `models:
  quick: {provider: scripted, script: quick.yaml}
  slow: {provider: scripted, script: slow.yaml}
  gate: {provider: scripted, script: gate.yaml}
  boss: {provider: scripted, script: boss.yaml}
  kid: {provider: scripted, script: slow.yaml}
agents:
  - {name: boss, model: boss, policy: allow_all, sub_agents: [kid]}
  - {name: kid, model: kid, policy: allow_all, tools: [glob], workspace: ws}
  - {name: quick, model: quick, policy: allow_all}
  - {name: slow, model: slow, policy: allow_all, tools: [glob], workspace: ws}
` + testproc.GateAgent,
		"quick.yaml": "turns:\n  - text: quick done\n  - text: quick again\n",
		"slow.yaml":  testproc.Script(30, "5ms", testproc.Glob, "slow done"),
		"boss.yaml":  testproc.BossScript,
		"gate.yaml":  testproc.GateScript,
	}
	dir := testproc.ConfigDir(t, files)
	cfg, err := config.Load(filepath.Join(dir, "hitch.yaml"), config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(dir, "runs.db"))
	if err != nil {
		t.Fatal(err)
	}
	var srv atomic.Pointer[server.Server]
	rt, err := hitch.Open(hitch.Config{Store: st, Agents: cfg.Agents, OnEvent: func(e hitch.Event) {
		if s := srv.Load(); s != nil {
			s.Notify(e)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(server.Config{Runtime: rt, Store: st, Agents: cfg.Agents,
		Tokens: []server.Token{{Name: "t", Tenant: "default", Role: api.RoleAdmin, Hash: server.HashToken(token)}}})
	if err != nil {
		t.Fatal(err)
	}
	srv.Store(s)
	sweepCtx, stopSweep := context.WithCancel(ctx)
	swept := make(chan struct{})
	go func() {
		defer close(swept)
		_ = rt.Sweep(sweepCtx, 50*time.Millisecond)
	}()
	cut := &cutter{next: s}
	hs := httptest.NewServer(cut)
	t.Cleanup(func() {
		s.Stop()
		hs.CloseClientConnections()
		hs.Close()
		stopSweep()
		<-swept
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_ = rt.Close(cctx)
		_ = st.Close()
		_ = cfg.Close()
	})
	return &fixture{url: hs.URL, cut: cut, rt: rt}
}

// cutter cuts event-stream connections after a random number of bytes,
// in the middle of an event as often as not, while armed.
type cutter struct {
	next  http.Handler
	mu    sync.Mutex
	rng   *rand.Rand
	max   int // bytes at most before a cut; 0: never cut
	cuts  atomic.Int64
	conns atomic.Int64
}

func (c *cutter) arm(seed uint64, max int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rng, c.max = rand.New(rand.NewPCG(seed, seed)), max
}

func (c *cutter) budget() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.max == 0 {
		return -1
	}
	return 1 + c.rng.IntN(c.max)
}

func (c *cutter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/events") && (r.URL.Path != "/v1/runs" || r.Header.Get("Accept") != "text/event-stream") {
		c.next.ServeHTTP(w, r)
		return
	}
	c.conns.Add(1)
	b := c.budget()
	if b < 0 {
		c.next.ServeHTTP(w, r)
		return
	}
	c.next.ServeHTTP(&cutWriter{ResponseWriter: w, left: b, c: c}, r)
}

type cutWriter struct {
	http.ResponseWriter
	left int
	dead bool
	c    *cutter
}

func (w *cutWriter) Write(p []byte) (int, error) {
	if w.dead {
		return 0, errors.New("cut")
	}
	if len(p) <= w.left {
		w.left -= len(p)
		return w.ResponseWriter.Write(p)
	}
	// Write a part, then drop the connection under the server's feet.
	_, _ = w.ResponseWriter.Write(p[:w.left])
	_ = http.NewResponseController(w.ResponseWriter).Flush()
	w.dead = true
	w.c.cuts.Add(1)
	if conn, _, err := http.NewResponseController(w.ResponseWriter).Hijack(); err == nil {
		_ = conn.Close()
	}
	return 0, errors.New("cut")
}

func (w *cutWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *cutWriter) Flush() {
	if !w.dead {
		_ = http.NewResponseController(w.ResponseWriter).Flush()
	}
}

func newClient(t *testing.T, url string, opts ...client.Option) *client.Client {
	t.Helper()
	c, err := client.New(url, append([]client.Option{client.WithToken(token), client.WithRetry(time.Millisecond, 20*time.Millisecond, 50)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// connect makes a fixture, a client of it, and a context of the test
// bounded by limit.
func connect(t *testing.T, limit time.Duration) (*fixture, *client.Client, context.Context) {
	t.Helper()
	f := newFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	t.Cleanup(cancel)
	return f, newClient(t, f.url), ctx
}

// drain reads a stream of entries to its end, failing the test at its
// first error.
func drain(t *testing.T, what string, entries iter.Seq2[api.Entry, error]) []api.Entry {
	t.Helper()
	var got []api.Entry
	for e, err := range entries {
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		got = append(got, e)
	}
	return got
}

// journal reads a run's whole journal by pages.
func journal(t *testing.T, c *client.Client, id string) []api.Entry {
	t.Helper()
	var all []api.Entry
	after := int64(0)
	for {
		page, err := c.Journal(context.Background(), id, after, 7)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page.Entries...)
		if page.Next == nil {
			return all
		}
		after = *page.Next
	}
}

func TestRunsAndErrors(t *testing.T) {
	f := newFixture(t)
	c := newClient(t, f.url)
	ctx := context.Background()

	started, err := c.StartRun(ctx, api.StartRun{Agent: "quick", Input: "hi", ID: "r1"})
	if err != nil || !started.Created {
		t.Fatalf("start: %+v %v", started, err)
	}
	again, err := c.StartRun(ctx, api.StartRun{Agent: "quick", Input: "hi", ID: "r1"})
	if err != nil || again.Created || !again.SameInput {
		t.Fatalf("repeated start: %+v %v", again, err)
	}
	_, err = c.StartRun(ctx, api.StartRun{Agent: "quick", Input: "other", ID: "r1"})
	var pe *client.Error
	if !errors.As(err, &pe) || pe.Type() != api.TypeConflict || pe.Exit() != 5 || !errors.Is(err, client.ErrConflict) {
		t.Fatalf("conflicting start: %v", err)
	}
	run, err := c.Wait(ctx, "r1")
	if err != nil || run.Status != "completed" || run.Outcome == nil || run.Outcome.Answer != "quick done" {
		t.Fatalf("wait: %+v %v", run, err)
	}
	if _, err := c.Run(ctx, "nope"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("missing run: %v", err)
	} else if errors.As(err, &pe); pe.Exit() != 6 || !strings.Contains(err.Error(), "get run nope") {
		t.Fatalf("missing run: %v exit %d", err, pe.Exit())
	}
	_, err = c.StartRun(ctx, api.StartRun{Agent: "quick", Input: ""})
	if !errors.As(err, &pe) || pe.Type() != api.TypeInvalid || len(pe.Problem.Errors) == 0 || pe.Problem.Errors[0].Location != "body.input" {
		t.Fatalf("blank input: %#v", err)
	}
	page, err := c.Runs(ctx, client.RunFilter{Agent: "quick", Status: []string{"completed"}})
	if err != nil || len(page.Runs) != 1 || page.Runs[0].ID != "r1" {
		t.Fatalf("list: %+v %v", page, err)
	}
	for _, f := range []client.RunFilter{{Text: "R1"}, {Text: "HI", CreatedAfter: run.CreatedAt}, {CreatedBefore: run.CreatedAt.Add(time.Second)}} {
		page, err := c.Runs(ctx, f)
		if err != nil || len(page.Runs) != 1 || page.Runs[0].ID != "r1" || page.Runs[0].Title != "hi" {
			t.Fatalf("list %+v: %+v %v", f, page, err)
		}
		counts, err := c.RunCounts(ctx, f)
		if err != nil || counts.Total != 1 || counts.Counts["completed"] != 1 {
			t.Fatalf("counts %+v: %+v %v", f, counts, err)
		}
	}
	if page, err := c.Runs(ctx, client.RunFilter{CreatedAfter: run.CreatedAt.Add(time.Second)}); err != nil || len(page.Runs) != 0 {
		t.Fatalf("list after r1: %+v %v", page, err)
	}
	if _, err := c.Cancel(ctx, "r1"); err != nil {
		t.Fatalf("cancel an ended run: %v", err)
	}
	agents, err := c.Agents(ctx)
	if err != nil || len(agents.Agents) != 5 {
		t.Fatalf("agents: %+v %v", agents, err)
	}
	gate, err := c.Agent(ctx, "gate")
	if err != nil || gate.Policy.Kind != "rules" || len(gate.Approvers.Members) != 1 || gate.Approvers.Members[0].Name != "alice" || gate.Limits.ModelAttempts != 8 {
		t.Fatalf("agent gate: %+v %v", gate, err)
	}
	if _, err := c.Agent(ctx, "nope"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("missing agent: %v", err)
	}
	bud, err := c.Budget(ctx, "r1")
	if err != nil || bud.RootID != "r1" || len(bud.Counters) != 1 || bud.Counters[0].Name != "model_attempts" || bud.Counters[0].Used == nil {
		t.Fatalf("budget of r1: %+v %v", bud, err)
	}
	bad := newClient(t, f.url, client.WithToken("wrong"))
	if _, err := bad.Runs(ctx, client.RunFilter{}); !errors.Is(err, client.ErrUnauthorized) {
		t.Fatalf("bad token: %v", err)
	}

	// Approvals: the gate run parks; alice approves it.
	if _, err := c.StartRun(ctx, api.StartRun{Agent: "gate", Input: "go", ID: "g1"}); err != nil {
		t.Fatal(err)
	}
	if run, err := c.Wait(ctx, "g1"); err != nil || run.Status != "waiting" {
		t.Fatalf("gate: %+v %v", run, err)
	}
	// A parked run's attempts are counted from its journal.
	if bud, err := c.Budget(ctx, "g1"); err != nil || len(bud.Counters) != 1 || bud.Counters[0].Used == nil || *bud.Counters[0].Used != 1 || *bud.Counters[0].Left != 7 {
		t.Fatalf("budget of g1: %+v %v", bud, err)
	}
	aps, err := c.Approvals(ctx, "g1", "", 0)
	if err != nil || len(aps.Approvals) != 1 {
		t.Fatalf("approvals: %+v %v", aps, err)
	}
	call := aps.Approvals[0].Call
	if _, err := c.Approve(ctx, "g1", call, api.Credential{Name: "alice", Secret: "wrong"}); !errors.As(err, &pe) || pe.Type() != api.TypeBadCredential {
		t.Fatalf("wrong secret: %v", err)
	}
	if _, err := c.Approve(ctx, "g1", call, api.Credential{Name: "alice", Secret: "alice-secret"}); err != nil {
		t.Fatal(err)
	}
	if run, err := c.Wait(ctx, "g1"); err != nil || run.Status != "completed" {
		t.Fatalf("approved gate: %+v %v", run, err)
	}
	roots, err := c.Workspace(ctx, "g1")
	if err != nil || len(roots.Roots) != 0 {
		t.Fatalf("workspace: %+v %v", roots, err)
	}
}

// TestFollowResumes follows runs while their streams are cut at random
// points, mid-event included: the entries reassembled equal the journal
// exactly.
func TestFollowResumes(t *testing.T) {
	f, c, ctx := connect(t, 2*time.Minute)
	f.cut.arm(7, 1500)
	for i := range 4 {
		id := fmt.Sprintf("s%d", i)
		if _, err := c.StartRun(ctx, api.StartRun{Agent: "slow", Input: "go", ID: id}); err != nil {
			t.Fatal(err)
		}
		wholeJournal(t, c, id, drain(t, "follow "+id, c.Follow(ctx, id, 0)))
	}
	if f.cut.cuts.Load() < 4 {
		t.Fatalf("only %d cuts: the test did not cut streams", f.cut.cuts.Load())
	}
	t.Logf("%d cuts over %d connections", f.cut.cuts.Load(), f.cut.conns.Load())

	// Resuming from a position yields exactly what follows it.
	n := 0
	for e, err := range c.Follow(ctx, "s0", 5) {
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 && e.Pos != 6 {
			t.Fatalf("after 5: first %d", e.Pos)
		}
		n++
	}
	// A stream the server refuses ends with its problem, not a retry.
	for _, err := range c.Follow(ctx, "nope", 0) {
		if !errors.Is(err, client.ErrNotFound) {
			t.Fatalf("follow a missing run: %v", err)
		}
	}
	// Stopping early ends the iteration and its connection.
	for range c.Follow(ctx, "s1", 0) {
		break
	}
}

// wholeJournal fails unless got is run id's whole journal, to its end.
func wholeJournal(t *testing.T, c *client.Client, id string, got []api.Entry) {
	t.Helper()
	want := journal(t, c, id)
	if len(got) != len(want) {
		t.Fatalf("%s: followed %d entries, journal has %d", id, len(got), len(want))
	}
	for j := range want {
		if got[j].Pos != want[j].Pos || got[j].Kind != want[j].Kind || string(got[j].Data) != string(want[j].Data) {
			t.Fatalf("%s: entry %d: %+v, journal %+v", id, j, got[j], want[j])
		}
	}
	if got[len(got)-1].Kind != "run.ended" {
		t.Fatalf("%s: last entry %s", id, got[len(got)-1].Kind)
	}
}

// TestStartFollow starts runs answered with their streams, with streams
// cut at random: each yields its whole journal once, in order, resuming
// on the run's stream route.
func TestStartFollow(t *testing.T) {
	f, c, ctx := connect(t, 2*time.Minute)
	f.cut.arm(11, 1500)
	for i := range 4 {
		in := api.StartRun{Agent: "slow", Input: "go"}
		if i%2 == 0 {
			in.ID = fmt.Sprintf("sf%d", i)
		}
		got := drain(t, fmt.Sprintf("start and follow %d", i), c.StartFollow(ctx, in))
		if len(got) == 0 || (in.ID != "" && got[0].RunID != in.ID) {
			t.Fatalf("run %d: %d entries", i, len(got))
		}
		wholeJournal(t, c, got[0].RunID, got)
	}
	if f.cut.cuts.Load() < 4 {
		t.Fatalf("only %d cuts: the test did not cut streams", f.cut.cuts.Load())
	}
	f.cut.arm(0, 0)
	// The same id again streams the run it names; another input is a
	// conflict, and an unknown agent is refused, before any stream.
	n := 0
	for _, err := range c.StartFollow(ctx, api.StartRun{Agent: "slow", Input: "go", ID: "sf0"}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if want := len(journal(t, c, "sf0")); n != want {
		t.Errorf("the same start again yielded %d entries, the journal has %d", n, want)
	}
	for _, err := range c.StartFollow(ctx, api.StartRun{Agent: "slow", Input: "other", ID: "sf0"}) {
		if !errors.Is(err, client.ErrConflict) {
			t.Errorf("another input: %v", err)
		}
	}
	for _, err := range c.StartFollow(ctx, api.StartRun{Agent: "nope", Input: "go"}) {
		if !errors.Is(err, client.ErrInvalid) {
			t.Errorf("an unknown agent: %v", err)
		}
	}
}

// TestFollowGivesUp bounds the reconnects of a stream whose server is
// gone.
func TestFollowGivesUp(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(": hello\n\n"))
	}))
	defer hs.Close()
	c, err := client.New(hs.URL, client.WithRetry(time.Millisecond, 4*time.Millisecond, 3))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, err := range c.Follow(context.Background(), "r", 0) {
		n++
		if err == nil || !strings.Contains(err.Error(), "gave up after 3 reconnects") {
			t.Fatalf("follow: %v", err)
		}
	}
	if n != 1 {
		t.Fatalf("%d yields", n)
	}
	// An answer that is not a problem gets the class of its status.
	hs2 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad gateway", http.StatusBadGateway)
	}))
	defer hs2.Close()
	c2, _ := client.New(hs2.URL)
	_, err = c2.Run(context.Background(), "r")
	var pe *client.Error
	if !errors.As(err, &pe) || pe.Type() != api.TypeInternal || pe.Status() != 502 {
		t.Fatalf("proxy error: %#v", err)
	}
	if _, err := client.New("127.0.0.1:7077"); err == nil {
		t.Fatal("a URL without a scheme was taken")
	}
}

func TestSessions(t *testing.T) {
	f, c, ctx := connect(t, time.Minute)
	cs, err := c.CreateSession(ctx, api.CreateSession{Agent: "quick", ID: "chat"})
	if err != nil || !cs.Created {
		t.Fatalf("create: %+v %v", cs, err)
	}
	first, err := c.Send(ctx, "chat", api.Send{Text: "hello"}, "k1")
	if err != nil {
		t.Fatal(err)
	}
	dup, err := c.Send(ctx, "chat", api.Send{Text: "hello"}, "k1")
	if err != nil || !dup.Duplicate || dup.MessageID != first.MessageID {
		t.Fatalf("retried send: %+v %v", dup, err)
	}
	if _, err := c.Send(ctx, "chat", api.Send{Text: "again"}, ""); err != nil {
		t.Fatal(err)
	}
	f.cut.arm(3, 3000)
	ended := 0
	var got []api.SessionEntry
	for e, err := range c.FollowSession(ctx, "chat", 0) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e)
		if e.Kind == "submission.ended" {
			if ended++; ended == 2 {
				break
			}
		}
	}
	page, err := c.Transcript(ctx, "chat", 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got[i].Pos != page.Entries[i].Pos || string(got[i].Data) != string(page.Entries[i].Data) {
			t.Fatalf("entry %d: %+v, transcript %+v", i, got[i], page.Entries[i])
		}
	}
	st, err := c.SessionStatus(ctx, "chat")
	if err != nil || len(st.Submissions) != 2 || st.Submissions[1].Answer != "quick again" {
		t.Fatalf("status: %+v %v", st, err)
	}
	list, err := c.Sessions(ctx, "", 0)
	if err != nil || len(list.Sessions) != 1 {
		t.Fatalf("sessions: %+v %v", list, err)
	}
	if _, err := c.Edit(ctx, "chat", first.MessageID, "late"); !errors.As(err, new(*client.Error)) {
		t.Fatalf("edit of a started message: %v", err)
	}
	if _, err := c.Session(ctx, "nope"); !errors.Is(err, client.ErrNotFound) {
		t.Fatalf("missing session: %v", err)
	}
}

// TestFollowFamily follows a root run and its sub-agents through cuts:
// each run's entries, reassembled, equal its journal.
func TestFollowFamily(t *testing.T) {
	f, c, ctx := connect(t, 2*time.Minute)
	f.cut.arm(11, 2500)
	if _, err := c.StartRun(ctx, api.StartRun{Agent: "boss", Input: "go", ID: "b1"}); err != nil {
		t.Fatal(err)
	}
	got := map[string][]api.Entry{}
	for e, err := range c.FollowFamily(ctx, "b1", "") {
		if err != nil {
			t.Fatal(err)
		}
		if e.Cursor == "" || !strings.Contains(e.Cursor, fmt.Sprintf("%s=%d", e.RunID, e.Pos)) {
			t.Fatalf("cursor %q for %s at %d", e.Cursor, e.RunID, e.Pos)
		}
		got[e.RunID] = append(got[e.RunID], e.Entry)
	}
	page, err := c.Runs(ctx, client.RunFilter{RootID: "b1"})
	if err != nil || len(page.Runs) != 3 {
		t.Fatalf("family: %+v %v", page, err)
	}
	for _, run := range page.Runs {
		want := journal(t, c, run.ID)
		if len(got[run.ID]) != len(want) {
			t.Fatalf("%s: followed %d entries, journal has %d", run.ID, len(got[run.ID]), len(want))
		}
		for i := range want {
			if got[run.ID][i].Pos != want[i].Pos || string(got[run.ID][i].Data) != string(want[i].Data) {
				t.Fatalf("%s entry %d differs", run.ID, i)
			}
		}
	}
}
