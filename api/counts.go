package api

// RunCounts answers GET /v1/runs/counts.
type RunCounts struct {
	// Counts has every status, 0 when no run has it.
	Counts map[string]int `json:"counts" doc:"Runs by status; every status is present, 0 when no run has it."`
	Total  int            `json:"total" doc:"The runs counted, of every status."`
	// MaxTurns counts the completed runs that stopped at their turn
	// limit (reason max_turns) rather than with an answer; they are in
	// Counts["completed"] too.
	MaxTurns int `json:"max_turns" doc:"Completed runs that stopped at their turn limit (reason max_turns); counts.completed includes them."`
}
