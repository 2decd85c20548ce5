package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/hitch-dev/hitch/sandbox"
	"github.com/hitch-dev/hitch/sandbox/local"
	"github.com/hitch-dev/hitch/tool"
)

func TestTailBuffer(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("k", 999) + "\n"
	tests := []struct {
		name      string
		writes    []string
		wantFirst string // first line kept
		wantLines int
		note      []string // empty: no note
	}{
		{name: "empty", writes: nil, wantLines: 0},
		{name: "exactly 2000 lines", writes: []string{numbered(2000)}, wantFirst: "line 1", wantLines: 2000},
		{name: "2001 lines", writes: []string{numbered(2001)}, wantFirst: "line 2", wantLines: 2000,
			note: []string{"2000-line limit", "lines 2-2001 of 2001"}},
		{name: "2001 lines, no final newline", writes: []string{strings.TrimSuffix(numbered(2001), "\n")}, wantFirst: "line 2", wantLines: 2000,
			note: []string{"lines 2-2001 of 2001"}},
		{name: "over 50 KiB in whole lines", writes: []string{strings.Repeat(long, 100)}, wantFirst: long[:999], wantLines: 51,
			note: []string{"50 KiB limit", "last 51 lines"}},
		{name: "many small writes", writes: chunks(strings.Repeat(long, 100), 7), wantFirst: long[:999], wantLines: 51,
			note: []string{"50 KiB limit"}},
		{name: "exactly 50 KiB", writes: []string{strings.Repeat("z", BashMaxBytes-1) + "\n"}, wantFirst: strings.Repeat("z", BashMaxBytes-1), wantLines: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newTailBuffer(BashMaxBytes)
			for _, w := range tc.writes {
				b.Write([]byte(w))
			}
			text, note := b.render(BashMaxLines)
			if len(text) > BashMaxBytes {
				t.Fatalf("kept %d bytes", len(text))
			}
			lines := 0
			if text != "" {
				lines = strings.Count(strings.TrimSuffix(text, "\n"), "\n") + 1
			}
			if lines != tc.wantLines {
				t.Errorf("kept %d lines, want %d", lines, tc.wantLines)
			}
			if first, _, _ := strings.Cut(text, "\n"); first != tc.wantFirst {
				t.Errorf("first kept line = %.40q, want %.40q", first, tc.wantFirst)
			}
			if len(tc.note) == 0 && note != "" {
				t.Errorf("unexpected note %q", note)
			}
			contains(t, "note", note, tc.note, nil)
		})
	}
}

func TestTailBufferCutsWholeCharacters(t *testing.T) {
	t.Parallel()
	// One line of 3-byte characters, longer than the bound, so the cut
	// falls inside one.
	b := newTailBuffer(BashMaxBytes)
	b.Write([]byte("x" + strings.Repeat("€", BashMaxBytes/3+10)))
	text, note := b.render(BashMaxLines)
	if !utf8.ValidString(text) || len(text) > BashMaxBytes || len(text) < BashMaxBytes-3 {
		t.Fatalf("kept %d bytes, valid UTF-8 %v", len(text), utf8.ValidString(text))
	}
	if !strings.Contains(note, "50 KiB") {
		t.Fatalf("note = %q", note)
	}
}

func TestBash(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.write("sub/f.txt", "x")
	tests := []struct {
		name string
		args m
		want []string
		not  []string
	}{
		{name: "exit code", args: m{"command": "echo out; echo err >&2; exit 7"}, want: []string{"out\nerr\n", "[exit code: 7]"}},
		{name: "2000 lines kept whole", args: m{"command": "seq 1 2000"}, want: []string{"1\n2\n", "2000\n[exit code: 0]"}, not: []string{"truncated"}},
		{name: "2001 lines", args: m{"command": "seq 1 2001"}, want: []string{"2000-line limit", "lines 2-2001 of 2001", "[exit code: 0]"}},
		{name: "50 KiB", args: m{"command": "head -c 200000 /dev/zero | tr '\\0' 'a' | fold -w 99"}, want: []string{"50 KiB limit", "[exit code: 0]"}},
		{name: "cwd", args: m{"command": "ls", "cwd": "sub"}, want: []string{"f.txt\n"}},
		{name: "env", args: m{"command": "echo \"[$GREETING]\"", "env": m{"GREETING": "hi there"}}, want: []string{"[hi there]"}},
		{name: "timeout", args: m{"command": "echo before; sleep 30; echo after", "timeout": 300},
			want: []string{"before\n", "timed out after 300ms", "[exit code: 124]"}, not: []string{"after\n"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := e.mustCall("bash", tc.args)
			contains(t, "output", out, tc.want, tc.not)
		})
	}
	for _, args := range []m{{"command": "true", "cwd": "../"}, {"command": "true", "cwd": "nope"}, {"command": ""}, {"command": "true", "timeout": 0}} {
		if _, err := e.call("bash", args); err == nil {
			t.Errorf("bash %v: no error", args)
		}
	}
}

// alive lists live processes whose command line holds token.
func alive(t *testing.T, token string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc")
	}
	var out []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmd, []byte(token)) {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && (stat[i+2] == 'Z' || stat[i+2] == 'X') {
			continue
		}
		out = append(out, e.Name()+": "+string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})))
	}
	return out
}

