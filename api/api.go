package api

import (
	"encoding/json"
	"time"
)

// Roles of a token, from least to most.
const (
	// RoleViewer reads: runs, journals, approvals, agents, workspaces.
	RoleViewer = "viewer"
	// RoleOperator also answers approvals, reconciles calls, cancels runs
	// and grants or revokes workspace roots.
	RoleOperator = "operator"
	// RoleAdmin may do everything, starting runs included.
	RoleAdmin = "admin"
)

// Me answers GET /v1/me: who the request's token speaks for, so a client
// (the console) offers only what the role may do.
type Me struct {
	Name   string `json:"name" doc:"The token's name: who journals say acted."`
	Tenant string `json:"tenant" doc:"The tenant whose runs the token sees."`
	Role   string `json:"role" enum:"viewer,operator,admin" doc:"What the token may do (docs/api.md)."`
}

// Run is a run as the store holds it.
type Run struct {
	ID       string `json:"id" doc:"The run's id."`
	Tenant   string `json:"tenant" doc:"The tenant the run belongs to."`
	RootID   string `json:"root_id" doc:"The family's root run; the run's own id for a root."`
	ParentID string `json:"parent_id,omitempty" doc:"The run that started this one, for a sub-agent."`
	Agent    string `json:"agent" doc:"The agent's name."`
	Version  int    `json:"version" doc:"The agent's version."`
	Status   string `json:"status" enum:"queued,running,waiting,completed,failed,cancelled,answer_invalid,budget_exhausted" doc:"Where the run is in its lifecycle."`
	// Position is the journal's length: the position of its last entry.
	Position  int64     `json:"position" doc:"The journal's length: the position of its last entry."`
	Outcome   *Outcome  `json:"outcome,omitempty" doc:"The terminal summary, once the run has ended."`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Title     string    `json:"title,omitempty" doc:"The head of the run's input (200 characters), which the text filter searches."`
	// Waiting says what a waiting run waits for.
	Waiting *Waiting `json:"waiting,omitempty" doc:"For a waiting run (in lists and GET /v1/runs/{id}): what it waits for."`
	// ForkedFrom names a fork's source.
	ForkedFrom *ForkedFrom `json:"forked_from,omitempty" doc:"For a fork (or a replay): the run and journal position its history was copied from."`
}

// ForkedFrom is where a fork's history came from.
type ForkedFrom struct {
	Run    string `json:"run" doc:"The run forked."`
	Pos    int64  `json:"pos" doc:"The last position of its journal the fork kept."`
	Replay bool   `json:"replay,omitempty" doc:"The fork is a replay: its tool calls are answered from the run's recorded results."`
}

// Waiting is what a waiting run waits for, as it parked.
type Waiting struct {
	Reason string   `json:"reason" enum:"approval,uncertain,children,event,external" doc:"An approval, a reconciliation of uncertain calls, its sub-agents, an awaited event, or an external call's result."`
	Calls  []string `json:"calls,omitempty" doc:"The calls it waits on."`
}

// Outcome is a run's terminal summary.
type Outcome struct {
	Status    string   `json:"status"`
	Answer    string   `json:"answer,omitempty" doc:"The final answer: text, or a typed answer's JSON."`
	Raw       string   `json:"raw,omitempty" doc:"The last refused text of a run that ended answer_invalid."`
	Reason    string   `json:"reason,omitempty" doc:"A short cause: max_turns, model_attempts, policy, cancelled, uncertain, ..."`
	Error     string   `json:"error,omitempty"`
	Uncertain []string `json:"uncertain,omitempty" doc:"Calls whose effect is unknown at the end."`
	// CancelledBy and CancelReason are who cancelled the run and why, as
	// the cancel request said.
	CancelledBy  string   `json:"cancelled_by,omitempty" doc:"For a cancelled run: who asked."`
	CancelReason string   `json:"cancel_reason,omitempty" doc:"For a cancelled run: why, as the request said."`
	Turns        int      `json:"turns"`
	Attempts     int      `json:"attempts"`
	Usage        Usage    `json:"usage"`
	CostUSD      *float64 `json:"cost_usd,omitempty" doc:"The usage at the model's list price; absent when unknown."`
}

// Usage sums what providers reported; null means some reply did not say.
type Usage struct {
	InputTokens       *int64 `json:"input_tokens" nullable:"true"`
	OutputTokens      *int64 `json:"output_tokens" nullable:"true"`
	CachedInputTokens *int64 `json:"cached_input_tokens" nullable:"true"`
	Generations       int    `json:"generations"`
}

