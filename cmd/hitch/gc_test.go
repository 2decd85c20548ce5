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

func TestDeferFirstGCUntilTheFirstCollection(t *testing.T) {
	keepGC(t)
	debug.SetGCPercent(100)
	debug.SetMemoryLimit(math.MaxInt64)
	deferFirstGC(func(string) string { return "" })
	if p := debug.SetGCPercent(-1); p != -1 {
		t.Fatalf("GC percent before the first collection = %d, want -1 (off)", p)
	}
	if l := debug.SetMemoryLimit(-1); l != firstGCHeap {
		t.Fatalf("memory limit before the first collection = %d, want %d", l, firstGCHeap)
	}
	// The cleanup that restores the default runs on its own goroutine
	// after a collection; a few collections give it its turn.
	for i := 0; i < 1000 && debug.SetMemoryLimit(-1) == firstGCHeap; i++ {
		runtime.GC()
		runtime.Gosched()
	}
	if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
		t.Fatalf("memory limit after the first collection = %d, want none", l)
	}
	if p := debug.SetGCPercent(100); p != 100 {
		t.Fatalf("GC percent after the first collection = %d, want 100", p)
	}
}

func TestDeferFirstGCLeavesTheEnvironmentsSetting(t *testing.T) {
	keepGC(t)
	debug.SetGCPercent(50)
	debug.SetMemoryLimit(math.MaxInt64)
	for _, name := range []string{"GOGC", "GOMEMLIMIT"} {
		deferFirstGC(func(k string) string {
			if k == name {
				return "50"
			}
			return ""
		})
		if p := debug.SetGCPercent(50); p != 50 {
			t.Errorf("with %s set, GC percent = %d, want 50 as it was", name, p)
		}
		if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
			t.Errorf("with %s set, memory limit = %d, want none as it was", name, l)
		}
	}
}

func TestFirstGCHeapIsInTheDefaultsTable(t *testing.T) {
	for _, d := range defaults.Table {
		if d.Setting == "GOGC, GOMEMLIMIT" {
			if want := fmt.Sprintf("%d MiB", firstGCHeap>>20); d.Value != want {
				t.Fatalf("defaults row says %s, want %s", d.Value, want)
			}
			return
		}
	}
	t.Fatal("no defaults row for the memory before the first collection")
}
