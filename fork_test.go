package hitch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/tool"
)

// sendTool appends its argument's n to a file, one line per effect: a
// non-replayable effect whose every run the file counts.
func sendTool(t *testing.T, path string) tool.Tool {
	t.Helper()
	type args struct {
		N string `json:"n"`
	}
	return tool.MustNew("send", "Sends a message.", func(_ context.Context, in args) (string, error) {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return "", err
		}
		defer f.Close()
		if _, err := f.WriteString(in.N + "\n"); err != nil {
			return "", err
		}
		return "sent " + in.N, nil
	})
}

// effects reads the lines of the side-effect file from line from on.
func effects(t *testing.T, path string, from int) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	lines := strings.Fields(string(b))
	if from > len(lines) {
		return nil
	}
	return lines[from:]
}

// sendScript sends a, then b and c, then answers; later turns answer
// with more.
func sendScript(name, answer string, more ...string) *scripted.Model {
	turns := []scripted.Turn{
		{Calls: []scripted.Call{{Name: "send", Args: `{"n":"a"}`}}},
		{Calls: []scripted.Call{{Name: "send", Args: `{"n":"b"}`}, {Name: "send", Args: `{"n":"c"}`}}},
		{Text: answer},
	}
	for _, m := range more {
		turns = append(turns, scripted.Turn{Text: m})
	}
	return scripted.New(name, scripted.Script{Turns: turns})
}

// startedAt maps each call's argument n to the position of its
// call.started in a journal.
func startedAt(t *testing.T, rt *hitch.Runtime, runID string) map[string]int64 {
	t.Helper()
	es := journal(t, rt, runID)
	calls := map[string]string{} // key → n
	for _, e := range es {
		if e.Kind != hitchtype.KindModelReply {
			continue
		}
		var r hitchtype.ModelReply
		if err := json.Unmarshal(e.Data, &r); err != nil {
			t.Fatal(err)
		}
		for i, c := range r.Reply.ToolCalls {
			var a struct{ N string }
			_ = json.Unmarshal([]byte(c.Arguments), &a)
			calls[hitchtype.CallKey(r.Turn, i+1)] = a.N
		}
	}
	out := map[string]int64{}
	for _, e := range es {
		if e.Kind == hitchtype.KindCallStarted {
			var s hitchtype.CallStarted
			if err := json.Unmarshal(e.Data, &s); err != nil {
				t.Fatal(err)
			}
			out[calls[s.Call]] = e.Pos
		}
	}
	return out
}

func TestForkNeverRunsAnEffectRecordedBeforeIt(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "sent")
	a := build(t, hitch.Spec{Name: "mailer", Model: sendScript("send", "sent three"), Tools: []tool.Tool{sendTool(t, file)}})
	rt, _ := setup(t, a)
	src := runToRest(t, rt, a, "send three")
	// b and c are one reply's calls, which run side by side: in any order.
	if src.Status != hitchtype.StatusCompleted || !slices.Equal(slices.Sorted(slices.Values(effects(t, file, 0))), []string{"a", "b", "c"}) {
		t.Fatalf("source: %s, effects %v", src.Status, effects(t, file, 0))
	}
	started := startedAt(t, rt, src.ID)
	es := journal(t, rt, src.ID)
	// A fork at each position, each driven to rest: generous on a busy
	// machine, never waited on without a bound.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	parked := 0
	// Every position but the run's end, which is refused.
	for at := int64(1); at < src.Position; at++ {
		before := len(effects(t, file, 0))
		res, err := rt.Fork(ctx, src.ID, at, hitch.ForkOptions{})
		if err != nil {
			t.Fatalf("fork at %d: %v", at, err)
		}
		run, err := rt.Await(ctx, res.Run.ID)
		if err != nil {
			t.Fatal(err)
		}
		ran := effects(t, file, before)
		for _, n := range ran {
			if p := started[n]; p <= at {
				t.Errorf("fork at %d (%s): ran %q again, whose start is recorded at %d", at, es[at-1].Kind, n, p)
			}
		}
		// A call started and not settled at the fork is uncertain there.
		var open []string
		st := map[string]bool{}
		for _, e := range es[:at] {
			var c struct{ Call string }
			_ = json.Unmarshal(e.Data, &c)
			switch e.Kind {
			case hitchtype.KindCallStarted:
				st[c.Call] = true
			case hitchtype.KindCallSettled:
				delete(st, c.Call)
			}
		}
		for k := range st {
			open = append(open, k)
		}
		if len(open) > 0 {
			parked++
			if run.Status != hitchtype.StatusWaiting {
				t.Errorf("fork at %d with %v started and not settled: status %s, want waiting", at, open, run.Status)
			}
			if k := kinds(journal(t, rt, run.ID)); !strings.Contains(k, "call.uncertain") {
				t.Errorf("fork at %d: no call.uncertain in %s", at, k)
			}
			continue
		}
		if run.Status != hitchtype.StatusCompleted || run.Outcome.Answer != "sent three" {
			t.Errorf("fork at %d: %s %+v", at, run.Status, run.Outcome)
		}
	}
	if parked < 3 {
		t.Errorf("%d forks at a started, unsettled call, want one a call", parked)
	}
	if _, err := rt.Fork(ctx, src.ID, src.Position, hitch.ForkOptions{}); !errors.Is(err, hitch.ErrBadFork) {
		t.Errorf("fork at the end: %v, want ErrBadFork", err)
	}
	if _, err := rt.Fork(ctx, src.ID, 0, hitch.ForkOptions{}); !errors.Is(err, hitch.ErrBadFork) {
		t.Errorf("fork at 0: %v, want ErrBadFork", err)
	}
}