// StartRun is the body of POST /v1/runs.
type StartRun struct {
	Agent string `json:"agent" minLength:"1" maxLength:"64" doc:"The agent to run, by name (its latest version)."`
	Input string `json:"input" minLength:"1" doc:"The prompt. It may not be blank."`
	// ID makes a retried start idempotent: the same id again starts
	// nothing.
	ID           string `json:"id,omitempty" maxLength:"128" pattern:"^[A-Za-z0-9._:-]+$" doc:"A caller-chosen run id (1-128 letters, digits and . _ : -); the same id again starts nothing."`
	Instructions string `json:"instructions,omitempty" doc:"The caller's layer of instructions, laid over the agent's."`
	// Metadata is journaled with the run's start and never sent to the
	// model.
	Metadata map[string]any `json:"metadata,omitempty" doc:"A JSON object journaled with the run's start (a ticket, who asked), never sent to the model; at most 16 KiB."`
}

// ForkRun is the body of POST /v1/runs/{id}/fork.
type ForkRun struct {
	At int64 `json:"at" minimum:"1" doc:"The last position of the run's journal the fork keeps as its history (1 keeps only its start)."`
	// ID makes a retried fork idempotent.
	ID           string `json:"id,omitempty" maxLength:"128" pattern:"^[A-Za-z0-9._:-]+$" doc:"A caller-chosen id for the fork; the same id again creates nothing."`
	Version      int    `json:"version,omitempty" minimum:"0" doc:"Another version of the run's agent to go on with (another model, tools or instructions); 0 keeps the run's."`
	Instructions string `json:"instructions,omitempty" doc:"The caller's layer of instructions from the fork on, in place of the run's."`
	Model        string `json:"model,omitempty" maxLength:"128" doc:"A model (by its name, as provider/model) that answers the fork's turns from the fork on, in place of the agent's: the model of any agent the server drives."`
	Reply        string `json:"reply,omitempty" doc:"The model reply at position at (which must hold one), rewritten as this final text."`
	Message      string `json:"message,omitempty" doc:"A user message the model sees after the history."`
}

// StartedRun answers POST /v1/runs.
type StartedRun struct {
	Run Run `json:"run"`
	// Created is false when a run with the id existed already.
	Created bool `json:"created" doc:"False when a run with the id existed: nothing was started."`
	// SameInput, when Created is false, says whether the existing run had
	// the same agent and input.
	SameInput bool `json:"same_input" doc:"For an existing id: whether it was started with the same agent and input."`
}

// RunPage is one page of runs.
type RunPage struct {
	Runs []Run `json:"runs" nullable:"false"`
	// Next is the cursor of the following page; empty after the last.
	Next string `json:"next,omitempty" doc:"Pass as ?after= for the next page; absent after the last."`
}

// Entry is one journal entry.
type Entry struct {
	RunID string          `json:"run" doc:"The run the entry belongs to."`
	Pos   int64           `json:"pos" doc:"The entry's position in its run's journal, from 1."`
	Kind  string          `json:"kind" doc:"The entry's kind (docs/journal.md)."`
	At    time.Time       `json:"at" doc:"The store's clock when the entry was appended."`
	Data  json.RawMessage `json:"data" doc:"The kind's payload (docs/journal.md)."`
}

// EntryTimeFormat is the one spelling of a journal entry's time: UTC, to
// the microsecond, as the stores keep it.
const EntryTimeFormat = "2006-01-02T15:04:05.000000Z"

// MarshalJSON writes an entry in its one spelling, byte for byte the same
// whoever encodes it — the journal page, the event stream, the Go client,
// `hitch runs events --json`: its fields in this order, at in
// EntryTimeFormat, and JSON's HTML-safe escapes, which later encoders
// neither undo nor add to.
func (e Entry) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		RunID string          `json:"run"`
		Pos   int64           `json:"pos"`
		Kind  string          `json:"kind"`
		At    string          `json:"at"`
		Data  json.RawMessage `json:"data"`
	}{e.RunID, e.Pos, e.Kind, e.At.UTC().Format(EntryTimeFormat), e.Data})
}

// EntryPage is one page of a journal.
type EntryPage struct {
	Entries []Entry `json:"entries" nullable:"false"`
	// Next is the position to pass as ?after= for the following page; it
	// is absent when the page reached the journal's end as it stood.
	Next *int64 `json:"next,omitempty" doc:"Pass as ?after= to read on; absent at the journal's end as it stood."`
}

// Cancel is the optional body of POST /v1/runs/{id}/cancel.
type Cancel struct {
	Reason string `json:"reason,omitempty" maxLength:"4096" doc:"Why the run is cancelled, for the journal: the run's outcome carries it."`
	By     string `json:"by,omitempty" maxLength:"128" doc:"Who cancels, for the journal; default the token's name."`
}

