package builtin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/hitch-dev/hitch/sandbox"
	"github.com/hitch-dev/hitch/tool"
)

// Timeouts of the bash tool.
const (
	// BashDefaultTimeout applies when the call names none.
	BashDefaultTimeout = 2 * time.Minute
	// BashMaxTimeout caps what a call may ask for.
	BashMaxTimeout = 10 * time.Minute
	// bashGrace lets the tool's own timeout fire, and report exit 124,
	// before the engine's bound on the whole body does.
	bashGrace = 30 * time.Second
)

type bashIn struct {
	Command string            `json:"command" jsonschema:"shell command line, run with bash -c"`
	Cwd     string            `json:"cwd,omitempty" jsonschema:"working directory (default: the workspace root)"`
	Env     map[string]string `json:"env,omitempty" jsonschema:"extra environment variables"`
	Timeout int               `json:"timeout,omitempty" jsonschema:"milliseconds before the command is killed (default 120000, most 600000)"`
}

const bashDescription = `Run a shell command with bash -c in the workspace. stdout and stderr are combined; only the last 2000 lines or 50 KiB are kept, and the output says when earlier output was cut. The result ends with the exit code. A command that runs past its timeout (default 2 minutes, at most 10) is killed and reported with exit code 124. Background processes do not survive the call: everything the command started is killed when it ends. To keep long output, redirect it to a file and use read or grep on it.`

// bashSchema is the bash tool's input schema.
var bashSchema = schemaFor[bashIn](func(p map[string]*jsonschema.Schema) {
	p["timeout"].Minimum = minimum(1)
	p["timeout"].Maximum = minimum(float64(BashMaxTimeout.Milliseconds()))
})

// shell prefers bash, which models write for, over sh.
func shell() string {
	if _, err := exec.LookPath("bash"); err == nil {
		return "bash"
	}
	return "sh"
}

func (ts *toolset) bash(ctx context.Context, in bashIn) (string, error) {
	if strings.TrimSpace(in.Command) == "" {
		return "", argError("bash", "command is empty")
	}
	if in.Timeout < 0 {
		return "", argError("bash", "timeout must be 1 ms or more")
	}
	timeout := BashDefaultTimeout
	if in.Timeout > 0 {
		timeout = min(time.Duration(in.Timeout)*time.Millisecond, BashMaxTimeout)
	}
	out := newTailBuffer(BashMaxBytes)
	res, err := ts.sb.Exec(ctx, sandbox.Cmd{
		Args:    []string{shell(), "-c", in.Command},
		Dir:     in.Cwd,
		Env:     in.Env,
		Timeout: timeout,
		Stdout:  out,
	})
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			// The command may have acted before it was killed.
			return "", tool.Uncertain(fmt.Errorf("bash: %w; the command was killed and may have had effects", err))
		}
		return "", fmt.Errorf("bash: %w", err)
	}
	var b strings.Builder
	text, note := out.render(BashMaxLines)
	b.WriteString(text)
	if text != "" && !strings.HasSuffix(text, "\n") {
		b.WriteByte('\n')
	}
	if note != "" {
		b.WriteString(note + "\n")
	}
	if res.TimedOut {
		fmt.Fprintf(&b, "[Command timed out after %s and was killed.]\n", timeout)
	}
	fmt.Fprintf(&b, "[exit code: %d]", res.ExitCode)
	return b.String(), nil
}

// tailBuffer keeps the last max bytes written to it and counts everything.
type tailBuffer struct {
	max   int
	buf   []byte
	total int64
	lines int64 // newlines seen
	last  byte
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (t *tailBuffer) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	t.total += int64(len(p))
	t.lines += int64(bytes.Count(p, []byte("\n")))
	t.last = p[len(p)-1]
	if len(p) >= t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return len(p), nil
	}
	t.buf = append(t.buf, p...)
	if len(t.buf) > 2*t.max {
		t.buf = append(t.buf[:0:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

// render returns the kept tail, cut to whole lines and at most maxLines,
// and a note saying what was cut, or "" when nothing was.
func (t *tailBuffer) render(maxLines int) (string, string) {
	b := t.buf
	if len(b) > t.max {
		b = b[len(b)-t.max:]
	}
	totalLines := t.lines
	if t.total > 0 && t.last != '\n' {
		totalLines++
	}
	byteCut := int64(len(b)) < t.total
	if byteCut {
		// Drop the partial first line, unless it is all there is.
		if i := bytes.IndexByte(b, '\n'); i >= 0 && i < len(b)-1 {
			b = b[i+1:]
		} else {
			for len(b) > 0 && !utf8.RuneStart(b[0]) {
				b = b[1:]
			}
		}
	}
	// Keep the last maxLines lines; a final newline ends the last line.
	body := bytes.TrimSuffix(b, []byte("\n"))
	kept := int64(bytes.Count(body, []byte("\n")) + 1)
	if len(b) == 0 {
		kept = 0
	}
	lineCut := false
	if kept > int64(maxLines) {
		cut := len(body)
		for range maxLines {
			cut = bytes.LastIndexByte(body[:cut], '\n')
		}
		b = b[cut+1:]
		kept = int64(maxLines)
		lineCut = true
	}
	if !byteCut && !lineCut {
		return string(b), ""
	}
	first := totalLines - kept + 1
	why := "the 50 KiB limit"
	if lineCut {
		why = fmt.Sprintf("the %d-line limit", maxLines)
	}
	note := fmt.Sprintf("[Output truncated by %s: showing the last %d lines (lines %d-%d of %d, %d of %d bytes). Earlier output is lost; to see all of it, redirect the command's output to a file and read or grep that file.]",
		why, kept, first, totalLines, totalLines, len(b), t.total)
	return string(b), note
}
