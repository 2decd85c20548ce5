package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/hitch-dev/hitch/secret"
)

// escape makes text safe to show on a terminal: control characters (C0,
// DEL, C1), bidirectional overrides and bytes that are not UTF-8 are shown
// escaped (\x1b, \u009b, \xff), so a tool's output or a model's reply
// cannot move the cursor, retitle the window or hide text. With layout,
// newlines and tabs stay as they are; without, they are escaped too (for
// values shown inline).
func escape(s string, layout bool) string {
	clean := true
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r, n, layout) {
			clean = false
			break
		}
		i += n
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case !unsafeRune(r, n, layout):
			b.WriteString(s[i : i+n])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += n
	}
	return b.String()
}

func unsafeRune(r rune, n int, layout bool) bool {
	switch {
	case r == utf8.RuneError && n == 1:
		return true
	case r == '\n' || r == '\t':
		return !layout
	case r < 0x20 || r == 0x7f:
		return true
	case r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// printable is a value shown inline, on one line: every control character
// escaped.
func printable(s string) string { return escape(s, false) }

// terminal is the writer behind every line of human output: it escapes
// what escape escapes, keeping newlines and tabs. A character split
// across two writes is held back until it is whole.
//
// With red set, secret values are replaced first (see redactWriter).
// It is safe for concurrent use: a server's log lines and its event lines
// come from different goroutines.
type terminal struct {
	mu      sync.Mutex
	w       io.Writer
	pending []byte
	red     *redaction
	stream  *secret.Stream
	owner   *secret.Redactor
}

func (t *terminal) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p) // what the caller gave, whatever redaction made of it
	if r := t.red.get(); !r.Empty() {
		if t.stream == nil || t.owner != r {
			t.stream, t.owner = r.NewStream(), r
		}
		p = []byte(t.stream.Write(string(p)))
	}
	if _, err := t.write(p); err != nil {
		return 0, err
	}
	return n, nil
}

func (t *terminal) write(p []byte) (int, error) {
	buf := append(t.pending, p...)
	cut := len(buf)
	// Hold back the start of a character that is not whole yet.
	for back := 1; back <= utf8.UTFMax-1 && back <= len(buf); back++ {
		c := buf[len(buf)-back]
		if c < 0x80 {
			break
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(buf[len(buf)-back:]) {
				cut = len(buf) - back
			}
			break
		}
	}
	t.pending = append([]byte(nil), buf[cut:]...)
	if _, err := io.WriteString(t.w, escape(string(buf[:cut]), true)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// flush writes what is held back, escaped.
func (t *terminal) flush() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stream != nil {
		_, _ = t.write([]byte(t.stream.Flush()))
	}
	if len(t.pending) > 0 {
		_, _ = io.WriteString(t.w, escape(string(t.pending), true))
		t.pending = nil
	}
}
