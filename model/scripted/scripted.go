// Package scripted is a deterministic model that plays a script.
//
// It drives hitch's tests, benchmarks and the offline demo. The turn to play
// is the number of assistant messages already in the request, so a run that
// is recovered after a crash asks for the same turn again and gets the same
// reply. A turn can fail on cue a given number of times before it answers,
// and can take a while, which crash tests use to kill a process mid-call.
package scripted

import (
	"context"
	"fmt"
	"iter"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/hitch-dev/hitch/model"
)

// Turn is one scripted reply.
type Turn struct {
	// Text is the reply's text: the final answer when there are no calls.
	Text string `yaml:"text,omitempty" json:"text,omitempty"`
	// Calls are the tool calls the reply asks for, in order.
	Calls []Call `yaml:"calls,omitempty" json:"calls,omitempty"`
	// Fail makes the first len(Fail) attempts at this turn fail, in order,
	// before it answers. Attempts are counted per model value and first
	// user message, in memory.
	Fail []Failure `yaml:"fail,omitempty" json:"fail,omitempty"`
	// Delay makes the reply take this long (the context still cancels it).
	Delay time.Duration `yaml:"delay,omitempty" json:"delay,omitempty"`
	// NoUsage makes the reply report no usage at all.
	NoUsage bool `yaml:"no_usage,omitempty" json:"no_usage,omitempty"`
}

// Call is one scripted tool call.
type Call struct {
	Name string `yaml:"name" json:"name"`
	// Args is the raw argument text; it may be deliberately malformed.
	Args string `yaml:"args,omitempty" json:"args,omitempty"`
}

// Failure is one scripted failure.
type Failure struct {
	Kind       model.Kind    `yaml:"kind" json:"kind"`
	Message    string        `yaml:"message,omitempty" json:"message,omitempty"`
	RetryAfter time.Duration `yaml:"retry_after,omitempty" json:"retry_after,omitempty"`
}

// Script is the whole play: turn i answers a request that already holds i
// assistant messages. A request past the end gets the last turn again when
// Repeat is set, and an error otherwise.
type Script struct {
	Turns  []Turn `yaml:"turns" json:"turns"`
	Repeat bool   `yaml:"repeat,omitempty" json:"repeat,omitempty"`
}

// Model plays a Script.
type Model struct {
	name   string
	script Script

	mu       sync.Mutex
	failures map[string]int // attempts failed so far, by conversation and turn
}

var _ model.Model = (*Model)(nil)

// New returns a model named "scripted/<name>" that plays s.
func New(name string, s Script) *Model {
	return &Model{name: "scripted/" + name, script: s, failures: map[string]int{}}
}

// Load reads a script file (YAML or JSON) and returns a model named after
// it. Errors name the file and, for syntax errors, the line.
func Load(path string) (_ *Model, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read script: %w", err)
	}
	defer func() {
		// The YAML decoder can panic on some malformed input.
		if p := recover(); p != nil {
			err = fmt.Errorf("%s: cannot be read as a script: %v", path, p)
		}
	}()
	var s Script
	if err := yaml.UnmarshalWithOptions(b, &s, yaml.Strict()); err != nil {
		return nil, fmt.Errorf("%s: %s", path, yaml.FormatError(err, false, true))
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	name := path
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	return New(strings.TrimSuffix(strings.TrimSuffix(name, ".yaml"), ".yml"), s), nil
}

// Validate checks a script and names the first bad turn.
func (s Script) Validate() error {
	if len(s.Turns) == 0 {
		return fmt.Errorf("script: turns is empty")
	}
	for i, t := range s.Turns {
		for j, c := range t.Calls {
			if c.Name == "" {
				return fmt.Errorf("script: turns[%d].calls[%d].name is empty", i, j)
			}
		}
		for j, f := range t.Fail {
			switch f.Kind {
			case model.KindUnreachable, model.KindTimedOut, model.KindRateLimited, model.KindOverloaded,
				model.KindInvalidRequest, model.KindUnauthorized, model.KindMalformed:
			default:
				return fmt.Errorf("script: turns[%d].fail[%d].kind %q is not a model error kind", i, j, f.Kind)
			}
		}
	}
	return nil
}

