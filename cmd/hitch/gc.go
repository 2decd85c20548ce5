package main

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
)

// heapFloor is the least heap a hitch process grows to before it
// collects, unless a quarter of its memory is less; docs/defaults.md lists
// it.
const heapFloor = 256 << 20

// floorGC keeps the garbage collector's goal at the heap floor or above,
// where Go's default (GOGC=100: collect when the heap doubles what the last
// collection left live) would collect far more often. A worker or a server
// keeps a small live heap (runs waiting on models, a few megabytes of
// journal) while it allocates fast: at GOGC=100 a node serving 64 API
// clients collected 27 times a second, with a mark phase running a third
// of the time and every start and step slowed through it. With the floor it
// collects about once a second; once half the floor is live, GOGC=100
// holds as usual. Most commands are one short process that never reaches
// the floor and never collects. GOGC or GOMEMLIMIT in the environment leave
// the collector as they say.
func floorGC(getenv func(string) string) {
	if getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		return
	}
	floor := floorFor(memoryTotal())
	// Until the first collection nothing is live to scale from: the
	// collector waits for the floor as a memory limit.
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(floor)
	t := &gcTuner{floor: floor, percent: -1, live: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	t.arm()
}

// floorFor is the heap floor on a machine or container of total bytes of
// memory (0: unknown): heapFloor, or a quarter of total if that is less.
func floorFor(total int64) int64 {
	if total > 0 && total/4 < heapFloor {
		return total / 4
	}
	return heapFloor
}

// gcPercent is the GOGC that puts the collector's goal at floor with live
// bytes live after a collection, and never below Go's default.
func gcPercent(floor, live int64) int {
	if live <= 0 || live >= floor/2 {
		return 100
	}
	return int(min(floor*100/live-100, math.MaxInt32))
}

// gcTuner sets GOGC after each collection from what it left live.
type gcTuner struct {
	floor   int64
	percent int // the GOGC it set last; -1 before the first collection
	live    []metrics.Sample
}

// arm has tune run after the next collection: the marker is unreachable
// at once, so its cleanup runs once a collection has freed it.
func (t *gcTuner) arm() {
	runtime.AddCleanup(new(gcMarker), func(t *gcTuner) { t.tune() }, t)
}

func (t *gcTuner) tune() {
	metrics.Read(t.live)
	p := gcPercent(t.floor, int64(t.live[0].Value.Uint64()))
	if old := debug.SetGCPercent(p); old != t.percent {
		// The command set the collector itself: leave it as it was.
		debug.SetGCPercent(old)
		return
	}
	if t.percent < 0 && debug.SetMemoryLimit(-1) == t.floor {
		debug.SetMemoryLimit(math.MaxInt64)
	}
	t.percent = p
	t.arm()
}

// gcMarker holds a pointer so that it is never a tiny allocation, which
// may share its memory with a live object and so never be collected.
type gcMarker struct{ _ *byte }

// memoryTotal is the memory the process may use: its cgroup's limit when
// it has one, else the machine's; 0 when neither can be read.
func memoryTotal() int64 {
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 {
			return n
		}
	}
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	return memTotal(b)
}

// memTotal reads MemTotal from /proc/meminfo's text, in bytes; 0 when it
// is missing.
func memTotal(meminfo []byte) int64 {
	sc := bufio.NewScanner(bytes.NewReader(meminfo))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				return kb << 10
			}
		}
	}
	return 0
}
