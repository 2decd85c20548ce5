package main

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/hitch-dev/hitch/defaults"
)

func TestSpareProcAddsOneUnlessTheEnvironmentSetsIt(t *testing.T) {
	was := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(was) })

	runtime.GOMAXPROCS(2)
	spareProc(func(string) string { return "" })
	if got := runtime.GOMAXPROCS(0); got != 2+spareProcs {
		t.Fatalf("GOMAXPROCS = %d, want %d", got, 2+spareProcs)
	}

	runtime.GOMAXPROCS(2)
	spareProc(func(k string) string {
		if k == "GOMAXPROCS" {
			return "2"
		}
		return ""
	})
	if got := runtime.GOMAXPROCS(0); got != 2 {
		t.Fatalf("with GOMAXPROCS set, GOMAXPROCS = %d, want 2 as it was", got)
	}
}

func TestSpareProcIsInTheDefaultsTable(t *testing.T) {
	for _, d := range defaults.Table {
		if d.Setting == "GOMAXPROCS" {
			if want := fmt.Sprintf("CPUs + %d", spareProcs); d.Value != want {
				t.Fatalf("defaults row says %s, want %s", d.Value, want)
			}
			return
		}
	}
	t.Fatal("no defaults row for the Ps beyond the CPUs")
}
