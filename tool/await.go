package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// NewExternal declares an external tool (Info.External) from its name,
// description and the JSON Schema of its arguments (nil: any object).
// hitch never runs a body for it: a call's result is given from outside.
func NewExternal(name, description string, schema json.RawMessage, opts ...Option) (Tool, error) {
	if name == "" {
		return nil, errors.New("external tool: no name")
	}
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	var root map[string]any
	if err := json.Unmarshal(schema, &root); err != nil {
		return nil, fmt.Errorf("external tool %s: schema is not a JSON object: %w", name, err)
	}
	info := Info{Name: name, Description: description, Schema: schema}
	for _, o := range opts {
		o(&info)
	}
	info.External = true
	return external{info}, nil
}

type external struct{ info Info }

func (t external) Info() Info { return t.info }

func (t external) Call(context.Context, json.RawMessage) (string, error) {
	return "", fmt.Errorf("%s is an external tool: its result comes from outside the run", t.info.Name)
}

// AwaitEventName is the name of the tool AwaitEvent returns.
const AwaitEventName = "await_event"

// Await is what a call of await_event asks for: to wait for the event
// named Event until a deadline, given either as Timeout from now or as
// Until (one of them, or neither for the longest wait allowed).
type Await struct {
	Event   string
	Timeout time.Duration
	Until   time.Time
}

// Awaiter is implemented by the tool AwaitEvent returns. The engine does
// not run its body: a call parks the run until the event is delivered
// (Runtime.Wake) or the deadline passes, and the model is told which.
type Awaiter interface {
	Tool
	// Await decodes a call's arguments. An *ArgumentError is shown to the
	// model.
	Await(args json.RawMessage) (Await, error)
}

// AwaitEvent returns the built-in tool await_event: "wake me when the
// event comes, or at the deadline if it does not". Like any tool, each
// call is decided by the policy first.
func AwaitEvent() Tool { return awaitEvent{} }

type awaitEvent struct{}

var _ Awaiter = awaitEvent{}

const awaitSchema = `{"type":"object","properties":{` +
	`"name":{"type":"string","description":"The event to wait for, as the system that sends it names it."},` +
	`"timeout":{"type":"string","description":"How long to wait at most, as a duration such as 90s, 10m or 2h."},` +
	`"until":{"type":"string","description":"The latest time to wait until, in RFC 3339 (2026-01-02T15:04:05Z). Give timeout or until, not both."}},` +
	`"required":["name"],"additionalProperties":false}`

func (awaitEvent) Info() Info {
	return Info{Name: AwaitEventName, Schema: json.RawMessage(awaitSchema),
		Description: "Wait until an event arrives, or until a deadline if it does not. The run pauses meanwhile; " +
			"the result says what the event carried, or that it did not come in time."}
}

func (awaitEvent) Call(context.Context, json.RawMessage) (string, error) {
	return "", errors.New("await_event is carried out by the runtime, not run as a body")
}

func (awaitEvent) Await(args json.RawMessage) (Await, error) {
	bad := func(format string, a ...any) (Await, error) {
		return Await{}, &ArgumentError{Tool: AwaitEventName, Reason: fmt.Sprintf(format, a...)}
	}
	var in struct {
		Name    string `json:"name"`
		Timeout string `json:"timeout"`
		Until   string `json:"until"`
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return bad("%v", err)
	}
	var a Await
	a.Event = strings.TrimSpace(in.Name)
	if a.Event == "" {
		return bad("name is required: the event to wait for")
	}
	if in.Timeout != "" && in.Until != "" {
		return bad("give timeout or until, not both")
	}
	if in.Timeout != "" {
		d, err := time.ParseDuration(in.Timeout)
		if err != nil || d <= 0 {
			return bad("timeout %q: want a positive duration such as 90s, 10m or 2h", in.Timeout)
		}
		a.Timeout = d
	}
	if in.Until != "" {
		t, err := time.Parse(time.RFC3339, in.Until)
		if err != nil {
			return bad("until %q: want a time in RFC 3339, such as 2026-01-02T15:04:05Z", in.Until)
		}
		a.Until = t
	}
	return a, nil
}
