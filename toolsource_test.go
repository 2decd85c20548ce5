package hitch_test

import (
	"context"
	"encoding/json"
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/tool"
)

// listSource is a tool source whose list a test changes.
type listSource struct {
	mu    sync.Mutex
	tools []tool.Tool
}

func (s *listSource) Tools() []tool.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tools)
}

func (s *listSource) add(t tool.Tool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tools = append(s.tools, t)
}

// onFirst runs f before its model's first attempt, and keeps the tool
// names of every request.
type onFirst struct {
	model.Model
	f     func()
	mu    sync.Mutex
	names [][]string
}

func (m *onFirst) Generate(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	m.mu.Lock()
	var names []string
	for _, s := range req.Tools {
		names = append(names, s.Name)
	}
	m.names = append(m.names, names)
	first := len(m.names) == 1
	m.mu.Unlock()
	if first {
		m.f()
	}
	return m.Model.Generate(ctx, req)
}

// TestToolSourceChangesAtTheNextTurn: a tool a source adds while turn 1's
// model call is in flight is not offered to that turn's retry, nor
// callable in it; the next turn offers it, and records it in its context.
func TestToolSourceChangesAtTheNextTurn(t *testing.T) {
	t.Parallel()
	echo := func(name string) tool.Tool {
		return tool.MustNew(name, "Echo.", func(_ context.Context, in struct {
			Text string `json:"text"`
		}) (string, error) {
			return in.Text, nil
		})
	}
	src := &listSource{tools: []tool.Tool{echo("a")}}
	m := &onFirst{Model: scripted.New("src", scripted.Script{Turns: []scripted.Turn{
		{Fail: []scripted.Failure{{Kind: model.KindOverloaded}}, Calls: []scripted.Call{{Name: "b", Args: `{"text":"early"}`}}},
		{Calls: []scripted.Call{{Name: "b", Args: `{"text":"late"}`}}},
		{Text: "done"},
	}}), f: func() { src.add(echo("b")) }}
	a := build(t, hitch.Spec{Model: m, Tools: []tool.Tool{addTool(t, nil)}, ToolSources: []tool.Source{src}})
	rt, _ := setup(t, a)
	run := runToRest(t, rt, a, "go")
	if run.Status != hitchtype.StatusCompleted {
		t.Fatalf("run: %+v", run)
	}
	want := [][]string{{"add", "a"}, {"add", "a"}, {"add", "a", "b"}, {"add", "a", "b"}}
	if !slices.EqualFunc(m.names, want, slices.Equal) {
		t.Errorf("requests offered %v, want %v", m.names, want)
	}
	es := journal(t, rt, run.ID)
	var text strings.Builder
	var ctxs []hitchtype.Context
	for _, e := range es {
		text.WriteString(string(e.Data) + "\n")
		if e.Kind == hitchtype.KindContext {
			var c hitchtype.Context
			if err := json.Unmarshal(e.Data, &c); err != nil {
				t.Fatal(err)
			}
			ctxs = append(ctxs, c)
		}
	}
	if len(ctxs) != 2 || len(ctxs[1].Specs) != 2 || ctxs[1].Specs[1].Name != "b" {
		t.Errorf("contexts: %+v", ctxs)
	}
	for _, want := range []string{`there is no tool named \"b\"; the tools are: add, a`, `"output":"late"`} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("journal lacks %s:\n%s", want, text.String())
		}
	}
}
