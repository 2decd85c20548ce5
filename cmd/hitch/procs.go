package main

import "runtime"

// spareProc gives the process one P (a slot running Go code) more than
// Go's default, the CPUs it may use; docs/defaults.md lists it. A SQLite
// store has one writer goroutine, and every run waiting on a commit waits
// on it. At each commit it blocks in fsync and gives up its P; when it
// comes back while a burst of model replies keeps every P busy with
// runnable goroutines, it queues behind them, and the whole node waits
// with it. With a P to spare it mostly finds one free: on 2 cores the
// step overhead's p99 of 10,000 runs in flight and the API's time to a
// run's first event fall by a third to a half (docs/benchmarks.md). GOMAXPROCS in the
// environment leaves the count as it says. Setting it stops Go from
// following a later change of the container's CPU limit; a restart
// follows it.
func spareProc(getenv func(string) string) {
	if getenv("GOMAXPROCS") != "" {
		return
	}
	runtime.GOMAXPROCS(runtime.GOMAXPROCS(0) + spareProcs)
}

// spareProcs is how many Ps the process has beyond its CPUs.
const spareProcs = 1
