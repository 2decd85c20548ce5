package main

import (
	"encoding/json"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hitch-dev/hitch/doctor"
	"github.com/hitch-dev/hitch/sandbox/local"
)

// doctorCode is what hitch doctor exits with on a healthy store here: 0,
// or 1 where bwrap cannot start (commands would run unconfined).
func doctorCode() int {
	if local.CheckBwrap() != nil {
		return 1
	}
	return 0
}

// doctorJSON runs hitch doctor --json and decodes its report.
func doctorJSON(t *testing.T, args ...string) (int, doctor.Report, string) {
	t.Helper()
	code, out, errOut := cli(t, append([]string{"--json", "doctor"}, args...)...)
	var r doctor.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("doctor --json printed %q (%v); stderr %s", out, err, errOut)
	}
	if r.ExitCode() != code {
		t.Fatalf("exit %d for a report of verdict %s", code, r.Verdict)
	}
	return code, r, out + errOut
}

func reportCheck(r doctor.Report, name string) doctor.Check {
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	return doctor.Check{}
}

// TestDoctorExitCodes: a missing store fails (2); a healthy one is ok (0);
// without bwrap commands would run unconfined (1), and with
// require_isolation they are refused (2). Text and --json agree.
func TestDoctorExitCodes(t *testing.T) {
	dir, cfg := scriptedConfig(t, "turns:\n  - text: done\n")
	code, r, out := doctorJSON(t, "-c", cfg)
	if code != 2 || reportCheck(r, "store").Verdict != doctor.Failure || !strings.Contains(reportCheck(r, "store").Detail, "no such file") {
		t.Fatalf("no store: exit %d\n%s", code, out)
	}
	if code, out, errOut := cli(t, "run", "-c", cfg, "hello"); code != 0 {
		t.Fatalf("run: %d %s %s", code, out, errOut)
	}
	if code, out, _ := cli(t, "doctor", "-c", cfg); code != doctorCode() || !strings.Contains(out, "schema") || !strings.Contains(out, "commits") {
		t.Fatalf("healthy: exit %d, want %d\n%s", code, doctorCode(), out)
	}
	// --db alone checks the store without a config.
	if code, r, out := doctorJSON(t, "--db", filepath.Join(dir, "runs.db")); code != 0 || reportCheck(r, "config").Name != "" {
		t.Fatalf("--db alone: exit %d\n%s", code, out)
	}

	t.Setenv("PATH", t.TempDir()) // no bwrap anywhere
	code, r, out = doctorJSON(t, "-c", cfg)
	if c := reportCheck(r, "sandbox"); code != 1 || c.Verdict != doctor.Warning || !strings.Contains(c.Detail, "unconfined") {
		t.Fatalf("no bwrap: exit %d\n%s", code, out)
	}
	strict := writeFiles(t, map[string]string{
		"hitch.yaml": "store: " + filepath.Join(dir, "runs.db") + "\nmodels:\n  m: {provider: scripted, script: " + filepath.Join(dir, "script.yaml") + "}\n" +
			"agents:\n  - {name: ops, model: m, tools: [read], policy: allow_all, workspace: .}\nsandbox:\n  require_isolation: true\n",
	})
	code, r, out = doctorJSON(t, "-c", filepath.Join(strict, "hitch.yaml"))
	if c := reportCheck(r, "sandbox"); code != 2 || c.Verdict != doctor.Failure || !strings.Contains(c.Detail, "refused") {
		t.Fatalf("no bwrap, isolation required: exit %d\n%s", code, out)
	}
}

// TestDoctorNeverPrintsASecret: a declared secret reaches an unreachable
// MCP server's URL, whose error the MCP check reports; neither the text
// nor the JSON holds it, and the check names the server.
func TestDoctorNeverPrintsASecret(t *testing.T) {
	const canary = "doctor-canary-5e1f0a9b7c3d"
	t.Setenv("T_DOCTOR_SECRET", canary)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	_, cfg := writeConfig(t, "store: runs.db\nsecrets:\n  tickets: {env: T_DOCTOR_SECRET}\n"+
		"mcp:\n  - {name: tickets, url: \"http://"+addr+"/mcp?key=${T_DOCTOR_SECRET}\", connect_timeout: 5s}\n"+
		"models:\n  m: {provider: scripted, script: script.yaml}\n"+
		"agents:\n  - {name: ops, model: m, tools: [read], policy: allow_all, workspace: .}\n",
		"turns:\n  - text: done\n")
	code, r, out := doctorJSON(t, "-c", cfg)
	c := reportCheck(r, "mcp tickets")
	if code != 2 || c.Verdict != doctor.Failure || !strings.Contains(c.Detail, "tickets") || !strings.Contains(c.Detail, "unreachable") {
		t.Fatalf("unreachable MCP server: exit %d\n%s", code, out)
	}
	if s := reportCheck(r, "secrets"); s.Verdict != doctor.OK || !strings.Contains(s.Detail, "1 of 1") {
		t.Fatalf("secrets: %+v", s)
	}
	text, textOut, textErr := cli(t, "doctor", "-c", cfg)
	if text != 2 {
		t.Fatalf("text: exit %d", text)
	}
	for _, o := range []string{out, textOut, textErr} {
		if strings.Contains(o, canary) {
			t.Fatalf("doctor printed the secret:\n%s", o)
		}
	}
}
