// Package chaos checks hitch's promises on a deployment by hurting it: Run
// starts worker processes on a scratch namespace of the store, drives a
// seeded workload of runs whose tool leaves a mark outside the store each
// time its body runs, and kills, pauses and disconnects the workers while
// they work. Verify then holds the store's journals against those marks:
// no effect twice or ahead of its journaled start, no run lost, no journal
// gap, no running run without a live lease, no run ended twice.
//
// Verify stands alone: it checks any set of runs in any store, given the
// effects their bodies recorded. hitch chaos is Run's command line; see
// docs/operations.md.
//
// A build with the chaosfault tag makes the workers write through a store
// whose appends and renewals skip the fencing check, so that a test can
// show Run catching a real fault.
package chaos