// secondReply is the position of a run's second model reply: a fork there
// decides and runs its calls anew.
func secondReply(t *testing.T, es []store.Entry) int64 {
	t.Helper()
	n := 0
	for _, e := range es {
		if e.Kind == hitchtype.KindModelReply {
			if n++; n == 2 {
				return e.Pos
			}
		}
	}
	t.Fatalf("no second reply in %s", kinds(es))
	return 0
}

// sameHistory checks what a fork at at keeps of its source: its entries 2
// to at are the source's byte for byte, and its run.started (entry 1) is
// the source's but for the fork's source, version and model, and its
// instructions when want names new ones: what the fork sets.
func sameHistory(t *testing.T, src, fork []store.Entry, at int64, want hitchtype.RunStarted) {
	t.Helper()
	if int64(len(fork)) < at {
		t.Fatalf("the fork holds %d entries, want at least %d", len(fork), at)
	}
	for i := int64(1); i < at; i++ {
		if fork[i].Pos != src[i].Pos || fork[i].Kind != src[i].Kind || !bytes.Equal(fork[i].Data, src[i].Data) {
			t.Errorf("entry %d differs:\n fork %s %s\n  src %s %s", i+1, fork[i].Kind, fork[i].Data, src[i].Kind, src[i].Data)
		}
	}
	var s1, s2 hitchtype.RunStarted
	if err := json.Unmarshal(src[0].Data, &s1); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(fork[0].Data, &s2); err != nil {
		t.Fatal(err)
	}
	if fork[0].Kind != hitchtype.KindRunStarted || s2.ForkedFrom == nil || *s2.ForkedFrom != *want.ForkedFrom ||
		s2.Version != want.Version || s2.Model != want.Model {
		t.Errorf("fork's run.started: %s, want source %+v, version %d, model %q", fork[0].Data, *want.ForkedFrom, want.Version, want.Model)
	}
	if want.Instructions != "" {
		if s2.Instructions != want.Instructions {
			t.Errorf("fork's instructions %q, want %q", s2.Instructions, want.Instructions)
		}
		s2.Instructions = s1.Instructions
	}
	s2.ForkedFrom, s2.Version, s2.Model = s1.ForkedFrom, s1.Version, s1.Model
	if a, b := mustJSON(t, s1), mustJSON(t, s2); a != b {
		t.Errorf("run.started besides what the fork sets:\n fork %s\n  src %s", b, a)
	}
}

