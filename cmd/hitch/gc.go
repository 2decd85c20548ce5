package main

import (
	"math"
	"runtime"
	"runtime/debug"
)

// firstGCHeap is the memory a hitch process may reach before its first
// garbage collection; docs/defaults.md lists it.
const firstGCHeap = 32 << 20

// deferFirstGC leaves the garbage collector off until the process's
// memory nears firstGCHeap; the first collection then puts back Go's
// default (GOGC=100, no memory limit). Most commands are one short
// process that allocates a few megabytes (a config loaded, a store
// opened), and the collections at Go's 4 MB starting goal cost about a
// fifth of the CPU of run --detach on a large config (docs/benchmarks.md).
// A long-lived command (worker, serve) collects as usual once it passes
// firstGCHeap. GOGC or GOMEMLIMIT in the environment leave the collector
// as they say.
func deferFirstGC(getenv func(string) string) {
	if getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(firstGCHeap)
	// The marker is unreachable at once, so the first collection runs
	// its cleanup. A setting a command made since is left alone.
	runtime.AddCleanup(new(gcMarker), func(struct{}) {
		if debug.SetMemoryLimit(-1) == firstGCHeap {
			debug.SetMemoryLimit(math.MaxInt64)
		}
		if p := debug.SetGCPercent(100); p >= 0 {
			debug.SetGCPercent(p)
		}
	}, struct{}{})
}

// gcMarker holds a pointer so that it is never a tiny allocation, which
// may share its memory with a live object and so never be collected.
type gcMarker struct{ _ *byte }
