package hitch_test

import (
	"context"
	"iter"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/tool"
)

// stallModel answers its first request with a tool call and 10+2 tokens.
// Its second generation signals started, waits for cancellation, and then
// either replies with 7+3 tokens (late) or never stops (deaf, until the
// test ends).
type stallModel struct {
	late    bool
	started chan struct{}
	release chan struct{}
}

func (m *stallModel) Name() string { return "scripted/stall" }

func (m *stallModel) Generate(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	return func(yield func(*model.Chunk, error) bool) {
		if len(req.Messages) == 1 {
			yield(&model.Chunk{Reply: &model.Reply{ToolCalls: []model.ToolCall{{ID: "c1", Name: "add", Arguments: `{"a":1,"b":2}`}},
				Usage: &model.Usage{InputTokens: model.Int64(10), OutputTokens: model.Int64(2), CachedInputTokens: model.Int64(0)}}}, nil)
			return
		}
		m.started <- struct{}{}
		<-ctx.Done()
		if !m.late {
			<-m.release
			return
		}
		yield(&model.Chunk{Reply: &model.Reply{Text: "too late",
			Usage: &model.Usage{InputTokens: model.Int64(7), OutputTokens: model.Int64(3), CachedInputTokens: model.Int64(0)}}}, nil)
	}
}

// TestUsageAtCancellation: a reply that arrives while the run is being
// cancelled is counted, and a generation still in flight at the end is
// counted as unreported (null totals), never left out.
func TestUsageAtCancellation(t *testing.T) {
	t.Parallel()
	for _, late := range []bool{true, false} {
		m := &stallModel{late: late, started: make(chan struct{}, 1), release: make(chan struct{})}
		a := build(t, hitch.Spec{Model: m, Tools: []tool.Tool{addTool(t, nil)}})
		rt, _ := setup(t, a)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		res, err := rt.Start(ctx, a, "go")
		if err != nil {
			t.Fatal(err)
		}
		<-m.started
		run, err := rt.Cancel(ctx, res.Run.ID)
		close(m.release)
		cancel()
		if err != nil || run.Status != hitchtype.StatusCancelled {
			t.Fatalf("late %v: %+v %v", late, run, err)
		}
		u := run.Outcome.Usage
		if u.Generations != 2 {
			t.Errorf("late %v: %d generations, want 2", late, u.Generations)
		}
		switch {
		case late && (u.InputTokens == nil || *u.InputTokens != 17 || u.OutputTokens == nil || *u.OutputTokens != 5):
			t.Errorf("late reply not counted: %+v", u)
		case !late && (u.InputTokens != nil || u.OutputTokens != nil):
			t.Errorf("in-flight generation not counted as unreported: in %v out %v", ptr(u.InputTokens), ptr(u.OutputTokens))
		}
	}
}

func ptr(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}
