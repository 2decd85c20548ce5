package hitch_test

import (
	"context"
	"encoding/base64"
	"iter"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
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

// byteModel streams its one reply a few bytes at a time, as a provider
// may cut a stream anywhere.
type byteModel struct {
	text string
	size int
}

func (byteModel) Name() string { return "bytes/stream" }

func (m byteModel) Generate(ctx context.Context, _ *model.Request) iter.Seq2[*model.Chunk, error] {
	return func(yield func(*model.Chunk, error) bool) {
		for i := 0; i < len(m.text); i += m.size {
			if ctx.Err() != nil || !yield(&model.Chunk{Delta: m.text[i:min(i+m.size, len(m.text))]}, nil) {
				return
			}
		}
		yield(&model.Chunk{Reply: &model.Reply{Text: m.text, StopReason: "end_turn"}}, nil)
	}
}

// Every spelling of a secret a reply can hold (upper case, masked as
// providers print keys, base64 wrapped across a line, folded across
// lines) is redacted in the deltas an observer sees, however the stream
// is cut, not only in the journal.
func TestSecretFormsNeverReachStreamedDeltas(t *testing.T) {
	t.Parallel()
	const key = "sk-live-7Qz9xWcanary42Rt"
	b64 := base64.StdEncoding.EncodeToString([]byte("pad pad pad pad pad pad pad export K=" + key + "\n"))
	var folded strings.Builder
	for i := 0; i < len(key); i += 5 {
		folded.WriteString(key[i:min(i+5, len(key))] + "\n")
	}
	text := "upper " + strings.ToUpper(key) + "; masked sk-l*************42Rt and sk-live-...42Rt; base64 " +
		b64[:60] + "\n" + b64[60:] + "\nfolded\n" + folded.String() + "end"
	red, err := secret.New(map[string]string{"KEY": key})
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []int{1, 2, 3, 7} {
		st := hitchtest.OpenStore(t, filepath.Join(t.TempDir(), "hitch.db"))
		a, err := hitch.Build(hitch.Spec{Name: "a", Model: byteModel{text: text, size: size}, Policy: policy.AllowAll()})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var deltas []string
		rt := hitchtest.Open(t, hitch.Config{Store: st, Agents: []*hitch.Agent{a}, Secrets: red, OnEvent: func(ev hitch.Event) {
			if ev.Delta != "" {
				mu.Lock()
				deltas = append(deltas, ev.Delta)
				mu.Unlock()
			}
		}})
		ctx := context.Background()
		res, err := rt.Start(ctx, a, "go")
		if err != nil {
			t.Fatal(err)
		}
		run, err := rt.Await(ctx, res.Run.ID)
		if err != nil || run.Status != hitchtype.StatusCompleted {
			t.Fatalf("run: %+v %v", run, err)
		}
		_ = rt.Close(ctx)
		_ = st.Close()
		mu.Lock()
		got := strings.Join(deltas, "")
		mu.Unlock()
		if want := red.String(text); got != want {
			t.Errorf("pieces of %d: the deltas joined:\n%q\nwant what the journal holds:\n%q", size, got, want)
		}
		dense := strings.Join(strings.Fields(got), "")
		for _, leak := range []string{"7Qz9", "canary42", "CANARY42", "sk-l*", "sk-live-.", b64[52:72]} {
			if strings.Contains(dense, leak) {
				t.Errorf("pieces of %d: %q leaked in %q", size, leak, got)
			}
		}
	}
}
