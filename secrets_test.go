package hitch_test

import (
	"context"
	"iter"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/internal/hitchtest"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/secret"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/tool"
)

// Config.Secrets keeps a value out of the journal, the model's context
// (a later turn sees the marker), the streamed deltas and the outcome.
func TestSecretsNeverReachJournalContextOrDeltas(t *testing.T) {
	t.Parallel()
	const canary = "tok-canary-55aa77bb99"
	leak := tool.MustNew("leak", "Prints the token.", func(context.Context, struct{}) (string, error) {
		return "TOKEN=" + canary + "\n" + strings.ToUpper(canary), nil
	})
	var sawInContext []string
	var mu sync.Mutex
	m := scripted.New("s", scripted.Script{Turns: []scripted.Turn{
		{Text: "checking " + canary, Calls: []scripted.Call{{Name: "leak"}},
			Fail: []scripted.Failure{{Kind: model.KindOverloaded, Message: "bad key " + canary}}},
		{Text: "the token was " + canary + ", in full"},
	}})
	spy := spyModel{Model: m, see: func(req *model.Request) {
		mu.Lock()
		defer mu.Unlock()
		for _, msg := range req.Messages {
			sawInContext = append(sawInContext, msg.Text)
			for _, c := range msg.ToolCalls {
				sawInContext = append(sawInContext, c.Arguments)
			}
		}
	}}
	a, err := hitch.Build(hitch.Spec{Name: "a", Model: spy, Tools: []tool.Tool{leak}, Policy: policy.AllowAll(),
		Limits: hitch.Limits{RetryDelay: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	red, err := secret.New(map[string]string{"TOKEN": canary})
	if err != nil {
		t.Fatal(err)
	}
	st := hitchtest.OpenStore(t, filepath.Join(t.TempDir(), "hitch.db"))
	var deltas strings.Builder
	rt := hitchtest.Open(t, hitch.Config{Store: st, Agents: []*hitch.Agent{a}, Secrets: red, OnEvent: func(ev hitch.Event) {
		mu.Lock()
		deltas.WriteString(ev.Delta)
		mu.Unlock()
	}})
	ctx := context.Background()
	res, err := rt.Start(ctx, a, "use "+canary)
	if err != nil {
		t.Fatal(err)
	}
	run, err := rt.Await(ctx, res.Run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Outcome == nil || run.Outcome.Answer != "the token was [secret:TOKEN], in full" {
		t.Fatalf("outcome %+v", run.Outcome)
	}
	es, err := st.JournalRead(ctx, store.JournalReadParams{RunID: run.ID, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, e := range es {
		all.Write(e.Data)
	}
	mu.Lock()
	defer mu.Unlock()
	all.WriteString(deltas.String())
	all.WriteString(strings.Join(sawInContext, "\n"))
	for _, form := range []string{canary, strings.ToUpper(canary), "canary-55aa"} {
		if strings.Contains(all.String(), form) {
			t.Errorf("%q leaked:\n%s", form, all.String())
		}
	}
	if !strings.Contains(deltas.String(), "the token was [secret:TOKEN], in full") {
		t.Errorf("deltas: %q", deltas.String())
	}
	if !strings.Contains(strings.Join(sawInContext, "\n"), "TOKEN=[secret:TOKEN]") {
		t.Errorf("the model's context did not get the redacted tool result: %q", sawInContext)
	}
}

// spyModel shows each request to see before the model plays it.
type spyModel struct {
	model.Model
	see func(*model.Request)
}

func (s spyModel) Generate(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	s.see(req)
	return s.Model.Generate(ctx, req)
}
