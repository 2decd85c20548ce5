package hitchtype

import "time"

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
