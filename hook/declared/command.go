package declared

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/hitch-dev/hitch/sandbox"
)

// Exit codes of a hook command.
const (
	// ExitOK: the decision is on standard output (none lets everything
	// through).
	ExitOK = 0
	// ExitDeny: deny (refuse, stop), with standard error as the reason.
	ExitDeny = 2
)

// Command is a hook that runs a program in a sandbox. The event is its
// standard input; its standard output is the answer. Exit 0 answers with
// standard output, exit 2 denies with standard error as the reason; any
// other exit, a timeout, or an answer that is not JSON is a failure.
type Command struct {
	// Args are the program and its arguments.
	Args []string
	// Env are variables added to the sandbox's bounded environment (the
	// secrets the hook is handed, by name). Nothing else of the host's
	// environment reaches it.
	Env map[string]string
	// Sandbox opens the sandbox the command runs in (an agent's: the
	// same workspace and isolation as its tools' commands); one that is
	// an io.Closer is closed when the command has ended.
	Sandbox func() (sandbox.Sandbox, error)
}

func (c *Command) describe() (string, string) { return "command", strings.Join(c.Args, " ") }

// maxStderr bounds the standard error kept for a failure's message.
const maxStderr = 4 << 10

func (c *Command) call(ctx context.Context, h *Hook, event []byte) (Answer, error) {
	sb, err := c.Sandbox()
	if err != nil {
		return Answer{}, fmt.Errorf("open the sandbox: %w", err)
	}
	if cl, ok := sb.(io.Closer); ok {
		defer cl.Close()
	}
	env := map[string]string{"HITCH_HOOK": h.Name, "HITCH_HOOK_POINT": string(h.Point)}
	for k, v := range c.Env {
		env[k] = v
	}
	out := &capped{max: MaxOutput}
	errOut := &tail{max: maxStderr}
	res, err := sb.Exec(ctx, sandbox.Cmd{Args: c.Args, Env: env, Timeout: h.timeout(), Stdin: bytes.NewReader(event), Stdout: out, Stderr: errOut})
	switch {
	case err != nil:
		return Answer{}, err
	case res.TimedOut:
		return Answer{}, fmt.Errorf("gave no answer within %s", h.timeout())
	case res.Stopped:
		return Answer{}, fmt.Errorf("answered more than %d bytes", MaxOutput)
	case res.ExitCode == ExitDeny:
		return Answer{Action: "deny", Reason: strings.TrimSpace(errOut.String())}, nil
	case res.ExitCode != ExitOK:
		msg := fmt.Sprintf("exited %d", res.ExitCode)
		if s := strings.TrimSpace(errOut.String()); s != "" {
			msg += ": " + s
		}
		return Answer{}, errors.New(msg)
	}
	return decodeAnswer(out.Bytes())
}

// capped keeps up to max bytes and refuses more, which stops the command.
type capped struct {
	mu  sync.Mutex
	max int
	buf bytes.Buffer
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.buf.Len()+len(p) > c.max {
		return 0, errors.New("too much output")
	}
	return c.buf.Write(p)
}

func (c *capped) Bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return bytes.Clone(c.buf.Bytes())
}

// tail keeps the last max bytes written.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append([]byte(nil), t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}
