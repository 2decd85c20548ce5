package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

// printer renders progress and results, as text for people or as JSON
// lines for programs.
type printer struct {
	w    io.Writer
	json bool

	mu    sync.Mutex
	calls map[string]string // call key → "name args", from replies seen
	// follow is the run a command follows: its lines go unmarked. Lines
	// of any other run (a sub-agent, or every run when follow is empty)
	// start with their run id.
	follow string
	seen   map[string]bool // runs with a printed entry, in order of ids
	start  *hitch.StartResult
}

// started records what a start did, for the JSON of its run.
func (p *printer) started(res hitch.StartResult) {
	p.mu.Lock()
	p.start = &res
	p.mu.Unlock()
}

func newPrinter(w io.Writer, asJSON bool) *printer {
	return &printer{w: w, json: asJSON, calls: map[string]string{}, seen: map[string]bool{}}
}

// following sets the run whose lines go unmarked.
func (p *printer) following(id string) {
	p.mu.Lock()
	p.follow = id
	p.mu.Unlock()
}

// followed returns the run whose lines go unmarked, "" when none.
func (p *printer) followed() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.follow
}

// driven returns the runs whose entries were printed.
func (p *printer) driven() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Sorted(maps.Keys(p.seen))
}

// event prints progress as it is made durable.
func (p *printer) event(ev hitch.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if ev.Delta != "" {
		return // replies are printed whole once journaled
	}
	for _, e := range ev.Entries {
		p.entry(e)
	}
}

// decoded is an entry's payload as T; a payload that does not decode
// leaves T's zero fields, which the printers show as absent.
func decoded[T any](data json.RawMessage) T {
	var d T
	_ = json.Unmarshal(data, &d)
	return d
}

// entry prints one journal entry.
func (p *printer) entry(e store.Entry) {
	p.seen[e.RunID] = true
	if p.json {
		// The API's one spelling of an entry (api.Entry.MarshalJSON).
		b, _ := json.Marshal(api.Entry{RunID: e.RunID, Pos: e.Pos, Kind: e.Kind, At: e.At, Data: e.Data})
		fmt.Fprintf(p.w, "%s\n", b)
		return
	}
	fmt.Fprintln(p.w, p.describe(e))
}

