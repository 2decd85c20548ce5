package store

import (
	"context"
	"fmt"
)

// GaugeReader is a Store that reads what a node's gauges show (package
// telemetry's Metrics) in a few statements, whatever the number of runs.
// Both drivers implement it; without it the gauges look at a bounded list
// of runs and read their journals one by one.
type GaugeReader interface {
	// RunsDue counts the runs a claim of due runs would take now, by the
	// store's clock: queued or running runs without a live lease, and
	// waiting runs whose WakeAt has come.
	RunsDue(ctx context.Context) (int, error)
	// Parked returns the last journal entry of each waiting run (the
	// run.waiting entry it parked with, unless another was appended
	// since), newest run first, at most limit of them (1 to
	// MaxListLimit).
	Parked(ctx context.Context, limit int) ([]Entry, error)
}

// CheckParked checks a Parked limit.
func CheckParked(limit int) error {
	if limit < 1 || limit > MaxListLimit {
		return fmt.Errorf("limit %d is outside 1..%d", limit, MaxListLimit)
	}
	return nil
}
