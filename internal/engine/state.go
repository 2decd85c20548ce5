package engine

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/route"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/store"
)

// ErrCorrupt: a journal is not whole (a position is missing or out of
// order), so it is not replayed. It is the store's error: a driver that
// notices the gap first reports the same one.
var ErrCorrupt = store.ErrCorrupt

// callState is one tool call's lifecycle as the journal tells it.
type callState struct {
	key      string // stable id within the run: "t<turn>c<index>"
	call     model.ToolCall
	decided  bool
	decision CallDecided
	started  int // bodies started
	// done means the model has an answer for this call (result, failure,
	// denial, rejection or reconciliation).
	done       bool
	result     string
	isError    bool
	uncertain  bool // uncertain and not (yet) reconciled
	reconciled bool
	reason     string
	// approval is the state of a call's approval request: "" (none),
	// pending, granted, rejected or expired.
	approval string
	expires  *time.Time
	// hooked is set once the pre-tool hook gave its verdict; runArgs are
	// the arguments it rewrote, if any.
	hooked  bool
	runArgs json.RawMessage
	// held is set when the pre-tool hook held the call for a person.
	held bool
	// wake is an await_event call's wake: "" (none), armed, delivered or
	// expired; event names what it waits for.
	wake  string
	event string
	// outside is an external call's state: "" (none), pending, completed
	// (also a held call given its result from outside) or timed_out.
	outside string
	// deadline ends an armed wake's or a pending call's wait.
	deadline *time.Time
}

// args returns the arguments the body runs with: the hook's rewrite, or
// the model's own.
func (c *callState) args() string {
	if len(c.runArgs) > 0 {
		return string(c.runArgs)
	}
	if a := strings.TrimSpace(c.call.Arguments); a != "" {
		return a
	}
	return "{}"
}

// turnState is one model reply and its calls.
type turnState struct {
	reply model.Reply
	calls []*callState
	// refused is set when the reply's text was refused as a typed answer;
	// correction is what the model was told.
	refused    bool
	correction string
}

// state is the fold of a run's journal.
type state struct {
	started RunStarted
	context *Context // last recorded

	turns    []*turnState
	attempts int // model attempts journaled
	// inFlight is set when the last attempt has neither reply nor failure.
	inFlight bool
	// turnOpen is set once the next turn's model call has been attempted:
	// its tool set is then the last recorded context, whatever the
	// agent's tool sources say now.
	turnOpen bool
	// failures counts consecutive failed attempts, for backoff.
	failures   int
	lastFailed *ModelFailed
	// tries are the turn's attempts so far, for a route's next choice:
	// the model each went to, and the class of its failure ("" while in
	// flight, or when it was cut short).
	tries []route.Try
	// cost sums the priced generations; unpriced is set once any
	// generation has no price (no usage, no price, failed or cut short).
	cost     float64
	unpriced bool

	// refusals counts final texts refused as typed answers.
	refusals int
	// finalAt is the number of turns before the final, tool-free turn
	// (-1: none); finalNote is what the model was told there.
	finalAt   int
	finalNote string

	// roots are the workspace roots granted to the run, in order.
	roots []string
	// compactedThrough turns are folded into summary; compactTried is the
	// turn count at the last compaction attempt, so a failed one is not
	// retried before the history grows.
	compactedThrough int
	// historyFolded of the history's first messages are folded into
	// summary (when compactedThrough is 0); historyTried is set once a
	// compaction of the history was attempted.
	historyFolded int
	historyTried  bool
	summary       string
	compactTried  int

	// steered are session messages that joined the run, each at the turn
	// count it joined at (see session.go).
	steered []steer

	waiting *RunWaiting
	ended   *Outcome
	usage   Usage
	pos     int64
}

// addCost adds a generation's price to the run's cost; nil makes it
// unknown.
func (s *state) addCost(usd *float64) {
	if usd == nil {
		s.unpriced = true
		return
	}
	s.cost += *usd
}

func (s *state) lastTurn() *turnState {
	if len(s.turns) == 0 {
		return nil
	}
	return s.turns[len(s.turns)-1]
}

func (s *state) findCall(key string) *callState {
	for i := len(s.turns) - 1; i >= 0; i-- {
		for _, c := range s.turns[i].calls {
			if c.key == key {
				return c
			}
		}
	}
	return nil
}

