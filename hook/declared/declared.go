// Package declared runs hooks declared as data rather than written in Go:
// commands and webhooks, several at each point of the turn loop, in
// priority order, each failing open or closed.
//
// A Set is one agent's declared hooks; it implements hook.Hooks, so the
// runtime calls it like any other hooks. Every hook gets the same event as
// JSON (a command on its standard input, a webhook as a signed POST body)
// and answers with a decision as JSON. At a point, the hooks run in
// ascending priority (ties in the order declared); the first deny or hold
// ends the chain, and a rewrite (arguments, a result, instructions) is
// what the next hook sees. Each answer is reported with hook.Record under
// the hook's name, so the run's journal says which hook decided.
package declared

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/hitch-dev/hitch/hook"
	"github.com/hitch-dev/hitch/policy"
)

// Point is where in the turn loop a hook runs.
type Point string

// The points.
const (
	PreGenerate Point = "pre_generate" // before each model call: add instructions, or stop the run
	PreTool     Point = "pre_tool"     // before a body: run (rewritten), deny, or hold
	PostTool    Point = "post_tool"    // after a body: rewrite its result
	PostTurn    Point = "post_turn"    // on a final answer: accept, or refuse with a reason
	PreTrigger  Point = "pre_trigger"  // before a trigger's occurrence is dispatched: go (rewritten), or skip it
	PostTrigger Point = "post_trigger" // after it was dispatched: observe the run or message it made
)

// Points lists the points in the order a turn reaches them, then those
// around a trigger's dispatch.
var Points = []Point{PreGenerate, PreTool, PostTool, PostTurn, PreTrigger, PostTrigger}

// OnError says what a hook's failure (it crashed, timed out or answered
// garbage) does.
type OnError string

// The failure modes.
const (
	// FailClosed treats a failure as a refusal: the run stops before its
	// model call, the call is denied, the result withheld, the answer
	// refused.
	FailClosed OnError = "fail_closed"
	// FailOpen goes on as if the hook had not been there.
	FailOpen OnError = "fail_open"
)

// DefaultOnError is a point's failure mode when a hook declares none:
// closed where a hook gates something, open after a body.
func (p Point) DefaultOnError() OnError {
	if p == PostTool || p == PostTrigger {
		return FailOpen
	}
	return FailClosed
}

// Retried reports whether a webhook at p is delivered again after a
// transport error or a 429 or 5xx answer. The points that gate the run
// are (the answer is asked for, and a lost one would fail closed); a
// post_tool or post_trigger hook observes an effect that happened, and a
// second delivery could be counted twice, so it is sent once.
func (p Point) Retried() bool { return p != PostTool && p != PostTrigger }

func (p Point) valid() bool { return slices.Contains(Points, p) }

// Defaults of declared hooks.
const (
	// DefaultTimeout bounds one attempt of a hook: a command's run or a
	// webhook's request.
	DefaultTimeout = 5 * time.Second
	// MaxOutput bounds what a hook may answer: a command's standard
	// output, a webhook's response body. More is a failure.
	MaxOutput = 1 << 20
	// WebhookAttempts is how many times a webhook at a retried point is
	// tried in all.
	WebhookAttempts = 3
	// WebhookRetryDelay is the wait before the second attempt; it doubles.
	WebhookRetryDelay = 100 * time.Millisecond
)

// Hook is one declared hook: exactly one of Command or Webhook.
type Hook struct {
	// Name names the hook in the journal and in listings; unique in a Set.
	Name  string
	Point Point
	// Priority orders the hooks of a point, lowest first; equal ones run
	// in the order given to New.
	Priority int
	// OnError is the failure mode; default the point's.
	OnError OnError
	// Match, for pre_tool and post_tool, are doublestar globs over tool
	// names, as a policy rule's tools; empty matches every tool.
	Match []string
	// When, optional, is a condition over the event (the policy's
	// variables: tool, args, agent, run); the hook sees only events it
	// holds for. One that cannot be evaluated counts as a failure.
	When *policy.Condition
	// Timeout bounds one attempt; default DefaultTimeout.
	Timeout time.Duration
	// Message, for post_turn, is the corrective message the model sees
	// when this hook refuses an answer: {value} and {reason} are replaced
	// by the hook's measured value and its reason. Empty gives the
	// generic message. A failure of the hook keeps the generic one.
	Message string

	Command *Command
	Webhook *Webhook
}

// Bound is the longest the hook may take at its point: every attempt with
// its timeout, and the waits between them.
func (h *Hook) Bound() time.Duration {
	d := h.timeout()
	if h.Webhook == nil || !h.Point.Retried() {
		return d
	}
	total := time.Duration(0)
	wait := WebhookRetryDelay
	for i := range WebhookAttempts {
		total += d
		if i > 0 {
			total += wait
			wait *= 2
		}
	}
	return total
}

