package main

import (
	"strings"
	"testing"
)

// TestRunsListFilters lists runs by text and creation time.
func TestRunsListFilters(t *testing.T) {
	t.Parallel()
	dir, _ := scriptedConfig(t, "turns:\n  - text: hi\n")
	for _, r := range []struct{ id, input string }{{"r1", "Refund order 17"}, {"r2", "Ship the parcel"}} {
		if code, out, errOut := inDir(t, dir, "run", "--id", r.id, r.input); code != exitOK {
			t.Fatalf("run %s: exit %d\n%s%s", r.id, code, out, errOut)
		}
	}
	for _, c := range []struct {
		args     []string
		has, not string
	}{
		{[]string{"--text", "REFUND"}, "r1", "r2"},
		{[]string{"--text", "r2"}, "r2", "r1"},
		{[]string{"--since", "1h"}, "r1", ""},
		{[]string{"--until", "1h"}, "", "r1"},
		{[]string{"--since", "2000-01-01T00:00:00Z", "--text", "parcel"}, "r2", "r1"},
	} {
		code, out, errOut := inDir(t, dir, append([]string{"runs", "list"}, c.args...)...)
		if code != exitOK || (c.has != "" && !strings.Contains(out, c.has)) || (c.not != "" && strings.Contains(out, c.not+" ")) {
			t.Errorf("runs list %v: exit %d, want %s and not %s\n%s%s", c.args, code, c.has, c.not, out, errOut)
		}
	}
	for _, args := range [][]string{{"--since", "yesterday"}, {"--since", "1h", "--until", "2h"}, {"--until", "-5m"}} {
		if code, _, errOut := inDir(t, dir, append([]string{"runs", "list"}, args...)...); code != exitUsage ||
			!strings.Contains(errOut, args[len(args)-2]) && !strings.Contains(errOut, args[0]) {
			t.Errorf("runs list %v: exit %d, want %d naming the flag: %s", args, code, exitUsage, errOut)
		}
	}
}