// applyValue folds one entry into the state; value, when not nil, is the
// value e.Data was encoded from (by this process, and unchanged by redaction), which
// is taken instead of decoding the data again. A value of another type
// than the kind's is decoded from the data as usual.
func (s *state) applyValue(e store.Entry, value any) error {
	if e.Pos != s.pos+1 {
		// A missing or repeated position means entries were lost: replaying
		// the rest would rebuild a history that never happened.
		return fmt.Errorf("%w: entry at position %d follows position %d (want %d)", ErrCorrupt, e.Pos, s.pos, s.pos+1)
	}
	s.pos = e.Pos
	decode := func(v any) error {
		if value != nil && takeValue(v, value, e.Data) {
			return nil
		}
		if err := json.Unmarshal(e.Data, v); err != nil {
			return fmt.Errorf("journal entry %d (%s): %w", e.Pos, e.Kind, err)
		}
		return nil
	}
	call := func(key string) (*callState, error) {
		c := s.findCall(key)
		if c == nil {
			return nil, fmt.Errorf("journal entry %d (%s): unknown call %q", e.Pos, e.Kind, key)
		}
		return c, nil
	}
	switch e.Kind {
	case KindRunStarted:
		return decode(&s.started)
	case KindContext:
		var c Context
		if err := decode(&c); err != nil {
			return err
		}
		s.context = &c
		if c.FinalTurn {
			s.finalAt, s.finalNote = len(s.turns), c.Note
		}
	case KindModelAttempt:
		var a ModelAttempt
		if err := decode(&a); err != nil {
			return err
		}
		if s.inFlight {
			// The previous attempt was interrupted: it brought no usage.
			s.usage.Add(nil)
			s.unpriced = true
		}
		s.attempts = a.Attempt
		s.inFlight = true
		if a.Purpose == "" {
			s.turnOpen = true
			s.tries = append(s.tries, route.Try{Model: a.Model})
		}
		s.waiting = nil
	case KindModelReply:
		var r ModelReply
		if err := decode(&r); err != nil {
			return err
		}
		s.inFlight = false
		s.turnOpen = false
		s.failures = 0
		s.lastFailed = nil
		s.tries = nil
		s.addCost(r.CostUSD)
		t := &turnState{reply: r.Reply}
		n := len(s.turns) + 1
		for i, tc := range r.Reply.ToolCalls {
			t.calls = append(t.calls, &callState{key: hitchtype.CallKey(n, i+1), call: tc})
		}
		s.turns = append(s.turns, t)
		s.usage.Add(r.Reply.Usage)
	case KindCompacted:
		var c Compacted
		if err := decode(&c); err != nil {
			return err
		}
		s.inFlight = false
		s.compactTried = len(s.turns)
		if c.Usage != nil || c.Error != "" {
			s.usage.Add(c.Usage)
			s.addCost(c.CostUSD)
		}
		if c.Through == 0 && c.History > 0 {
			s.historyTried = true
			if c.Error == "" && c.History <= len(s.started.History) {
				s.historyFolded, s.summary = c.History, c.Summary
			}
		} else if c.Error == "" {
			s.compactedThrough, s.summary = c.Through, c.Summary
		}
	case KindModelLost:
		var m ModelInterrupted
		if err := decode(&m); err != nil {
			return err
		}
		s.inFlight = false
		s.usage.Add(nil)
		s.unpriced = true
	case KindModelFailed:
		var f ModelFailed
		if err := decode(&f); err != nil {
			return err
		}
		s.inFlight = false
		s.failures++
		s.lastFailed = &f
		s.usage.Add(nil)
		s.unpriced = true
		if n := len(s.tries); n > 0 {
			s.tries[n-1].Kind = f.Kind
		}
	case KindCallDecided:
		var d CallDecided
		if err := decode(&d); err != nil {
			return err
		}
		c, err := call(d.Call)
		if err != nil {
			return err
		}
		c.decided = true
		if d.Verdict != policy.Deny || c.approval == "" {
			// A denial at an approval answer keeps the request on record.
			c.decision = d
		}
		if d.Verdict == policy.RequireApproval {
			c.approval, c.expires = approvalPending, d.ExpiresAt
		}
		if d.Verdict == policy.Deny {
			c.done, c.isError = true, true
			c.result = "denied by policy: " + d.Reason
		}
	case KindCallRejected:
		var r CallRejected
		if err := decode(&r); err != nil {
			return err
		}
		c, err := call(r.Call)
		if err != nil {
			return err
		}
		c.decided = true
		c.done, c.isError, c.result = true, true, r.Error
	case KindCallHooked:
		var h CallHooked
		if err := decode(&h); err != nil {
			return err
		}
		c, err := call(h.Call)
		if err != nil {
			return err
		}
		c.hooked, c.runArgs, c.held = true, h.Arguments, h.Action == "hold"
		if h.Action == "deny" {
			c.done, c.isError = true, true
			c.result = "denied by a hook: " + h.Reason
		}
	case KindCallStarted:
		var st CallStarted
		if err := decode(&st); err != nil {
			return err
		}
		c, err := call(st.Call)
		if err != nil {
			return err
		}
		c.started = st.Attempt
	case KindCallSettled:
		var st CallSettled
		if err := decode(&st); err != nil {
			return err
		}
		c, err := call(st.Call)
		if err != nil {
			return err
		}
		c.done, c.isError, c.result, c.uncertain = true, false, st.Output, false
	case KindCallFailed:
		var f CallFailed
		if err := decode(&f); err != nil {
			return err
		}
		c, err := call(f.Call)
		if err != nil {
			return err
		}
		c.done, c.isError, c.result, c.uncertain = true, true, f.Error, false
	case KindCallUncertain:
		var u CallUncertain
		if err := decode(&u); err != nil {
			return err
		}
		c, err := call(u.Call)
		if err != nil {
			return err
		}
		c.uncertain, c.reason = true, u.Reason
	case KindCallLost:
		// A record for people: the next call.started counts the attempt.
		var l CallLost
		if err := decode(&l); err != nil {
			return err
		}
		if _, err := call(l.Call); err != nil {
			return err
		}
	case KindCallReconcile:
		var r CallReconciled
		if err := decode(&r); err != nil {
			return err
		}
		c, err := call(r.Call)
		if err != nil {
			return err
		}
		c.uncertain, c.done, c.reconciled = false, true, true
		switch {
		case r.Unconfirmed:
			c.isError = true
			c.result = "outcome unknown: the effect of this call could not be confirmed; it may or may not have happened"
		case r.Error != "":
			c.isError, c.result = true, r.Error
		default:
			c.result = r.Output
		}
	case KindApprovalGrant, KindApprovalDeny:
		var a ApprovalAnswer
		if err := decode(&a); err != nil {
			return err
		}
		c, err := call(a.Call)
		if err != nil {
			return err
		}
		if e.Kind == KindApprovalGrant {
			c.approval = approvalGranted
		} else {
			c.approval = approvalRejected
			c.done, c.isError = true, true
			c.result = fmt.Sprintf("approval rejected by %s, so the call did not run", a.By)
			if a.Reason != "" {
				c.result += ": " + a.Reason
			}
		}
	case KindApprovalLapse:
		var a ApprovalExpired
		if err := decode(&a); err != nil {
			return err
		}
		c, err := call(a.Call)
		if err != nil {
			return err
		}
		c.approval = approvalExpired
		c.done, c.isError = true, true
		c.result = fmt.Sprintf("the approval request expired at %s with no answer, so the call did not run", a.ExpiredAt.UTC().Format(time.RFC3339))
	case KindWakeArmed, KindWakeDelivered, KindWakeExpired, KindCallPending, KindCallCompleted, KindCallTimedOut:
		return s.applyWait(e, decode)
	case KindRootGranted, KindRootRevoked:
		var rc RootChanged
		if err := decode(&rc); err != nil {
			return err
		}
		s.roots = applyRoot(s.roots, e.Kind, rc.Path)
	case KindAnswerRefused:
		var a AnswerRefused
		if err := decode(&a); err != nil {
			return err
		}
		t := s.lastTurn()
		if t == nil {
			return fmt.Errorf("journal entry %d: %s before any reply", e.Pos, e.Kind)
		}
		t.refused, t.correction = true, a.Message
		s.refusals++
	case KindHookDecided:
		// Who decided, for people: the outcome is journaled elsewhere.
	case KindRunWaiting:
		var w RunWaiting
		if err := decode(&w); err != nil {
			return err
		}
		s.waiting = &w
	case KindSessionSteered:
		var m SessionSteered
		if err := decode(&m); err != nil {
			return err
		}
		s.steered = append(s.steered, steer{at: len(s.turns), SessionSteered: m})
	case KindRunEnded:
		var o Outcome
		if err := decode(&o); err != nil {
			return err
		}
		s.ended = &o
	default:
		return fmt.Errorf("journal entry %d: unknown kind %q", e.Pos, e.Kind)
	}
	return nil
}

