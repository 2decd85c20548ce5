package api

import "time"

// RunWaits answers GET /v1/runs/{id}/waits: what a parked run waits on,
// and until when.
type RunWaits struct {
	RunID string `json:"run_id"`
	Waits []Wait `json:"waits" nullable:"false" doc:"One for each thing the run waits on; empty for a run that does not wait."`
}

// Wait is one thing a parked run waits on.
type Wait struct {
	Kind  string     `json:"kind" enum:"event,external,held,approval,children,uncertain" doc:"What the run waits for: an awaited event, an external call's result, a call held by a hook, an approval, its sub-agents, or an uncertain call's reconciliation."`
	Call  string     `json:"call" doc:"The call that waits."`
	Tool  string     `json:"tool,omitempty" doc:"The call's tool."`
	Event string     `json:"event,omitempty" doc:"The awaited event, for kind event."`
	Until *time.Time `json:"until,omitempty" doc:"The deadline by the store's clock; absent: none."`
}
