package hitchtype

import (
	"encoding/json"
	"fmt"
	"time"
)

// Run is a run as the store holds it.
type Run struct {
	ID       string
	RootID   string
	ParentID string
	// Tenant owns the run; every run of a family has its root's tenant.
	Tenant  string
	Agent   string
	Version int
	Status  Status
	// Position is the journal's length.
	Position  int64
	Outcome   *Outcome // set once the run has ended
	CreatedAt time.Time
	UpdatedAt time.Time
	// Title is the head of the run's input, kept to find it by.
	Title string
	// ForkedFrom, for a fork (or a replay), names the run and position
	// its history was copied from; nil for any other run.
	ForkedFrom *ForkedFrom
}

// DecodeAnswer decodes a completed run's typed answer into T. A run that
// stopped at max_turns has no final answer (its Answer is the last reply's
// text) and gives an error.
func DecodeAnswer[T any](run Run) (T, error) {
	var v T
	if run.Outcome == nil || run.Status != StatusCompleted {
		return v, fmt.Errorf("decode answer of %s: the run has not completed (%s)", run.ID, run.Status)
	}
	if run.Outcome.Reason == "max_turns" {
		return v, fmt.Errorf("decode answer of %s: the run stopped at max_turns before a final answer", run.ID)
	}
	if err := json.Unmarshal([]byte(run.Outcome.Answer), &v); err != nil {
		return v, fmt.Errorf("decode answer of %s: %w", run.ID, err)
	}
	return v, nil
}