// messages rebuilds the provider history from the journal: the user's input,
// then each reply followed by its calls' results in the reply's order.
func (s *state) messages() []model.Message {
	return s.messagesFrom(s.compactedThrough, len(s.turns))
}

// history is the run's history as requests show it: a summary in place
// of the messages folded into it, then the rest.
func (s *state) history() []model.Message {
	if s.historyFolded == 0 {
		return s.started.History
	}
	msgs := make([]model.Message, 0, 1+len(s.started.History)-s.historyFolded)
	msgs = append(msgs, model.Message{Role: model.RoleUser, Text: summaryPrefix + s.summary})
	return append(msgs, s.started.History[s.historyFolded:]...)
}

// messagesFrom rebuilds the history with the turns before from folded into
// the compaction summary, up to turn to.
func (s *state) messagesFrom(from, to int) []model.Message {
	msgs := make([]model.Message, 0, 2+len(s.started.History)+3*(to-from))
	if from == 0 {
		msgs = append(msgs, s.history()...)
	}
	msgs = append(msgs, model.Message{Role: model.RoleUser, Text: s.started.Input})
	if from > 0 {
		msgs = append(msgs, model.Message{Role: model.RoleUser, Text: summaryPrefix + s.summary})
	}
	for i, t := range s.turns[from:to] {
		i += from
		msgs = s.steeredAt(msgs, i)
		if i == s.finalAt {
			msgs = append(msgs, model.Message{Role: model.RoleUser, Text: s.finalNote})
		}
		msgs = append(msgs, model.Message{Role: model.RoleAssistant, Text: t.reply.Text, ToolCalls: t.reply.ToolCalls})
		for _, c := range t.calls {
			if !c.done {
				continue
			}
			msgs = append(msgs, model.Message{
				Role: model.RoleTool, ToolCallID: c.call.ID, ToolName: c.call.Name,
				Text: c.result, IsError: c.isError,
			})
		}
		if t.refused {
			msgs = append(msgs, model.Message{Role: model.RoleUser, Text: t.correction})
		}
	}
	if to == len(s.turns) {
		msgs = s.steeredAt(msgs, to)
	}
	if s.finalAt == to {
		msgs = append(msgs, model.Message{Role: model.RoleUser, Text: s.finalNote})
	}
	return msgs
}