func (p *printer) describe(e store.Entry) string {
	prefix := fmt.Sprintf("%4d ", e.Pos)
	if p.follow == "" || e.RunID != p.follow {
		prefix = printable(e.RunID) + " " + prefix
	}
	switch e.Kind {
	case hitchtype.KindRunStarted:
		d := decoded[hitchtype.RunStarted](e.Data)
		return prefix + fmt.Sprintf("run %s started: agent %s v%d, input %s", e.RunID, d.Agent, d.Version, clip(d.Input, 120))
	case hitchtype.KindContext:
		d := decoded[hitchtype.Context](e.Data)
		s := prefix + fmt.Sprintf("context: tools [%s], instructions %d bytes", strings.Join(d.Tools, " "), len(d.Instructions))
		if d.Isolation != "" {
			s += ", commands isolated by " + d.Isolation
		}
		if d.SandboxWarning != "" {
			s += "\n" + prefix + "WARNING: " + d.SandboxWarning
		}
		return s
	case hitchtype.KindModelAttempt:
		d := decoded[hitchtype.ModelAttempt](e.Data)
		s := prefix + fmt.Sprintf("model: turn %d (model attempt %d of this run)", d.Turn, d.Attempt)
		if d.Purpose != "" {
			s += ", for " + d.Purpose
		}
		if d.Model != "" {
			s += ", to " + d.Model + " (" + d.Why
			if d.After != "" {
				s += " after " + string(d.After)
			}
			s += ")"
			for _, sk := range d.Skipped {
				s += fmt.Sprintf(", passing over %s (%s)", sk.Model, sk.Why)
			}
		}
		return s
	case hitchtype.KindModelReply:
		d := decoded[hitchtype.ModelReply](e.Data)
		var names []string
		for i, c := range d.Reply.ToolCalls {
			key := fmt.Sprintf("t%dc%d", d.Turn, i+1)
			p.calls[e.RunID+"/"+key] = c.Name + " " + clip(c.Arguments, 100)
			names = append(names, key+" "+c.Name)
		}
		s := prefix + "reply"
		if d.Reply.Text != "" {
			s += ": " + clip(d.Reply.Text, 200)
		}
		if len(names) > 0 {
			s += fmt.Sprintf(" → %d call(s): %s", len(names), strings.Join(names, ", "))
		}
		return s
	case hitchtype.KindModelFailed:
		d := decoded[hitchtype.ModelFailed](e.Data)
		return prefix + fmt.Sprintf("model failed (%s): %s", d.Kind, clip(d.Message, 200))
	case hitchtype.KindModelLost:
		d := decoded[hitchtype.ModelInterrupted](e.Data)
		return prefix + fmt.Sprintf("model attempt %d was interrupted (its process stopped); asking again", d.Attempt)
	case hitchtype.KindCallDecided:
		d := decoded[hitchtype.CallDecided](e.Data)
		s := prefix + fmt.Sprintf("  %s %s: %s", d.Call, p.calls[e.RunID+"/"+d.Call], d.Verdict)
		if d.Requirement != "" {
			s += " (" + d.Requirement + ")"
		}
		if d.Reason != "" {
			s += " — " + d.Reason
		}
		return s
	case hitchtype.KindApprovalGrant, hitchtype.KindApprovalDeny:
		d := decoded[hitchtype.ApprovalAnswer](e.Data)
		verb := "approved"
		if e.Kind == hitchtype.KindApprovalDeny {
			verb = "rejected"
		}
		s := prefix + fmt.Sprintf("  %s %s by %s", d.Call, verb, d.By)
		if d.Reason != "" {
			s += ": " + d.Reason
		}
		return s
	case hitchtype.KindApprovalLapse:
		d := decoded[hitchtype.ApprovalExpired](e.Data)
		return prefix + fmt.Sprintf("  %s approval expired (deadline %s)", d.Call, d.ExpiredAt.Local().Format(time.DateTime))
	case hitchtype.KindAnswerRefused:
		d := decoded[hitchtype.AnswerRefused](e.Data)
		return prefix + "answer refused: " + clip(d.Reason, 200)
	case hitchtype.KindCallRejected:
		d := decoded[hitchtype.CallRejected](e.Data)
		return prefix + fmt.Sprintf("  %s rejected: %s", d.Call, clip(d.Error, 200))
	case hitchtype.KindCallStarted:
		d := decoded[hitchtype.CallStarted](e.Data)
		if d.Attempt > 1 {
			return prefix + fmt.Sprintf("  %s started again (attempt %d)", d.Call, d.Attempt)
		}
		return prefix + fmt.Sprintf("  %s started", d.Call)
	case hitchtype.KindCallSettled:
		d := decoded[hitchtype.CallSettled](e.Data)
		return prefix + fmt.Sprintf("  %s done: %s", d.Call, clip(d.Output, 160))
	case hitchtype.KindCallFailed:
		d := decoded[hitchtype.CallFailed](e.Data)
		return prefix + fmt.Sprintf("  %s failed: %s", d.Call, clip(d.Error, 200))
	case hitchtype.KindCallUncertain:
		d := decoded[hitchtype.CallUncertain](e.Data)
		return prefix + fmt.Sprintf("  %s OUTCOME UNKNOWN: %s", d.Call, d.Reason)
	case hitchtype.KindCallLost:
		d := decoded[hitchtype.CallLost](e.Data)
		return prefix + fmt.Sprintf("  %s attempt %d lost, running it again: %s", d.Call, d.Attempt, clip(d.Reason, 200))
	case hitchtype.KindCallReconcile:
		d := decoded[hitchtype.CallReconciled](e.Data)
		if d.Unconfirmed {
			return prefix + fmt.Sprintf("  %s reconciled as unconfirmed (by %s)", d.Call, or(d.By, "someone"))
		}
		return prefix + fmt.Sprintf("  %s reconciled (by %s): %s", d.Call, or(d.By, "someone"), clip(d.Output, 160))
	case hitchtype.KindWakeArmed:
		d := decoded[hitchtype.WakeArmed](e.Data)
		return prefix + fmt.Sprintf("  %s waits for event %q until %s", d.Call, d.Event, d.Deadline.Local().Format(time.DateTime))
	case hitchtype.KindWakeDelivered:
		d := decoded[hitchtype.WakeDelivered](e.Data)
		return prefix + fmt.Sprintf("  %s event %q delivered (by %s) %s", d.Call, d.Event, or(d.By, "someone"), clip(string(d.Data), 160))
	case hitchtype.KindWakeExpired:
		d := decoded[hitchtype.WakeExpired](e.Data)
		return prefix + fmt.Sprintf("  %s event %q did not come by %s", d.Call, d.Event, d.Deadline.Local().Format(time.DateTime))
	case hitchtype.KindCallPending:
		d := decoded[hitchtype.CallPending](e.Data)
		return prefix + fmt.Sprintf("  %s pending outside until %s", d.Call, d.Deadline.Local().Format(time.DateTime))
	case hitchtype.KindCallCompleted:
		d := decoded[hitchtype.CallCompleted](e.Data)
		if d.Error != "" {
			return prefix + fmt.Sprintf("  %s failed outside (by %s): %s", d.Call, or(d.By, "someone"), clip(d.Error, 160))
		}
		return prefix + fmt.Sprintf("  %s completed outside (by %s): %s", d.Call, or(d.By, "someone"), clip(d.Output, 160))
	case hitchtype.KindCallTimedOut:
		d := decoded[hitchtype.CallTimedOut](e.Data)
		return prefix + fmt.Sprintf("  %s timed out waiting for its result (deadline %s)", d.Call, d.Deadline.Local().Format(time.DateTime))
	case hitchtype.KindRunWaiting:
		d := decoded[hitchtype.RunWaiting](e.Data)
		return prefix + fmt.Sprintf("waiting for %s: %s", d.Reason, strings.Join(d.Calls, ", "))
	case hitchtype.KindRunEnded:
		d := decoded[hitchtype.Outcome](e.Data)
		s := prefix + "ended: " + string(d.Status)
		if d.Reason != "" {
			s += " (" + d.Reason + ")"
		}
		return s
	}
	return prefix + e.Kind + " " + clip(string(e.Data), 200)
}

