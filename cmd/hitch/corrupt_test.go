package main

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCorruptStoreIsReported: a store with a page of random bytes is
// reported as corrupt by every command that opens it, with its own exit
// code, never read as a healthy store.
func TestCorruptStoreIsReported(t *testing.T) {
	t.Parallel()
	dir := writeFiles(t, map[string]string{
		"hitch.yaml":  scriptedYAML("runs.db", "{name: ops, model: m, policy: allow_all}"),
		"script.yaml": "turns:\n  - text: done\n",
	})
	cfg := filepath.Join(dir, "hitch.yaml")
	for _, id := range []string{"r1", "r2", "r3"} {
		if code, out, errOut := cli(t, "run", "-c", cfg, "--id", id, "go"); code != exitOK {
			t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
		}
	}
	db := filepath.Join(dir, "runs.db")
	f, err := os.OpenFile(db, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	junk := make([]byte, 4096)
	_, _ = rand.Read(junk)
	if _, err := f.WriteAt(junk, 4096); err != nil { // page 2 of a 4 KiB-page file
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"runs", "show", "r1", "-c", cfg},
		{"runs", "show", "r1", "--db", db},
		{"runs", "list", "-c", cfg},
		{"recover", "-c", cfg},
		{"run", "--id", "r4", "go", "-c", cfg},
		{"sessions", "list", "-c", cfg},
	} {
		code, out, errOut := cli(t, args...)
		if code != exitCorrupt || !strings.Contains(errOut, "corrupt") {
			t.Errorf("%v on a corrupt store: exit %d, want %d\n%s\n%s", args, code, exitCorrupt, out, errOut)
		}
	}
}