// Name returns "scripted/<name>".
func (m *Model) Name() string { return m.name }

// Generate plays the turn the request is at.
func (m *Model) Generate(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	return func(yield func(*model.Chunk, error) bool) {
		reply, err := m.play(ctx, req)
		if err != nil {
			yield(nil, err)
			return
		}
		// Stream the text in a few pieces, as a real provider would.
		for _, d := range split(reply.Text) {
			if !yield(&model.Chunk{Delta: d}, nil) {
				return
			}
		}
		yield(&model.Chunk{Reply: reply}, nil)
	}
}

func (m *Model) play(ctx context.Context, req *model.Request) (*model.Reply, error) {
	at := 0
	first := ""
	for _, msg := range req.Messages {
		switch {
		case msg.Role == model.RoleAssistant:
			at++
		case msg.Role == model.RoleUser && first == "":
			first = msg.Text
		}
	}
	if at >= len(m.script.Turns) {
		if !m.script.Repeat {
			return nil, &model.Error{Kind: model.KindInvalidRequest, Provider: "scripted",
				Message: fmt.Sprintf("the script has %d turns and the request is at turn %d", len(m.script.Turns), at+1)}
		}
		at = len(m.script.Turns) - 1
	}
	turn := m.script.Turns[at]
	if turn.Delay > 0 {
		t := time.NewTimer(turn.Delay)
		defer t.Stop()
		select {
		case <-ctx.Done():
			return nil, &model.Error{Kind: model.KindOf(ctx.Err()), Provider: "scripted", Message: ctx.Err().Error(), Err: ctx.Err()}
		case <-t.C:
		}
	} else if err := ctx.Err(); err != nil {
		return nil, &model.Error{Kind: model.KindOf(err), Provider: "scripted", Message: err.Error(), Err: err}
	}
	if len(turn.Fail) > 0 {
		key := fmt.Sprintf("%d\x00%s", at, first)
		m.mu.Lock()
		n := m.failures[key]
		if n < len(turn.Fail) {
			m.failures[key] = n + 1
		}
		m.mu.Unlock()
		if n < len(turn.Fail) {
			f := turn.Fail[n]
			msg := f.Message
			if msg == "" {
				msg = "scripted failure"
			}
			return nil, &model.Error{Kind: f.Kind, Provider: "scripted", Message: msg, RetryAfter: f.RetryAfter}
		}
	}
	reply := &model.Reply{Text: turn.Text, Model: m.name, StopReason: "end_turn"}
	for i, c := range turn.Calls {
		args := c.Args
		if args == "" {
			args = "{}"
		}
		reply.ToolCalls = append(reply.ToolCalls, model.ToolCall{ID: fmt.Sprintf("call_%d_%d", at+1, i+1), Name: c.Name, Arguments: args})
	}
	if len(reply.ToolCalls) > 0 {
		reply.StopReason = "tool_use"
	}
	if !turn.NoUsage {
		reply.Usage = &model.Usage{
			InputTokens:       model.Int64(estimate(req)),
			OutputTokens:      model.Int64(int64(len(turn.Text)/4 + 8*len(turn.Calls) + 1)),
			CachedInputTokens: model.Int64(0),
		}
	}
	return reply, nil
}

// estimate is a deterministic stand-in for a tokenizer: four bytes a token.
func estimate(req *model.Request) int64 {
	n := len(req.Instructions)
	for _, m := range req.Messages {
		n += len(m.Text) + len(m.ToolCallID)
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Arguments)
		}
	}
	for _, t := range req.Tools {
		n += len(t.Name) + len(t.Description) + len(t.Schema)
	}
	if req.Answer != nil {
		n += len(req.Answer.Schema)
	}
	return int64(n/4 + 1)
}

// split cuts text into up to four pieces on byte boundaries that keep UTF-8
// characters whole.
func split(text string) []string {
	if text == "" {
		return nil
	}
	var out []string
	size := len(text)/4 + 1
	for len(text) > 0 {
		n := min(size, len(text))
		for n < len(text) && !utf8Start(text[n]) {
			n++
		}
		out = append(out, text[:n])
		text = text[n:]
	}
	return out
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
