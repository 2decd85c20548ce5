package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/internal/testproc"
)

// tmuxPane drives a program in a real terminal: a tmux server of the test's
// own, one window, keys typed in and the screen read back.
type tmuxPane struct {
	t      *testing.T
	socket string
}

func newTmuxPane(t *testing.T, command string) *tmuxPane {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux is not installed: the terminal test of hitch chat needs it")
	}
	p := &tmuxPane{t: t, socket: fmt.Sprintf("hitch-test-%d-%d", os.Getpid(), time.Now().UnixNano())}
	p.run("new-session", "-d", "-x", "200", "-y", "60", command)
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", p.socket, "kill-server").Run() })
	return p
}

func (p *tmuxPane) run(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", p.socket}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// typeLine types text and presses enter.
func (p *tmuxPane) typeLine(text string) {
	p.t.Helper()
	p.run("send-keys", "-l", text)
	p.run("send-keys", "Enter")
}

// screen is the whole scrollback of the pane.
func (p *tmuxPane) screen() string {
	p.t.Helper()
	return p.run("capture-pane", "-p", "-S", "-", "-J")
}

// waitFor reads the screen until it shows want n times, for at most a
// bounded time: a terminal can only be watched, not waited on.
func (p *tmuxPane) waitFor(want string, n int) string {
	p.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := p.screen()
		if strings.Count(s, want) >= n {
			return s
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the screen never showed %q ×%d:\n%s", want, n, s)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestChatInATerminal types into a real `hitch chat` in tmux: a message
// whose turn runs a slow command, a second message queued while it runs,
// Ctrl-C to interrupt the turn, the queued message answered next, and
// Ctrl-C again, with nothing running, to leave.
func TestChatInATerminal(t *testing.T) {
	testproc.Heavy(t, "drives the real binary in a terminal")
	bin := binary(t)
	dir := t.TempDir()
	files := map[string]string{
		"hitch.yaml": bashAgent("chat.db", "talker") + "    policy: allow_all\n",
		// The first turn of every submission runs a slow command; the
		// second answers.
		"script.yaml": `turns:
  - text: Checking.
    calls: [{name: bash, args: '{"command": "echo started >> effects.log; sleep 20"}'}]
  - text: All done here.
repeat: true
`,
	}
	writeFilesIn(t, dir, files)
	cmd := fmt.Sprintf("cd %s && %s chat -c hitch.yaml --session s1; echo CHAT-EXITED $?; sleep 60", dir, bin)
	p := newTmuxPane(t, cmd)
	p.waitFor("session s1", 1)

	p.typeLine("please check the disk")
	p.waitFor("→ bash", 1)
	p.typeLine("and then say hello")
	p.waitFor("(queued as", 1)
	// Ctrl-C is to interrupt a command that runs: wait until it has begun
	// (its first line is written), not only until the model asked for it.
	waitForFile(t, filepath.Join(dir, "effects.log"), "started", 30*time.Second)

	// The slow command must be out of the terminal's reach: Ctrl-C is the
	// chat's to handle, not the command's. Which session and process
	// group each process is in is logged if the interrupt goes astray.
	procs, _ := exec.Command("ps", "-eo", "pid,ppid,pgid,sid,tpgid,stat,args").Output()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("processes before Ctrl-C:\n%s", procs)
		}
	})
	p.run("send-keys", "C-c")
	p.waitFor("(interrupting the current turn", 1)
	p.waitFor("(interrupted)", 1)
	// The queued message runs next and is answered (the script's next
	// turn); with nothing running, one Ctrl-C leaves.
	p.waitFor("agent: All done here.", 1)
	p.run("send-keys", "C-c")
	screen := p.waitFor("CHAT-EXITED", 1)
	if !strings.Contains(screen, "CHAT-EXITED 0") {
		t.Errorf("chat did not leave cleanly:\n%s", screen)
	}
	// The session outlives the terminal: the first submission ended
	// interrupted, the queued one completed.
	code, out, errOut := cli(t, "sessions", "show", "s1", "-c", filepath.Join(dir, "hitch.yaml"), "--json")
	if code != exitOK || !strings.Contains(out, "interrupted") || !strings.Contains(out, "All done here.") {
		t.Errorf("sessions show: exit %d\n%s%s", code, out, errOut)
	}
}

// TestChatAnswersApprovals: a turn that waits for approvals shows each
// request in the chat; /approve and /reject answer them in place with the
// approver credential from the environment, and the turn goes on: the
// approved command runs, the rejected one never does, and each answer is
// journaled under the approver's name.
func TestChatAnswersApprovals(t *testing.T) {
	testproc.Heavy(t, "drives the real binary in a terminal")
	bin := binary(t)
	dir := t.TempDir()
	files := map[string]string{
		"hitch.yaml": bashAgent("chat.db", "deployer") + prodApprovals + `      - {name: dave, secret: d-secret, requirements: ["*"]}
`,
		"script.yaml": `turns:
  - calls:
      - {name: bash, args: '{"command": "echo deployed >> effects.log"}'}
      - {name: bash, args: '{"command": "echo dropped >> effects.log"}'}
  - text: Finished.
`,
	}
	writeFilesIn(t, dir, files)
	cmd := fmt.Sprintf("cd %s && HITCH_CREDENTIAL=dave:d-secret %s chat -c hitch.yaml --session s1; echo CHAT-EXITED $?; sleep 60", dir, bin)
	p := newTmuxPane(t, cmd)
	p.waitFor("session s1", 1)

	// Each request is shown, in turn, with the command that answers it.
	approveCmd := regexp.MustCompile(`/approve (\S+) (\S+) +or`)
	p.typeLine("deploy to production")
	p.waitFor("reason: touches production", 1)
	screen := p.waitFor("approval needed (prod): bash", 1)
	answers := approveCmd.FindAllStringSubmatch(screen, -1)
	if len(answers) != 1 || !strings.Contains(screen, "echo deployed") {
		t.Fatalf("want the first request with its /approve command:\n%s", screen)
	}
	p.typeLine("/approve " + answers[0][2]) // the run may be left out
	p.waitFor("(approved ", 1)
	screen = p.waitFor("approval needed (prod): bash", 2)
	answers = approveCmd.FindAllStringSubmatch(screen, -1)
	if len(answers) != 2 || !strings.Contains(screen, "echo dropped") {
		t.Fatalf("want the second request with its /approve command:\n%s", screen)
	}
	run := answers[1][1]
	p.typeLine("/reject " + run + " " + answers[1][2] + " not on a Friday")
	p.waitFor("(rejected ", 1)
	p.waitFor("agent: Finished.", 1)
	p.typeLine("/quit")
	screen = p.waitFor("CHAT-EXITED", 1)
	if !strings.Contains(screen, "CHAT-EXITED 0") {
		t.Errorf("chat did not leave cleanly:\n%s", screen)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "effects.log")); string(b) != "deployed\n" {
		t.Errorf("effects %q, want the approved command once and the rejected one never", b)
	}
	code, out, errOut := cli(t, "runs", "show", run, "-c", filepath.Join(dir, "hitch.yaml"), "--json")
	if code != exitOK || !strings.Contains(out, `"state":"settled"`) || !strings.Contains(out, `"state":"rejected","detail":"dave"`) {
		t.Errorf("runs show %s: exit %d, want one call settled and one rejected by dave\n%s%s", run, code, out, errOut)
	}
}
