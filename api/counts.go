package api

// RunCounts answers GET /v1/runs/counts.
type RunCounts struct {
	// Counts has every status, 0 when no run has it.
	Counts map[string]int `json:"counts" doc:"Runs by status; every status is present, 0 when no run has it."`
	Total  int            `json:"total" doc:"The runs counted, of every status."`
}
