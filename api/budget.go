package api

// RunBudget answers GET /v1/runs/{id}/budget: what bounds a run and what
// is left. A counter without a limit is not listed.
type RunBudget struct {
	RunID    string          `json:"run_id"`
	RootID   string          `json:"root_id" doc:"The family's root, whose budget the family shares."`
	Counters []BudgetCounter `json:"counters" nullable:"false" doc:"The bounded counters, family first; empty when nothing is bounded that the server can count."`
}

// BudgetCounter is one bounded counter: its limit, what is used and what
// is left.
type BudgetCounter struct {
	Scope string  `json:"scope" enum:"family,run" doc:"family: the budget a root shares with every run below it; run: a limit of this run alone."`
	Name  string  `json:"name" doc:"family: tokens, usd, model_calls, tool_calls, wall_time; run: model_attempts, tokens."`
	Unit  string  `json:"unit" enum:"tokens,usd,calls,ms,attempts"`
	Limit float64 `json:"limit"`
	// Used and Left are null when not known; never a made-up 0.
	Used *float64 `json:"used" nullable:"true" doc:"Null when not known: a provider did not report it, or (a run's own tokens) the run has not ended. A family's use counts reservations of work in flight."`
	Left *float64 `json:"left" nullable:"true" doc:"The limit less the use, never below 0; null when the use is not known."`
}