// outcome prints where a run stands after a command.
func (p *printer) outcome(run hitch.Run) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.json {
		v := runJSON(run)
		if p.start != nil && p.start.Run.ID == run.ID {
			created, same := p.start.Created, p.start.SameInput
			v.StartCreated = &created
			if !created {
				v.SameInput = &same
			}
		}
		b, _ := json.Marshal(v)
		fmt.Fprintf(p.w, "%s\n", b)
		return
	}
	fmt.Fprintf(p.w, "\nrun %s: %s\n", run.ID, run.Status)
	o := run.Outcome
	if o == nil {
		if run.Status == hitchtype.StatusWaiting {
			fmt.Fprintf(p.w, "the run is parked: `hitch runs show %s` says on what; answer it with `hitch approvals`, `hitch reconcile` or `hitch cancel`\n", run.ID)
		}
		return
	}
	if o.Answer != "" {
		fmt.Fprintf(p.w, "answer: %s\n", o.Answer)
	}
	if o.Error != "" {
		fmt.Fprintf(p.w, "reason: %s\n", o.Error)
	}
	if len(o.Uncertain) > 0 {
		fmt.Fprintf(p.w, "effects of unknown outcome: %s\n", strings.Join(o.Uncertain, ", "))
	}
	fmt.Fprintf(p.w, "turns %d, model attempts %d, tokens in %s out %s\n", o.Turns, o.Attempts, count(o.Usage.InputTokens), count(o.Usage.OutputTokens))
	switch {
	case run.Status == hitchtype.StatusCompleted && o.Answer == "":
		fmt.Fprintf(p.w, "stopped: %s, without an answer\n", or(o.Reason, "no reason given"))
	case o.Reason != "":
		fmt.Fprintf(p.w, "stopped: %s\n", o.Reason)
	}
}

