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
// The state a runner acts on is the fold of its journal and of the entries
// it has staged: staging applies an entry to the in-memory state at once,
// through the same function recovery uses, and queues it for the next
// commit. Nothing outside the runner sees staged state, and nothing acts on
// the world — a model call, a tool body, an answer to a caller — before the
// entries it follows from are durable, so a recovered runner folds the same
// state a live one acted on.
//
// Leases: a runner renews its lease every RenewEvery. A renewal refused
// because the lease is no longer the runner's (fenced, or the run ended)
// stops it at once; a renewal that fails for another reason is retried at
// the next period until the lease would have lapsed, then the runner stops.
// A runner that parks or ends a run releases the lease with the status; a
// runner that fails, or drains for a graceful stop, gives it back, so the
// run is due at once; only a runner abandoned by a hard stop leaves its lease
// to expire.
package engine
