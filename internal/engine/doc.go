// Package engine drives runs: it claims a run's lease, folds its journal into
// state, applies the recovery rules, and then takes one step at a time —
// model call, policy, tool bodies — journaling each intent before acting on
// it and each result before reporting it.
//
// A runner is the goroutine that holds one run's lease. Only it appends to
// the run's journal, and every append is fenced by the lease token and the
// expected position, so a runner that lost its lease is refused and stops.
// Runs that are idle or waiting have no runner.
//
// The state a runner acts on is always the fold of the journal: entries are
// applied to the in-memory state only after they are durable, through the
// same function recovery uses, so a live runner and a recovered one see the
// same thing.
package engine