// summary prints one line per run for a command that drove several:
// its id first, then where it stands.
func (p *printer) summary(run hitch.Run) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.json {
		b, _ := json.Marshal(runJSON(run))
		fmt.Fprintf(p.w, "%s\n", b)
		return
	}
	s := fmt.Sprintf("%s %s", printable(run.ID), run.Status)
	if o := run.Outcome; o != nil {
		switch {
		case run.Status == hitchtype.StatusCompleted && o.Answer == "":
			s += fmt.Sprintf(": stopped at %s, without an answer", or(o.Reason, "no reason given"))
		case o.Error != "":
			s += ": " + clip(o.Error, 160)
		case o.Reason != "":
			s += ": stopped at " + o.Reason
		}
	}
	if run.Status == hitchtype.StatusWaiting {
		s += fmt.Sprintf(" (hitch runs show %s says on what)", printable(run.ID))
	}
	fmt.Fprintln(p.w, s)
}

// runView is the stable JSON shape of a run.
type runView struct {
	ID       string           `json:"id"`
	RootID   string           `json:"root_id"`
	ParentID string           `json:"parent_id,omitempty"`
	Tenant   string           `json:"tenant"`
	Agent    string           `json:"agent"`
	Version  int              `json:"version"`
	Status   hitchtype.Status `json:"status"`
	Position int64            `json:"position"`
	// ForkedFrom names a fork's source.
	ForkedFrom *forkedView    `json:"forked_from,omitempty"`
	Outcome    *hitch.Outcome `json:"outcome,omitempty"`
	Created    string         `json:"created_at"`
	Updated    string         `json:"updated_at"`
	// For the run a start followed: whether the start created it, and
	// when it did not, whether the existing run had the same input.
	StartCreated *bool `json:"created,omitempty"`
	SameInput    *bool `json:"same_input,omitempty"`
}

// forkedView is the JSON of a fork's source.
type forkedView struct {
	Run    string `json:"run"`
	Pos    int64  `json:"pos"`
	Replay bool   `json:"replay,omitempty"`
}

func runJSON(run hitch.Run) runView {
	v := runView{ID: run.ID, RootID: run.RootID, ParentID: run.ParentID, Tenant: run.Tenant, Agent: run.Agent, Version: run.Version,
		Status: run.Status, Position: run.Position, Outcome: run.Outcome,
		Created: run.CreatedAt.UTC().Format("2006-01-02T15:04:05.000Z"), Updated: run.UpdatedAt.UTC().Format("2006-01-02T15:04:05.000Z")}
	if f := run.ForkedFrom; f != nil {
		v.ForkedFrom = &forkedView{Run: f.Run, Pos: f.Pos, Replay: f.Replay}
	}
	return v
}

// forkedText says where a fork came from, for people; "" for a run that
// is not one.
func forkedText(f *hitchtype.ForkedFrom) string {
	switch {
	case f == nil:
		return ""
	case f.Replay:
		return fmt.Sprintf("replay of %s", f.Run)
	}
	return fmt.Sprintf("%s at %d", f.Run, f.Pos)
}

func count(v *int64) string {
	if v == nil {
		return "unreported"
	}
	return fmt.Sprint(*v)
}

func or(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// clip shortens s to n bytes on a character boundary, on one line.
func clip(s string, n int) string {
	s = strings.ReplaceAll(strings.TrimSpace(s), "\n", "⏎")
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("… (%d bytes)", len(s))
}