func (h *Hook) timeout() time.Duration {
	if h.Timeout > 0 {
		return h.Timeout
	}
	return DefaultTimeout
}

func (h *Hook) onError() OnError {
	if h.OnError != "" {
		return h.OnError
	}
	return h.Point.DefaultOnError()
}

// Event is what a hook is given, as JSON.
type Event struct {
	Point string `json:"point"`
	Hook  string `json:"hook"`
	Agent string `json:"agent"`
	RunID string `json:"run_id"`
	// Turn, at pre_generate, is the turn about to be asked for, from 1.
	Turn int `json:"turn,omitempty"`
	// Call, at pre_tool and post_tool, is the tool call; its arguments
	// are those the previous hook left.
	Call *EventCall `json:"call,omitempty"`
	// Result, at post_tool, is the body's result as the previous hook
	// left it.
	Result *EventResult `json:"result,omitempty"`
	// Answer, at post_turn, is the final answer: its text, or a typed
	// answer's JSON.
	Answer *string `json:"answer,omitempty"`
	// Trigger, at pre_trigger and post_trigger, is the occurrence.
	Trigger *EventTrigger `json:"trigger,omitempty"`
}

// EventTrigger is a binding's occurrence in an Event.
type EventTrigger struct {
	ID         string    `json:"id"`
	Occurrence time.Time `json:"occurrence"`
	// Session is a session target's session; absent for a run target.
	Session string `json:"session,omitempty"`
	// Input is the run's input or the message's text, as the previous
	// hook left it.
	Input string `json:"input"`
	// RunID and MessageID, at post_trigger, are what the dispatch made.
	RunID     string `json:"run_id,omitempty"`
	MessageID string `json:"message_id,omitempty"`
}