func TestForkWithAnotherVersionKeepsTheHistoryByteForByte(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "sent")
	v1 := build(t, hitch.Spec{Name: "mailer", Version: 1, Model: sendScript("one", "v1 answer"), Tools: []tool.Tool{sendTool(t, file)}})
	v2 := build(t, hitch.Spec{Name: "mailer", Version: 2, Model: sendScript("two", "v2 answer"), Tools: []tool.Tool{sendTool(t, file)}})
	rt, _ := setup(t, v1, v2)
	src := runToRest(t, rt, v1, "send three", hitch.WithInstructions("be brief"))
	es := journal(t, rt, src.ID)
	// At the second reply: its calls are decided by the fork, on v2.
	at := secondReply(t, es)
	ctx := context.Background()
	res, err := rt.Fork(ctx, src.ID, at, hitch.ForkOptions{ID: "fork-1", Version: 2})
	if err != nil {
		t.Fatal(err)
	}
	run, err := rt.Await(ctx, res.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != hitchtype.StatusCompleted || run.Outcome.Answer != "v2 answer" || run.Version != 2 {
		t.Fatalf("fork: %+v %+v", run, run.Outcome)
	}
	if run.ForkedFrom == nil || *run.ForkedFrom != (hitchtype.ForkedFrom{Run: src.ID, Pos: at}) {
		t.Errorf("fork's record: forked from %+v", run.ForkedFrom)
	}
	fes := journal(t, rt, run.ID)
	sameHistory(t, es, fes, at, hitchtype.RunStarted{ForkedFrom: &hitchtype.ForkedFrom{Run: src.ID, Pos: at}, Version: 2})
	// The same id again is the same fork; other options under it are not.
	again, err := rt.Fork(ctx, src.ID, at, hitch.ForkOptions{ID: "fork-1", Version: 2})
	if err != nil || again.Created || !again.SameInput {
		t.Errorf("fork again: %+v %v", again, err)
	}
	other, err := rt.Fork(ctx, src.ID, at-1, hitch.ForkOptions{ID: "fork-1", Version: 2})
	if err != nil || other.Created || other.SameInput {
		t.Errorf("fork again elsewhere: %+v %v", other, err)
	}
}