// uncertainCalls lists the keys of calls whose effect is unknown.
func (s *state) uncertainCalls() []string {
	var keys []string
	for _, t := range s.turns {
		for _, c := range t.calls {
			if c.uncertain && !c.done {
				keys = append(keys, c.key)
			}
		}
	}
	return keys
}

// pendingApprovals lists calls waiting for an answer. At a non-zero now,
// requests past their deadline are left out: they have expired, whether
// or not the lapse is journaled yet.
func (s *state) pendingApprovals(now time.Time) []*callState {
	var out []*callState
	for _, t := range s.turns {
		for _, c := range t.calls {
			if c.approval == approvalPending && !c.done && (now.IsZero() || !c.overdue(now)) {
				out = append(out, c)
			}
		}
	}
	return out
}

// overdue reports a request past its deadline at now.
func (c *callState) overdue(now time.Time) bool {
	return c.expires != nil && !now.Before(*c.expires)
}

// The states of an approval request.
const (
	approvalPending  = "pending"
	approvalGranted  = "granted"
	approvalRejected = "rejected"
	approvalExpired  = "expired"
)

// fold replays entries into a fresh state.
func fold(entries []store.Entry) (*state, error) { return foldFrom(entries, nil) }

// foldFrom is fold where first, when not nil, is the value the first entry
// was encoded from, folded without decoding it (as applyValue takes it).
func foldFrom(entries []store.Entry, first any) (*state, error) {
	s := &state{finalAt: -1}
	for i, e := range entries {
		var value any
		if i == 0 {
			value = first
		}
		if err := s.applyValue(e, value); err != nil {
			return nil, err
		}
	}
	if s.started.Agent == "" {
		return nil, fmt.Errorf("journal does not start with %s", KindRunStarted)
	}
	return s, nil
}

// checkValues makes takeValue check each value against a decode of its
// data. The engine's tests turn it on, so a type whose encoding loses or
// changes something (a field left out, a time's monotonic reading, nil
// against empty) fails them instead of making a live state differ from a
// recovered one; it stays off elsewhere, where it would double the cost
// the value saves (and the allocation guard would count it).
var checkValues = false

// takeValue copies value into dst (a pointer to the kind's type) and
// reports whether it could. The copy is shallow: the runner hands over
// what it encoded and does not change it afterwards.
func takeValue(dst, value any, data []byte) bool {
	d, v := reflect.ValueOf(dst).Elem(), reflect.ValueOf(value)
	if v.Type() != d.Type() {
		return false
	}
	d.Set(v)
	if checkValues {
		decoded := reflect.New(d.Type())
		if err := json.Unmarshal(data, decoded.Interface()); err != nil || !reflect.DeepEqual(decoded.Elem().Interface(), value) {
			panic(fmt.Sprintf("engine: a %s value differs from its own encoding %s (%v): decode it instead", d.Type(), data, err))
		}
	}
	return true
}