// EventCall is a tool call in an Event.
type EventCall struct {
	ID        string          `json:"id"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}

// EventResult is a body's result in an Event.
type EventResult struct {
	Output  string `json:"output"`
	IsError bool   `json:"is_error"`
}

// Answer is what a hook answers, as JSON. An empty answer lets everything
// through unchanged.
type Answer struct {
	// Action is run (go on; the default), deny (pre_tool: the call does
	// not run; post_turn: the answer is refused; pre_generate: the run
	// stops) or hold (pre_tool: the call waits to be released).
	Action string `json:"action,omitempty"`
	// Reason explains a deny or a hold; the model sees a denial's.
	Reason string `json:"reason,omitempty"`
	// Arguments, at pre_tool with run, replace the call's arguments.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	// Requirement, with hold, names who may release the call.
	Requirement string `json:"requirement,omitempty"`
	// Instructions, at pre_generate, are added to the turn's.
	Instructions string `json:"instructions,omitempty"`
	// Output and IsError, at post_tool, replace the result.
	Output  *string `json:"output,omitempty"`
	IsError *bool   `json:"is_error,omitempty"`
	// Value, at post_turn, is what the validator measured ({value}).
	Value json.RawMessage `json:"value,omitempty"`
	// Input, at pre_trigger with run, replaces the run's input or the
	// message's text.
	Input *string `json:"input,omitempty"`
}

// caller runs one hook once: a command or a webhook.
type caller interface {
	call(ctx context.Context, h *Hook, event []byte) (Answer, error)
	describe() (kind, target string)
}

// Set is an agent's declared hooks. It is safe for concurrent use.
type Set struct {
	hook.Base
	at     map[Point][]*Hook
	order  []*Hook // every hook, in run order
	redact func([]byte) []byte
}

var (
	_ hook.Hooks        = (*Set)(nil)
	_ hook.TriggerHooks = (*Set)(nil)
	_ hook.Lister       = (*Set)(nil)
)

// New checks hooks and returns them as a Set, sorted for running. redact,
// when not nil, is applied to every event before a hook sees it, so a
// hook is never handed a secret through a tool's output or arguments.
func New(hooks []Hook, redact func([]byte) []byte) (*Set, error) {
	s := &Set{at: map[Point][]*Hook{}, redact: redact}
	var errs []error
	names := map[string]bool{}
	for i := range hooks {
		h := hooks[i]
		bad := func(format string, args ...any) {
			errs = append(errs, fmt.Errorf("hook %d (%s): %s", i+1, h.Name, fmt.Sprintf(format, args...)))
		}
		switch {
		case h.Name == "":
			bad("no name")
		case names[h.Name]:
			bad("the name is taken by an earlier hook")
		}
		names[h.Name] = true
		if !h.Point.valid() {
			bad("point %q: want one of %v", h.Point, Points)
		}
		if (h.Command == nil) == (h.Webhook == nil) {
			bad("give a command or a webhook, one of them")
		}
		if h.OnError != "" && h.OnError != FailClosed && h.OnError != FailOpen {
			bad("on_error %q: want fail_closed or fail_open", h.OnError)
		}
		if len(h.Match) > 0 && h.Point != PreTool && h.Point != PostTool {
			bad("match is for pre_tool and post_tool hooks")
		}
		for _, g := range h.Match {
			if !doublestar.ValidatePattern(g) {
				bad("bad glob %q", g)
			}
		}
		if h.Message != "" && h.Point != PostTurn {
			bad("message is for post_turn hooks")
		}
		if h.Command != nil && len(h.Command.Args) == 0 {
			bad("the command is empty")
		}
		s.order = append(s.order, &h)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	slices.SortStableFunc(s.order, func(a, b *Hook) int {
		if c := slices.Index(Points, a.Point) - slices.Index(Points, b.Point); c != 0 {
			return c
		}
		return a.Priority - b.Priority
	})
	for _, h := range s.order {
		s.at[h.Point] = append(s.at[h.Point], h)
	}
	return s, nil
}

// List returns the hooks in the order they run, point by point.
func (s *Set) List() []hook.Info {
	out := make([]hook.Info, 0, len(s.order))
	for _, h := range s.order {
		kind, target := h.caller().describe()
		info := hook.Info{Name: h.Name, Point: string(h.Point), Priority: h.Priority, OnError: string(h.onError()),
			Kind: kind, Target: target, Match: h.Match}
		if h.When != nil {
			info.When = h.When.String()
		}
		out = append(out, info)
	}
	return out
}

// Bound is the longest the hooks of one point may take together: what
// the runtime's hook timeout must allow for them.
func (s *Set) Bound() time.Duration {
	var most time.Duration
	for _, hs := range s.at {
		var d time.Duration
		for _, h := range hs {
			d += h.Bound()
		}
		most = max(most, d)
	}
	return most
}

func (h *Hook) caller() caller {
	if h.Command != nil {
		return h.Command
	}
	return h.Webhook
}

// applies reports whether the hook sees an event on tool with args.
func (h *Hook) applies(ctx context.Context, agent, runID, tool string, args json.RawMessage) (bool, error) {
	if len(h.Match) > 0 {
		hit := false
		for _, g := range h.Match {
			if ok, _ := doublestar.Match(g, tool); ok {
				hit = true
				break
			}
		}
		if !hit {
			return false, nil
		}
	}
	if h.When == nil {
		return true, nil
	}
	ok, err := h.When.Eval(ctx, policy.Action{Kind: policy.CallTool, RunID: runID, Agent: agent, Tool: tool, Arguments: args})
	if err != nil {
		return false, fmt.Errorf("when could not be evaluated: %w", err)
	}
	return ok, nil
}

// ask runs h on ev: it reports whether h applied, and its answer.
func (s *Set) ask(ctx context.Context, h *Hook, ev Event) (applied bool, a Answer, err error) {
	var tool string
	var args json.RawMessage
	if ev.Call != nil {
		tool, args = ev.Call.Tool, ev.Call.Arguments
	}
	ok, err := h.applies(ctx, ev.Agent, ev.RunID, tool, args)
	if err != nil || !ok {
		return err != nil, Answer{}, err
	}
	ev.Point, ev.Hook = string(h.Point), h.Name
	b, err := json.Marshal(ev)
	if err != nil {
		return true, Answer{}, fmt.Errorf("encode the event: %w", err)
	}
	if s.redact != nil {
		b = s.redact(b)
	}
	a, err = h.caller().call(ctx, h, b)
	if err != nil {
		return true, Answer{}, err
	}
	switch a.Action {
	case "", "run", "deny":
	case "hold":
		if h.Point != PreTool {
			return true, Answer{}, fmt.Errorf("answered hold, which only a pre_tool hook may")
		}
	default:
		return true, Answer{}, fmt.Errorf("answered the action %q: want run, deny or hold", a.Action)
	}
	if len(a.Arguments) > 0 && !json.Valid(a.Arguments) {
		return true, Answer{}, errors.New("answered arguments that are not JSON")
	}
	return true, a, nil
}

// failed reports a hook's failure and says whether the chain goes on
// (fail_open).
func failed(ctx context.Context, h *Hook, err error) (goOn bool) {
	mode := h.onError()
	d := hook.Decision{Hook: h.Name, Action: "deny", Error: err.Error(), OnError: string(mode)}
	if mode == FailOpen {
		d.Action = "run"
	}
	hook.Record(ctx, d)
	return mode == FailOpen
}

// PreGenerate runs the pre_generate hooks: their instructions are added
// in order; a deny, or a failure that fails closed, stops the run.
func (s *Set) PreGenerate(ctx context.Context, in hook.Generate) (string, error) {
	var extra []string
	for _, h := range s.at[PreGenerate] {
		applied, a, err := s.ask(ctx, h, Event{Agent: in.Agent, RunID: in.RunID, Turn: in.Turn})
		switch {
		case err != nil:
			if failed(ctx, h, err) {
				continue
			}
			return "", fmt.Errorf("hook %s failed: %w", h.Name, err)
		case !applied:
			continue
		case a.Action == "deny":
			hook.Record(ctx, hook.Decision{Hook: h.Name, Action: "deny", Reason: a.Reason})
			return "", fmt.Errorf("hook %s stopped the run: %s", h.Name, orElse(a.Reason, "no reason given"))
		}
		hook.Record(ctx, hook.Decision{Hook: h.Name, Action: "run", Rewrote: a.Instructions != ""})
		if a.Instructions != "" {
			extra = append(extra, a.Instructions)
		}
	}
	return strings.Join(extra, "\n\n"), nil
}

// PreTrigger runs the pre_trigger hooks: a rewritten input passes to the
// next; the first deny, or a failure that fails closed, skips the
// occurrence.
func (s *Set) PreTrigger(ctx context.Context, t hook.Trigger) (hook.TriggerVerdict, error) {
	input := t.Input
	for _, h := range s.at[PreTrigger] {
		ev := Event{Agent: t.Agent, Trigger: &EventTrigger{ID: t.ID, Occurrence: t.Occurrence, Session: t.Session, Input: input}}
		applied, a, err := s.ask(ctx, h, ev)
		switch {
		case err != nil:
			if failed(ctx, h, err) {
				continue
			}
			return hook.TriggerVerdict{Action: hook.Deny, Reason: fmt.Sprintf("hook %s failed, so the occurrence was skipped: %v", h.Name, err)}, nil
		case !applied:
			continue
		case a.Action == "deny":
			return hook.TriggerVerdict{Action: hook.Deny, Reason: fmt.Sprintf("%s (hook %s)", orElse(a.Reason, "no reason given"), h.Name)}, nil
		}
		if a.Input != nil {
			input = *a.Input
		}
	}
	v := hook.TriggerVerdict{Action: hook.Run}
	if input != t.Input {
		v.Input = input
	}
	return v, nil
}

// PostTrigger runs the post_trigger hooks with what the dispatch made.
// Their answers are not read, and a failure changes nothing.
func (s *Set) PostTrigger(ctx context.Context, t hook.Trigger, d hook.Dispatched) error {
	var errs []error
	for _, h := range s.at[PostTrigger] {
		ev := Event{Agent: t.Agent, RunID: d.RunID, Trigger: &EventTrigger{ID: t.ID, Occurrence: t.Occurrence, Session: t.Session,
			Input: t.Input, RunID: d.RunID, MessageID: d.MessageID}}
		if _, _, err := s.ask(ctx, h, ev); err != nil {
			errs = append(errs, fmt.Errorf("hook %s: %w", h.Name, err))
		}
	}
	return errors.Join(errs...)
}

// PreTool runs the pre_tool hooks that match the call: a rewrite passes
// to the next; the first deny or hold decides.
func (s *Set) PreTool(ctx context.Context, c hook.Call) (hook.ToolVerdict, error) {
	args := c.Arguments
	rewrote := false
	for _, h := range s.at[PreTool] {
		ev := Event{Agent: c.Agent, RunID: c.RunID, Call: &EventCall{ID: c.ID, Tool: c.Tool, Arguments: orEmptyObject(args)}}
		applied, a, err := s.ask(ctx, h, ev)
		switch {
		case err != nil:
			if failed(ctx, h, err) {
				continue
			}
			return hook.ToolVerdict{Action: hook.Deny, Reason: fmt.Sprintf("hook %s failed, so the call did not run: %v", h.Name, err)}, nil
		case !applied:
			continue
		case a.Action == "deny":
			hook.Record(ctx, hook.Decision{Hook: h.Name, Action: "deny", Reason: a.Reason})
			return hook.ToolVerdict{Action: hook.Deny, Reason: fmt.Sprintf("%s (hook %s)", orElse(a.Reason, "no reason given"), h.Name)}, nil
		case a.Action == "hold":
			hook.Record(ctx, hook.Decision{Hook: h.Name, Action: "hold", Reason: a.Reason})
			return hook.ToolVerdict{Action: hook.Hold, Reason: fmt.Sprintf("%s (hook %s)", orElse(a.Reason, "no reason given"), h.Name), Requirement: a.Requirement}, nil
		}
		d := hook.Decision{Hook: h.Name, Action: "run", Reason: a.Reason}
		if len(a.Arguments) > 0 {
			args, rewrote, d.Rewrote = a.Arguments, true, true
		}
		hook.Record(ctx, d)
	}
	v := hook.ToolVerdict{Action: hook.Run}
	if rewrote {
		v.Arguments = args
	}
	return v, nil
}

// PostTool runs the post_tool hooks that match the call, each seeing the
// result the previous one left. A hook that fails closed withholds the
// result: the model sees an error saying so.
func (s *Set) PostTool(ctx context.Context, c hook.Call, r hook.Result) (hook.Result, error) {
	for _, h := range s.at[PostTool] {
		ev := Event{Agent: c.Agent, RunID: c.RunID, Call: &EventCall{ID: c.ID, Tool: c.Tool, Arguments: orEmptyObject(c.Arguments)},
			Result: &EventResult{Output: r.Output, IsError: r.IsError}}
		applied, a, err := s.ask(ctx, h, ev)
		switch {
		case err != nil:
			if failed(ctx, h, err) {
				continue
			}
			return hook.Result{Output: fmt.Sprintf("the result was withheld: hook %s failed: %v", h.Name, err), IsError: true}, nil
		case !applied:
			continue
		case a.Action == "deny":
			hook.Record(ctx, hook.Decision{Hook: h.Name, Action: "deny", Reason: a.Reason, Rewrote: true})
			return hook.Result{Output: fmt.Sprintf("the result was withheld by hook %s: %s", h.Name, orElse(a.Reason, "no reason given")), IsError: true}, nil
		}
		d := hook.Decision{Hook: h.Name, Action: "run", Reason: a.Reason}
		if a.Output != nil {
			r.Output, d.Rewrote = *a.Output, true
		}
		if a.IsError != nil && *a.IsError != r.IsError {
			r.IsError, d.Rewrote = *a.IsError, true
		}
		hook.Record(ctx, d)
	}
	return r, nil
}

// PostTurn runs the post_turn hooks (validators) on a final answer: the
// first refusal decides, its message built from the hook's template. A
// hook that fails closed refuses the answer with the generic message.
func (s *Set) PostTurn(ctx context.Context, ans hook.Answer) (hook.Verdict, error) {
	text := ans.Text
	for _, h := range s.at[PostTurn] {
		applied, a, err := s.ask(ctx, h, Event{Agent: ans.Agent, RunID: ans.RunID, Answer: &text})
		switch {
		case err != nil:
			if failed(ctx, h, err) {
				continue
			}
			return hook.Verdict{}, fmt.Errorf("hook %s failed: %w", h.Name, err)
		case !applied:
			continue
		}
		value := valueText(a.Value)
		if a.Action != "deny" {
			hook.Record(ctx, hook.Decision{Hook: h.Name, Action: "run", Reason: a.Reason, Value: value})
			continue
		}
		reason := orElse(a.Reason, "the answer was not accepted")
		hook.Record(ctx, hook.Decision{Hook: h.Name, Action: "deny", Reason: reason, Value: value})
		v := hook.Verdict{Reason: fmt.Sprintf("%s (hook %s)", reason, h.Name)}
		if h.Message != "" {
			v.Message = strings.NewReplacer("{value}", value, "{reason}", reason).Replace(h.Message)
		}
		return v, nil
	}
	return hook.Verdict{Valid: true}, nil
}

// valueText spells a measured value for a message: a JSON string as its
// text, anything else as its JSON.
func valueText(v json.RawMessage) string {
	if len(v) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	return string(v)
}

func orElse(s, or string) string {
	if s == "" {
		return or
	}
	return s
}

func orEmptyObject(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("{}")
	}
	return b
}

// decodeAnswer reads a hook's answer: empty (or only white space) is an
// empty Answer; anything else must be one JSON object.
func decodeAnswer(b []byte) (Answer, error) {
	if len(strings.TrimSpace(string(b))) == 0 {
		return Answer{}, nil
	}
	var a Answer
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return Answer{}, fmt.Errorf("answered what is not a decision (want a JSON object such as {\"action\": \"deny\", \"reason\": \"…\"}): %v", err)
	}
	if dec.More() {
		return Answer{}, errors.New("answered more than one JSON value")
	}
	return a, nil
}