// Reconcile is the body of POST /v1/runs/{id}/reconcile.
type Reconcile struct {
	Call        string `json:"call" minLength:"1" doc:"The uncertain call's id."`
	Output      string `json:"output,omitempty" doc:"The call's confirmed result, shown to the model."`
	Unconfirmed bool   `json:"unconfirmed,omitempty" doc:"The effect could not be established; the model is told so."`
	Error       string `json:"error,omitempty" doc:"The call is confirmed not to have acted: it is settled as failed, and the model sees this error."`
	By          string `json:"by,omitempty" doc:"Who reconciled, for the journal; default the token's name."`
}

// Wake is the body of POST /v1/runs/{id}/wake: an event delivered to the
// wake a run armed for it (the built-in tool await_event).
type Wake struct {
	Event string          `json:"event" minLength:"1" maxLength:"128" doc:"The event's name, as the run awaits it."`
	Data  json.RawMessage `json:"data,omitempty" doc:"JSON the model sees with the event."`
	By    string          `json:"by,omitempty" maxLength:"128" doc:"Who delivered it, for the journal; default the token's name."`
}

// CompleteCall is the body of POST /v1/runs/{id}/calls/{call}/complete:
// the result of an external call, or the release of a call held by a hook.
type CompleteCall struct {
	Output  string `json:"output,omitempty" doc:"The call's result, shown to the model."`
	Error   string `json:"error,omitempty" doc:"A failure the model sees instead of a result."`
	Execute bool   `json:"execute,omitempty" doc:"For a call held by a hook: run its body here."`
	By      string `json:"by,omitempty" maxLength:"128" doc:"Who completed it, for the journal; default the token's name."`
}

// Approval is an approval request waiting for an answer.
type Approval struct {
	RunID       string          `json:"run_id"`
	RootID      string          `json:"root_id"`
	Agent       string          `json:"agent"`
	Call        string          `json:"call"`
	Tool        string          `json:"tool"`
	Arguments   json.RawMessage `json:"arguments" doc:"The call's arguments."`
	Requirement string          `json:"requirement" doc:"What an approver must be allowed to answer."`
	Reason      string          `json:"reason,omitempty"`
	Rule        string          `json:"rule,omitempty" doc:"The policy rule that asked for the approval, when the policy names it."`
	ExpiresAt   *time.Time      `json:"expires_at,omitempty" doc:"When the request lapses; absent: never."`
	Input       string          `json:"input,omitempty" doc:"The head of the run's input (200 characters)."`
}

// ApprovalPage is one page of approval requests.
type ApprovalPage struct {
	Approvals []Approval `json:"approvals" nullable:"false"`
	Next      string     `json:"next,omitempty" doc:"Pass as ?after= for the next page; absent after the last."`
}

// Answer is the body of an approve or reject: the approver's credential,
// checked against the run's agent's approvers as `hitch approvals
// approve` does.
type Answer struct {
	Credential Credential `json:"credential"`
	Reason     string     `json:"reason,omitempty" doc:"For a rejection: why, shown to the model."`
}

// Credential is an approver's name and secret.
type Credential struct {
	Name   string `json:"name" minLength:"1"`
	Secret string `json:"secret" minLength:"1"`
}

// Roots lists the roots granted to a run's workspace.
type Roots struct {
	Roots []string `json:"roots" nullable:"false" doc:"Granted roots in the order granted (the workspace's own root is not listed)."`
}

// Root is the body of a grant or revoke.
type Root struct {
	Path string `json:"path" minLength:"1" doc:"An absolute path; for a grant, an existing directory."`
}

// Agent is what a client may see of an agent: never its secrets.
type Agent struct {
	Name        string `json:"name"`
	Version     int    `json:"version"`
	Model       string `json:"model,omitempty" doc:"The model's name; GET /v1/agents/{name} shows the whole definition."`
	Description string `json:"description,omitempty"`
}

// Agents lists the agents a server can start.
type Agents struct {
	Agents []Agent `json:"agents" nullable:"false"`
}

// Health answers /healthz and /readyz.
type Health struct {
	Status string `json:"status" enum:"ok,stopping,unavailable"`
}

// Event is one server-sent event of a journal stream. Its id is the
// entry's position for a run's stream, and the family cursor for a
// family's stream (see docs/api.md); its data is the Entry as JSON.
const (
	// EventEntry carries one journal entry.
	EventEntry = "entry"
	// EventEnd says the stream ends: the run (or every run of the family)
	// has ended and every entry was sent. Its data is the Run.
	EventEnd = "end"
	// EventError says the stream ends early; its data is a Problem.
	EventError = "error"
)
