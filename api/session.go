package api

import (
	"encoding/json"
	"time"
)

// Session is a conversation with an agent: user messages queued and worked
// one submission (one run) at a time.
type Session struct {
	ID       string          `json:"id" doc:"The session's id."`
	Tenant   string          `json:"tenant" doc:"The tenant the session belongs to."`
	Agent    string          `json:"agent" doc:"The agent that works the session's messages."`
	Version  int             `json:"version" doc:"The agent's version."`
	Metadata json.RawMessage `json:"metadata,omitempty" doc:"The caller's JSON object, as given at creation."`
	// ActiveRun is the run of the submission being worked.
	ActiveRun string    `json:"active_run,omitempty" doc:"The run of the submission being worked; absent when idle."`
	Position  int64     `json:"position" doc:"The session journal's length: the position of its last entry."`
	Queued    int       `json:"queued" doc:"Messages waiting to start."`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// CreateSession is the body of POST /v1/sessions.
type CreateSession struct {
	Agent string `json:"agent" minLength:"1" maxLength:"64" doc:"The agent to talk to, by name (its latest version)."`
	// ID makes a retried create idempotent.
	ID       string         `json:"id,omitempty" maxLength:"128" pattern:"^[A-Za-z0-9._:-]+$" doc:"A caller-chosen session id (1-128 letters, digits and . _ : -); the same id again returns the session."`
	Metadata map[string]any `json:"metadata,omitempty" doc:"A JSON object stored with a new session."`
}

// CreatedSession answers POST /v1/sessions.
type CreatedSession struct {
	Session Session `json:"session"`
	// Created is false when a session with the id existed already.
	Created bool `json:"created" doc:"False when a session with the id existed: it is returned as it stands."`
}

// SessionPage is one page of sessions, by id.
type SessionPage struct {
	Sessions []Session `json:"sessions" nullable:"false"`
	Next     string    `json:"next,omitempty" doc:"Pass as ?after= for the next page; absent after the last."`
}

// Send modes of a session message.
const (
	ModeQueue     = "queue"
	ModeSteer     = "steer"
	ModeInterrupt = "interrupt"
)

// Send is the body of POST /v1/sessions/{id}/messages. A retry with the
// same Idempotency-Key header admits nothing new.
type Send struct {
	Text string `json:"text" minLength:"1" doc:"The user's message."`
	Mode string `json:"mode,omitempty" enum:"queue,steer,interrupt" doc:"queue (default): after the messages before it; steer: join the running submission at its next turn; interrupt: stop the running submission and run next."`
}

// Sent answers a send: the message is durable.
type Sent struct {
	MessageID string `json:"message_id" doc:"The admitted message's id."`
	Position  int64  `json:"position" doc:"The message's admission position in the session's journal."`
	Mode      string `json:"mode" enum:"queue,steer,interrupt"`
	// Duplicate is set when the Idempotency-Key matched an earlier send.
	Duplicate bool `json:"duplicate" doc:"True when the Idempotency-Key matched an earlier send: nothing new was admitted, and the ids are the first admission's."`
}

// QueuedMessage is a message waiting to start.
type QueuedMessage struct {
	ID       string `json:"id"`
	Position int64  `json:"position" doc:"Its admission position."`
	Mode     string `json:"mode" enum:"queue,steer,interrupt"`
	Text     string `json:"text"`
}

// Queue lists a session's queued messages in the order they will start.
type Queue struct {
	Messages []QueuedMessage `json:"messages" nullable:"false"`
}

// Edit is the body of an edit of a queued message.
type Edit struct {
	Text string `json:"text" minLength:"1" doc:"The message's new text; it keeps its place."`
}

// Submission is one message worked by one run.
type Submission struct {
	MessageID string   `json:"message_id"`
	RunID     string   `json:"run_id"`
	Text      string   `json:"text"`
	Joined    []string `json:"joined,omitempty" doc:"Messages that steered it."`
	Outcome   string   `json:"outcome,omitempty" enum:"completed,failed,aborted" doc:"Absent while the submission runs."`
	Status    string   `json:"status" doc:"The run's status."`
	Reason    string   `json:"reason,omitempty"`
	Answer    string   `json:"answer,omitempty"`
	Error     string   `json:"error,omitempty"`
	Usage     *Usage   `json:"usage,omitempty" doc:"The run's usage; absent while it runs."`
	CostUSD   *float64 `json:"cost_usd,omitempty"`
}

// SessionStatus is a session's state: its row, queue, submissions and
// usage.
type SessionStatus struct {
	Session     Session         `json:"session"`
	Queue       []QueuedMessage `json:"queue" nullable:"false"`
	Submissions []Submission    `json:"submissions" nullable:"false"`
	Usage       Usage           `json:"usage" doc:"The ended submissions' usage summed."`
	CostUSD     *float64        `json:"cost_usd,omitempty" doc:"Absent when any ended submission's cost is unknown."`
}

// SessionEntry is one entry of a session's journal.
type SessionEntry struct {
	SessionID string          `json:"session" doc:"The session the entry belongs to."`
	Pos       int64           `json:"pos" doc:"The entry's position in the session's journal, from 1."`
	Kind      string          `json:"kind" doc:"message.admitted, message.edited, message.removed, message.joined, submission.started, submission.interrupted or submission.ended (docs/sessions.md)."`
	At        time.Time       `json:"at"`
	Data      json.RawMessage `json:"data"`
}

// MarshalJSON writes a session entry in its one spelling, as
// Entry.MarshalJSON does.
func (e SessionEntry) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		SessionID string          `json:"session"`
		Pos       int64           `json:"pos"`
		Kind      string          `json:"kind"`
		At        string          `json:"at"`
		Data      json.RawMessage `json:"data"`
	}{e.SessionID, e.Pos, e.Kind, e.At.UTC().Format(EntryTimeFormat), e.Data})
}

// SessionEntryPage is one page of a session's journal.
type SessionEntryPage struct {
	Entries []SessionEntry `json:"entries" nullable:"false"`
	Next    *int64         `json:"next,omitempty" doc:"Pass as ?after= to read on; absent at the journal's end as it stood."`
}
