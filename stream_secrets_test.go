package hitch_test

import (
	"context"
	"encoding/base64"
	"iter"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/hitchtest"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/secret"
)

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
