package local_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hitch-dev/hitch/sandbox/local"
)

// sessionOf is the session id of a process, from /proc/PID/stat (its sixth
// field, after the command name in parentheses).
func sessionOf(t *testing.T, stat string) string {
	t.Helper()
	f := strings.Fields(stat[strings.LastIndexByte(stat, ')')+1:])
	if len(f) < 4 {
		t.Fatalf("stat %q: too short", stat)
	}
	return f[3]
}

// TestProbeRunsInASessionOfItsOwn: the bwrap probe, like every command, runs
// away from the caller's terminal. In the caller's process group a Ctrl-C
// typed while it ran would kill it, and bwrap would be judged unusable for
// the life of the process: commands would then run without isolation.
func TestProbeRunsInASessionOfItsOwn(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "stat")
	// A stand-in bwrap that records its own /proc stat line and succeeds.
	script := "#!/bin/sh\ncat /proc/$$/stat > " + out + "\n"
	if err := os.WriteFile(filepath.Join(dir, "bwrap"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := local.CheckBwrapIn(dir); err != nil {
		t.Fatalf("probe: %v", err)
	}
	probe, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("the stand-in bwrap did not run: %v", err)
	}
	self, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		t.Fatal(err)
	}
	if got, ours := sessionOf(t, string(probe)), sessionOf(t, string(self)); got == ours {
		t.Fatalf("the probe ran in the caller's session %s: a Ctrl-C at the terminal reaches it", ours)
	}
}
