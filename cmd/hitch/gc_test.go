package main

import (
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/hitch-dev/hitch/defaults"
)

// keepGC puts back the collector's settings when the test ends.
func keepGC(t *testing.T) {
	percent := debug.SetGCPercent(100)
	debug.SetGCPercent(percent)
	limit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	})
}

// collectUntil runs collections until ok holds, giving the tuner's
// cleanup (on a goroutine of its own) its turn after each; it fails the
// test when ok never holds.
func collectUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for range 1000 {
		if ok() {
			return
		}
		runtime.GC()
		runtime.Gosched()
	}
	t.Fatalf("after 1000 collections: %s", what)
}

func currentPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

func TestFloorGCTunesAfterEachCollection(t *testing.T) {
	keepGC(t)
	debug.SetGCPercent(100)
	debug.SetMemoryLimit(math.MaxInt64)
	floor := floorFor(memoryTotal())
	floorGC(func(string) string { return "" })
	if p := currentPercent(); p != -1 {
		t.Fatalf("GC percent before the first collection = %d, want -1 (off)", p)
	}
	if l := debug.SetMemoryLimit(-1); l != floor {
		t.Fatalf("memory limit before the first collection = %d, want the floor, %d", l, floor)
	}
	collectUntil(t, "the tuner never set GOGC", func() bool { return currentPercent() != -1 })
	if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
		t.Fatalf("memory limit after the first collection = %d, want none", l)
	}
	// A test binary's live heap is a few megabytes: far under half the
	// floor, so GOGC is well above Go's default.
	if p := currentPercent(); p <= 100 {
		t.Fatalf("GOGC after the first collection = %d, want more than 100 with a small live heap", p)
	}
	// It tunes after every collection: with half the floor live, Go's
	// default; with it freed, above it again.
	func() {
		live := make([]byte, floor/2+1<<20)
		collectUntil(t, "GOGC never came down to 100 with half the floor live", func() bool { return currentPercent() == 100 })
		runtime.KeepAlive(live)
	}()
	collectUntil(t, "GOGC never went back up with the heap freed", func() bool { return currentPercent() > 100 })
	// A command's own setting is kept: the tuner sees it and stops.
	debug.SetGCPercent(50)
	for range 20 {
		runtime.GC()
		runtime.Gosched()
	}
	if p := currentPercent(); p != 50 {
		t.Fatalf("GOGC after the command set 50 = %d, want 50 kept", p)
	}
}

func TestFloorGCLeavesTheEnvironmentsSetting(t *testing.T) {
	keepGC(t)
	debug.SetGCPercent(50)
	debug.SetMemoryLimit(math.MaxInt64)
	for _, name := range []string{"GOGC", "GOMEMLIMIT"} {
		floorGC(func(k string) string {
			if k == name {
				return "50"
			}
			return ""
		})
		if p := currentPercent(); p != 50 {
			t.Errorf("with %s set, GC percent = %d, want 50 as it was", name, p)
		}
		if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
			t.Errorf("with %s set, memory limit = %d, want none as it was", name, l)
		}
	}
}

func TestGCPercentPutsTheGoalAtTheFloor(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		floor, live int64
		want        int
	}{
		{256 * mib, 16 * mib, 1500},   // goal 16 MiB × 16 = 256 MiB
		{256 * mib, 64 * mib, 300},    // 64 × 4
		{256 * mib, 127 * mib, 101},   // just under half the floor
		{256 * mib, 128 * mib, 100},   // half the floor live: Go's default
		{256 * mib, 900 * mib, 100},   // above the floor
		{256 * mib, 0, 100},           // nothing read
		{256 * mib, 1, math.MaxInt32}, // bounded
	} {
		if got := gcPercent(c.floor, c.live); got != c.want {
			t.Errorf("gcPercent(%d MiB, %d B) = %d, want %d", c.floor/mib, c.live, got, c.want)
		}
	}
}

func TestFloorForIsAQuarterOfSmallMemories(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct{ total, want int64 }{
		{0, heapFloor},
		{512 * mib, 128 * mib},
		{1024 * mib, heapFloor},
		{24 << 30, heapFloor},
	} {
		if got := floorFor(c.total); got != c.want {
			t.Errorf("floorFor(%d MiB) = %d MiB, want %d MiB", c.total/mib, got/mib, c.want/mib)
		}
	}
}

func TestMemTotalReadsMeminfo(t *testing.T) {
	in := "MemFree:         1000 kB\nMemTotal:       24683664 kB\nBuffers: 1 kB\n"
	if got, want := memTotal([]byte(in)), int64(24683664)<<10; got != want {
		t.Fatalf("memTotal = %d, want %d", got, want)
	}
	if got := memTotal([]byte("MemFree: 1 kB\n")); got != 0 {
		t.Fatalf("memTotal without MemTotal = %d, want 0", got)
	}
}

func TestHeapFloorIsInTheDefaultsTable(t *testing.T) {
	for _, d := range defaults.Table {
		if d.Setting == "GOGC, GOMEMLIMIT" {
			if want := fmt.Sprintf("%d MiB", heapFloor>>20); d.Value != want {
				t.Fatalf("defaults row says %s, want %s", d.Value, want)
			}
			return
		}
	}
	t.Fatal("no defaults row for the heap floor")
}