func isolations(t *testing.T) []sandbox.Isolation {
	isos := []sandbox.Isolation{sandbox.IsolationNone}
	if sb, err := local.New(local.Config{Root: t.TempDir(), Isolation: sandbox.IsolationBwrap}); err == nil {
		sb.Close()
		isos = append(isos, sandbox.IsolationBwrap)
	} else {
		t.Logf("bwrap cases skipped: %v", err)
	}
	return isos
}

func TestBashLeavesNoProcessBehind(t *testing.T) {
	t.Parallel()
	for _, iso := range isolations(t) {
		t.Run(string(iso), func(t *testing.T) {
			e := setup(t, local.Config{Isolation: iso})
			cases := []string{
				"sleep %s & echo started",
				"sleep %s >/dev/null 2>&1 & echo started",
				"(sleep %s; echo late) & sleep %s & exit 3",
				"nohup sleep %s >/dev/null 2>&1 &",
				"setsid sleep %s >/dev/null 2>&1 &",
			}
			for i, c := range cases {
				token := fmt.Sprintf("%d.%d%d", 4000+i, os.Getpid(), time.Now().UnixNano()%1000)
				out := e.mustCall("bash", m{"command": strings.ReplaceAll(c, "%s", token)})
				if left := alive(t, token); len(left) > 0 {
					t.Errorf("%q left processes running: %v\n%s", c, left, out)
				}
			}
		})
	}
}

// treeCommand starts background children, one of them in a session of its
// own, and then waits in the foreground.
func treeCommand(token string) string {
	return strings.ReplaceAll("sleep %s & setsid sleep %s & sleep %s", "%s", token)
}

func TestBashTimeoutKillsTree(t *testing.T) {
	t.Parallel()
	for _, iso := range isolations(t) {
		t.Run(string(iso), func(t *testing.T) {
			e := setup(t, local.Config{Isolation: iso})
			token := fmt.Sprintf("3999.%d%d", os.Getpid(), time.Now().UnixNano()%100000)
			out := e.mustCall("bash", m{"command": treeCommand(token), "timeout": 200})
			if !strings.Contains(out, "[exit code: 124]") {
				t.Fatalf("output = %q", out)
			}
			if left := alive(t, token); len(left) > 0 {
				t.Fatalf("processes left after timeout: %v", left)
			}
		})
	}
}

func TestBashHostCancellation(t *testing.T) {
	t.Parallel()
	for _, iso := range isolations(t) {
		t.Run(string(iso), func(t *testing.T) {
			e := setup(t, local.Config{Isolation: iso})
			token := fmt.Sprintf("3998.%d%d", os.Getpid(), time.Now().UnixNano()%100000)
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			args, _ := json.Marshal(m{"command": treeCommand(token)})
			_, err := e.tools["bash"].Call(ctx, args)
			if err == nil || !tool.IsUncertain(err) {
				t.Fatalf("error = %v, want an uncertain one", err)
			}
			if left := alive(t, token); len(left) > 0 {
				t.Fatalf("processes left after cancellation: %v", left)
			}
		})
	}
}

func chunks(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}

// runnerEnv, when set in a test process, makes TestBashDiesWithRunner act
// as the runner: it runs a long command through the bash tool and is then
// killed by the parent test.
const runnerEnv = "HITCH_TEST_BASH_RUNNER"

// waitFor polls cond until it holds or the deadline passes.
func waitFor(deadline time.Duration, cond func() bool) bool {
	end := time.Now().Add(deadline)
	for pause := time.Millisecond; ; pause = min(2*pause, 50*time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(end) {
			return false
		}
		time.Sleep(pause)
	}
}

// A runner that dies of SIGKILL mid-call takes the command's whole tree
// with it, background children included.
func TestBashDiesWithRunner(t *testing.T) {
	if spec := os.Getenv(runnerEnv); spec != "" {
		iso, rest, _ := strings.Cut(spec, ":")
		root, token, _ := strings.Cut(rest, ":")
		e := setup(t, local.Config{Root: root, Isolation: sandbox.Isolation(iso)})
		e.mustCall("bash", m{"command": treeCommand(token)})
		t.Fatal("the command ended before the runner was killed")
	}
	t.Parallel()
	for _, iso := range isolations(t) {
		t.Run(string(iso), func(t *testing.T) {
			token := fmt.Sprintf("3997.%d%d", os.Getpid(), time.Now().UnixNano()%100000)
			runner := exec.Command(os.Args[0], "-test.run=^TestBashDiesWithRunner$", "-test.count=1")
			runner.Env = append(os.Environ(), fmt.Sprintf("%s=%s:%s:%s", runnerEnv, iso, t.TempDir(), token))
			if err := runner.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { runner.Process.Kill(); runner.Wait() })
			sleeps := func() (n int) {
				for _, p := range alive(t, token) {
					if strings.Contains(p, ": sleep ") {
						n++
					}
				}
				return n
			}
			if !waitFor(20*time.Second, func() bool { return sleeps() == 3 }) {
				t.Fatalf("the command's processes did not all start: %v", alive(t, token))
			}
			if err := runner.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			runner.Wait()
			if !waitFor(10*time.Second, func() bool { return len(alive(t, token)) == 0 }) {
				t.Fatalf("processes outlived their runner: %v", alive(t, token))
			}
		})
	}
}
