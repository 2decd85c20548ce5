package api

import (
	"encoding/json"
	"time"
)

// Call answers GET /v1/runs/{id}/calls/{call}: one tool call's lifecycle
// as the run's journal tells it.
type Call struct {
	ID         string          `json:"id" doc:"The journal's id of the call: t<turn>c<n>."`
	ProviderID string          `json:"provider_id,omitempty" doc:"The provider's id of the call in the model's reply."`
	Tool       string          `json:"tool"`
	Arguments  json.RawMessage `json:"arguments" doc:"The arguments as the model gave them (JSON)."`
	Turn       int             `json:"turn"`
	AskedAt    time.Time       `json:"asked_at" doc:"When the reply that asked for the call was journaled."`
	State      string          `json:"state" enum:"asked,decided,denied,waiting,started,settled,failed,uncertain,reconciled" doc:"Where the call stands."`
	Verdict    string          `json:"verdict,omitempty" doc:"The policy's verdict: allow, deny or approval."`
	Reason     string          `json:"reason,omitempty"`
	Rule       string          `json:"rule,omitempty" doc:"What decided, when the policy names it."`
	DecidedAt  *time.Time      `json:"decided_at,omitempty"`
	// Answer is an approval's answer: granted, rejected or expired.
	Answer       string     `json:"answer,omitempty" doc:"An approval's answer: granted, rejected or expired."`
	AnsweredBy   string     `json:"answered_by,omitempty"`
	AnswerReason string     `json:"answer_reason,omitempty"`
	AnsweredAt   *time.Time `json:"answered_at,omitempty"`
	StartedAt    *time.Time `json:"started_at,omitempty" doc:"When the body last started."`
	Attempts     int        `json:"attempts,omitempty"`
	Node         string     `json:"node,omitempty" doc:"The node that last started the body."`
	Output       string     `json:"output,omitempty" doc:"The result the model saw."`
	Error        string     `json:"error,omitempty" doc:"The failure the model saw."`
	Uncertain    string     `json:"uncertain,omitempty" doc:"Why the effect is unknown."`
	EndedAt      *time.Time `json:"ended_at,omitempty"`
	// Reconciled says how an uncertain call was settled from outside.
	Reconciled *Reconcile `json:"reconciled,omitempty"`
	Positions  []int64    `json:"positions" nullable:"false" doc:"The journal positions of the call's entries."`
}
