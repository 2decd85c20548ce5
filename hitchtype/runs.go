package hitchtype

import "time"

// MaxMetadataBytes bounds a run's metadata, as JSON.
const MaxMetadataBytes = 16 << 10

// StartResult tells what a start (or a fork) did.
type StartResult struct {
	Run Run
	// Created is false when a run with the id already existed: nothing new
	// was started.
	Created bool
	// SameInput, when Created is false, says whether the existing run was
	// started with the same agent, version and input.
	SameInput bool
}

// RunsParams filter and page a listing of runs. Filters combine with AND.
type RunsParams struct {
	// Tenant keeps one tenant's runs; empty means every tenant.
	Tenant string
	// Statuses keeps runs in one of these statuses; empty means all.
	Statuses []Status
	// Agent keeps runs of one agent (any version); empty means all.
	Agent string
	// ParentID keeps the children of one run.
	ParentID string
	// RootID keeps one family: a root run and its descendants.
	RootID string
	// After is the cursor the previous page returned; empty starts at the
	// newest run.
	After string
	// Limit bounds the page: 0 means the default page (100), at most 1000.
	Limit int
	// CreatedAfter keeps runs created at or after it, CreatedBefore runs
	// created before it; zero means no bound.
	CreatedAfter, CreatedBefore time.Time
	// Reasons keeps runs whose outcome's reason is one of these ("" for a
	// run without one: completed with its answer, or not ended), such as
	// the max_turns of a run that completed at its turn limit.
	Reasons []string
	// Text keeps runs whose id, agent or title (the head of the input)
	// contains it, ignoring ASCII case; at most 200 characters.
	Text string
}

// PendingApprovalsParams page the approval requests waiting for answers.
type PendingApprovalsParams struct {
	// Tenant limits the list to requests of runs of one tenant; empty
	// means every tenant.
	Tenant string
	// RootID limits the list to one family: a root run and its
	// descendants. Without it waiting runs are read oldest first from the
	// store's index, so a page costs the same however many runs wait.
	RootID string
	// After is the cursor the previous page returned; empty starts at the
	// oldest request.
	After string
	// Limit bounds the page: 0 means the default page (100), at most 1000.
	Limit int
}
