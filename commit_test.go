package hitch_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/hitchtest"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/tool"
)

// TestOneCommitPerStep counts the journal commits of a run of steps that
// each call one tool. A step whose tool is replayable is one commit: the
// model attempt, the reply, the decision and the start go together, before
// the body, and the result rides the next step's commit. A step whose tool
// is not replayable is two: its result is durable before the model sees it
// (with the next attempt), its start before its body.
func TestOneCommitPerStep(t *testing.T) {
	t.Parallel()
	const steps = 4
	for _, tc := range []struct {
		name   string
		opts   []tool.Option
		commit []string // each commit's kinds, after run.started
	}{
		{name: "replayable", opts: []tool.Option{tool.WithReplay(3)}, commit: []string{
			"context model.attempt model.reply call.decided call.started",
			"call.settled model.attempt model.reply call.decided call.started",
			"call.settled model.attempt model.reply call.decided call.started",
			"call.settled model.attempt model.reply call.decided call.started",
			"call.settled model.attempt model.reply run.ended",
		}},
		{name: "at most once", commit: []string{
			"context model.attempt model.reply call.decided call.started",
			"call.settled model.attempt",
			"model.reply call.decided call.started",
			"call.settled model.attempt",
			"model.reply call.decided call.started",
			"call.settled model.attempt",
			"model.reply call.decided call.started",
			"call.settled model.attempt",
			"model.reply run.ended",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			turns := make([]scripted.Turn, 0, steps+1)
			for i := range steps {
				turns = append(turns, scripted.Turn{Calls: []scripted.Call{{Name: "add", Args: fmt.Sprintf(`{"a":%d,"b":1}`, i)}}})
			}
			turns = append(turns, scripted.Turn{Text: "done"})
			add, err := tool.New("add", "Adds two integers.", func(_ context.Context, in addArgs) (int, error) { return in.A + in.B, nil }, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			a, err := hitch.Build(hitch.Spec{Name: "steps", Model: scripted.New("steps", scripted.Script{Turns: turns}),
				Tools: []tool.Tool{add}, Policy: policy.AllowAll()})
			if err != nil {
				t.Fatal(err)
			}
			st := hitchtest.OpenStore(t, filepath.Join(t.TempDir(), "hitch.db"))
			var mu sync.Mutex
			var commits []string
			rt := hitchtest.Open(t, hitch.Config{Store: st, Agents: []*hitch.Agent{a}, OnEvent: func(ev hitch.Event) {
				if ev.RunID != "steps" || len(ev.Entries) == 0 || ev.Entries[0].Kind == hitchtype.KindRunStarted {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				commits = append(commits, kinds(ev.Entries))
			}})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := rt.Start(ctx, a, "add", hitch.WithID("steps")); err != nil {
				t.Fatal(err)
			}
			run, err := rt.Await(ctx, "steps")
			if err != nil || run.Status != hitchtype.StatusCompleted {
				t.Fatalf("run: %+v %v", run, err)
			}
			mu.Lock()
			defer mu.Unlock()
			if got, want := strings.Join(commits, "\n"), strings.Join(tc.commit, "\n"); got != want {
				t.Errorf("commits:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}
