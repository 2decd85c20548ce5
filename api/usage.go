package api

// FamilyUsage answers GET /v1/runs/{id}/family/usage: what a family (a
// root run and every run below it) has used, summed from its runs'
// outcomes.
type FamilyUsage struct {
	RootID string `json:"root_id"`
	Runs   int    `json:"runs" doc:"The family's runs, the root included."`
	// Usage and CostUSD are null where not known; never a made-up 0.
	Usage   Usage    `json:"usage" doc:"Every run's usage summed; a counter is null when any run's is, or when a run has not ended."`
	CostUSD *float64 `json:"cost_usd" nullable:"true" doc:"Every run's cost summed; null when any run's is unknown or a run has not ended."`
}
