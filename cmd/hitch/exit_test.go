package main

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/approval"
	"github.com/hitch-dev/hitch/sandbox"
	"github.com/hitch-dev/hitch/sessions"
)

// TestRefusalsGetTheirExitCodes: the runtime's refusals, wrapped as a
// command returns them, exit with the code docs/cli.md gives them, the
// code a server's problem for the same refusal gives.
func TestRefusalsGetTheirExitCodes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		code int
	}{
		{&hitch.ForbiddenError{Op: "Cancel", Principal: "eve", Role: hitch.RoleViewer, Need: hitch.RoleOperator}, exitRefused},
		{hitch.ErrNotFound, exitNotFound},
		{sessions.ErrNotFound, exitNotFound},
		{sessions.ErrMessageNotFound, exitNotFound},
		{hitch.ErrUnknownCall, exitNotFound},
		{hitch.ErrRunnerBusy, exitRefused},
		{hitch.ErrEnded, exitRefused},
		{sessions.ErrAgent, exitRefused},
		{approval.ErrBadCredential, exitRefused},
		{sandbox.ErrNotGranted, exitRefused},
		{hitch.ErrBadRunID, exitUsage},
		{sessions.ErrBadID, exitUsage},
		{sessions.ErrMessageTooLarge, exitUsage},
		{hitch.ErrBadCursor, exitUsage},
		{fmt.Errorf("disk on fire"), exitError},
	} {
		err := fmt.Errorf("command: %w", tc.err)
		if got := exitOf(err); got != tc.code {
			t.Errorf("%v: exit %d, want %d", err, got, tc.code)
		}
	}
}

// TestBadInputGetsItsExitCode: each bad input gets its documented exit
// code and a message that names what is wrong, and a refused command
// leaves nothing behind.
func TestBadInputGetsItsExitCode(t *testing.T) {
	t.Parallel()
	dir, cfg := scriptedConfig(t, "turns:\n  - text: done\n")
	// The same config with one thing wrong.
	base, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for name, more := range map[string]string{
		"mcp.yaml":     "mcp:\n  - name: gone\n    command: /nonexistent/mcp-server\n",
		"trigger.yaml": "triggers:\n  - {name: hourly, cron: \"0 * * * *\", agent: ops}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), append(append([]byte{}, base...), more...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if code, out, errOut := cli(t, "run", "-c", cfg, "--id", "r1", "go"); code != exitOK {
		t.Fatalf("run: exit %d\n%s\n%s", code, out, errOut)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		says []string // in the error, each
		not  string   // not in the error
	}{
		{"a negative limit", []string{"sessions", "list", "--limit", "-1", "-c", cfg}, exitUsage, []string{"--limit -1"}, ""},
		{"an empty message", []string{"sessions", "send", "s1", "", "-c", cfg}, exitUsage, []string{"TEXT is empty"}, ""},
		{"a blank message", []string{"sessions", "send", "s1", "  ", "-c", cfg}, exitUsage, []string{"TEXT is empty"}, ""},
		{"a bogus mode", []string{"sessions", "send", "--mode", "bogus", "s1", "hi", "-c", cfg}, exitUsage, []string{`--mode "bogus"`, "queue, steer or interrupt"}, ""},
		{"an empty edit", []string{"sessions", "edit", "s1", "msg_x", "", "-c", cfg}, exitUsage, []string{"TEXT is empty"}, ""},
		{"an MCP server that cannot start", []string{"run", "-c", filepath.Join(dir, "mcp.yaml"), "go"}, exitUsage,
			[]string{"mcp.yaml:7", "mcp[0]", "/nonexistent/mcp-server"}, "no configuration file"},
		{"a trigger without input", []string{"run", "-c", filepath.Join(dir, "trigger.yaml"), "go"}, exitUsage,
			[]string{"trigger.yaml:7", "triggers[0].input"}, ""},
		{"the approvals of a family that is not there", []string{"approvals", "list", "--run", "nope", "-c", cfg}, exitNotFound, []string{"nope"}, ""},
		{"a negative drain", []string{"worker", "--drain", "-1s", "-c", cfg}, exitUsage, []string{"--drain -1s"}, ""},
		{"a negative drain to serve", []string{"serve", "--drain", "-1s", "-c", cfg}, exitUsage, []string{"--drain -1s"}, ""},
		{"an address that is not one", []string{"serve", "--addr", "not-an-address", "-c", cfg}, exitUsage, []string{"--addr not-an-address", "host:port"}, "loopback"},
		{"a missing config", []string{"runs", "list", "-c", filepath.Join(dir, "nope.yaml")}, exitUsage, []string{"no configuration file"}, ""},
	} {
		code, _, errOut := cli(t, tc.args...)
		if code != tc.code {
			t.Errorf("%s: exit %d, want %d: %s", tc.name, code, tc.code, errOut)
		}
		for _, s := range tc.says {
			if !strings.Contains(errOut, s) {
				t.Errorf("%s: the error does not say %q: %s", tc.name, s, errOut)
			}
		}
		if tc.not != "" && strings.Contains(errOut, tc.not) {
			t.Errorf("%s: the error says %q: %s", tc.name, tc.not, errOut)
		}
	}
	// The refused sends created nothing.
	if code, _, errOut := cli(t, "sessions", "show", "s1", "-c", cfg); code != exitNotFound {
		t.Errorf("a refused send created its session: sessions show: exit %d %s", code, errOut)
	}
}

// TestCorruptStoreIsReported: a store with a page of random bytes is
// reported as corrupt by every command that opens it, with its own exit
// code, never read as a healthy store.
func TestCorruptStoreIsReported(t *testing.T) {
	t.Parallel()
	dir, cfg := writeConfig(t, scriptedYAML("runs.db", "{name: ops, model: m, policy: allow_all}"),
		"turns:\n  - text: done\n")
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