func TestForkWithAnotherModelKeepsTheHistoryByteForByte(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "sent")
	mailer := build(t, hitch.Spec{Name: "mailer", Model: sendScript("one", "answer of one"), Tools: []tool.Tool{sendTool(t, file)}})
	// Another agent's model is one the runtime knows, so a fork may go on
	// with it.
	two := sendScript("two", "answer of two")
	other := build(t, hitch.Spec{Name: "other", Model: two})
	rt, _ := setup(t, mailer, other)
	src := runToRest(t, rt, mailer, "send three", hitch.WithInstructions("be brief"))
	es := journal(t, rt, src.ID)
	at := secondReply(t, es)
	ctx := context.Background()
	sent := len(effects(t, file, 0))
	res, err := rt.Fork(ctx, src.ID, at, hitch.ForkOptions{ID: "fork-model", Model: two.Name()})
	if err != nil {
		t.Fatal(err)
	}
	run, err := rt.Await(ctx, res.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != hitchtype.StatusCompleted || run.Outcome.Answer != "answer of two" || run.Agent != "mailer" || run.Version != 1 {
		t.Fatalf("fork: %+v %+v", run, run.Outcome)
	}
	fes := journal(t, rt, run.ID)
	sameHistory(t, es, fes, at, hitchtype.RunStarted{ForkedFrom: &hitchtype.ForkedFrom{Run: src.ID, Pos: at}, Version: 1, Model: two.Name()})
	// The second reply's calls were decided anew, and ran once each.
	if got := effects(t, file, sent); !slices.Equal(slices.Sorted(slices.Values(got)), []string{"b", "c"}) {
		t.Errorf("the fork sent %v, want [b c]", got)
	}

	// A fork of the fork keeps its model; the same id with another model
	// is another fork; a model the runtime does not know is refused.
	fes2 := journal(t, rt, run.ID)
	res2, err := rt.Fork(ctx, run.ID, secondReply(t, fes2)-1, hitch.ForkOptions{})
	if err != nil {
		t.Fatal(err)
	}
	run2, err := rt.Await(ctx, res2.Run.ID)
	if err != nil || run2.Outcome == nil || run2.Outcome.Answer != "answer of two" {
		t.Errorf("fork of the fork: %+v %v", run2, err)
	}
	again, err := rt.Fork(ctx, src.ID, at, hitch.ForkOptions{ID: "fork-model"})
	if err != nil || again.Created || again.SameInput {
		t.Errorf("the same id without the model: %+v %v", again, err)
	}
	if _, err := rt.Fork(ctx, src.ID, at, hitch.ForkOptions{Model: "scripted/nobody"}); !errors.Is(err, hitch.ErrBadFork) || !strings.Contains(err.Error(), "scripted/nobody") {
		t.Errorf("fork with an unknown model: %v, want ErrBadFork naming it", err)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestForkEditsTheReplyOrAddsAMessage(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "sent")
	a := build(t, hitch.Spec{Name: "mailer", Model: sendScript("send", "sent three", "one more", "again"), Tools: []tool.Tool{sendTool(t, file)}})
	rt, _ := setup(t, a)
	src := runToRest(t, rt, a, "send three")
	es := journal(t, rt, src.ID)
	first := int64(0) // the first reply
	for _, e := range es {
		if e.Kind == hitchtype.KindModelReply {
			first = e.Pos
			break
		}
	}
	ctx := context.Background()
	n := len(effects(t, file, 0))

	// The first reply rewritten as a final text: the fork ends with it,
	// and nothing is sent.
	res, err := rt.Fork(ctx, src.ID, first, hitch.ForkOptions{Reply: &model.Reply{Text: "nothing to send"}})
	if err != nil {
		t.Fatal(err)
	}
	run, err := rt.Await(ctx, res.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != hitchtype.StatusCompleted || run.Outcome.Answer != "nothing to send" || len(effects(t, file, n)) != 0 {
		t.Errorf("edited fork: %s %+v, effects %v", run.Status, run.Outcome, effects(t, file, n))
	}
	if _, err := rt.Fork(ctx, src.ID, first-1, hitch.ForkOptions{Reply: &model.Reply{Text: "x"}}); !errors.Is(err, hitch.ErrBadFork) {
		t.Errorf("edited reply at a %s: %v, want ErrBadFork", es[first-2].Kind, err)
	}

	// A message after the final reply: the model answers it, and a fork
	// of that fork keeps going.
	last := src.Position - 1
	res, err = rt.Fork(ctx, src.ID, last, hitch.ForkOptions{Message: "and one more"})
	if err != nil {
		t.Fatal(err)
	}
	run, err = rt.Await(ctx, res.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != hitchtype.StatusCompleted || run.Outcome.Answer != "one more" {
		t.Fatalf("fork with a message: %s %+v", run.Status, run.Outcome)
	}
	fes := journal(t, rt, run.ID)
	if k := kinds(fes[last:]); !strings.HasPrefix(k, hitchtype.KindSessionSteered+" model.attempt model.reply") {
		t.Errorf("after the history: %s", k)
	}
	res2, err := rt.Fork(ctx, run.ID, int64(len(fes)-1), hitch.ForkOptions{Message: "again"})
	if err != nil {
		t.Fatal(err)
	}
	run2, err := rt.Await(ctx, res2.Run.ID)
	if err != nil || run2.Status != hitchtype.StatusCompleted || run2.Outcome.Answer != "again" {
		t.Fatalf("fork of a fork: %+v %v", run2, err)
	}
	if len(effects(t, file, n)) != 0 {
		t.Errorf("forks at the end sent %v", effects(t, file, n))
	}
}

func TestForkWithOtherInstructionsFromThePositionOn(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "sent")
	m := &recorder{Model: sendScript("send", "sent three")}
	a := build(t, hitch.Spec{Name: "mailer", Model: m, Instructions: "You send mail.", Tools: []tool.Tool{sendTool(t, file)}})
	rt, _ := setup(t, a)
	src := runToRest(t, rt, a, "send three", hitch.WithInstructions("Be brief."))
	es := journal(t, rt, src.ID)
	m.mu.Lock()
	before := len(m.reqs)
	for _, r := range m.reqs {
		if !strings.Contains(r.Instructions, "Be brief.") {
			t.Errorf("the source's request without its instructions: %q", r.Instructions)
		}
	}
	m.mu.Unlock()
	// Just before the second reply: the fork asks the model again, with
	// its own instructions, and every request after.
	at := secondReply(t, es) - 1
	ctx := context.Background()
	res, err := rt.Fork(ctx, src.ID, at, hitch.ForkOptions{Instructions: "Be thorough."})
	if err != nil {
		t.Fatal(err)
	}
	run, err := rt.Await(ctx, res.Run.ID)
	if err != nil || run.Status != hitchtype.StatusCompleted {
		t.Fatalf("fork: %+v %v", run, err)
	}
	m.mu.Lock()
	after := m.reqs[before:]
	m.mu.Unlock()
	if len(after) != 2 {
		t.Fatalf("the fork sent %d model requests, want its two turns", len(after))
	}
	for _, r := range after {
		if !strings.Contains(r.Instructions, "You send mail.") || !strings.Contains(r.Instructions, "Be thorough.") || strings.Contains(r.Instructions, "Be brief.") {
			t.Errorf("a fork's request: instructions %q, want the agent's and the fork's, not the source's", r.Instructions)
		}
	}
	sameHistory(t, es, journal(t, rt, run.ID), at, hitchtype.RunStarted{ForkedFrom: &hitchtype.ForkedFrom{Run: src.ID, Pos: at},
		Version: 1, Instructions: "Be thorough."})
}
