package builtin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/hitch-dev/hitch/sandbox"
)

type grepIn struct {
	Pattern    string `json:"pattern" jsonschema:"regular expression to search for (or plain text with literal)"`
	Path       string `json:"path,omitempty" jsonschema:"file or directory to search (default: the workspace root)"`
	Include    string `json:"include,omitempty" jsonschema:"only search files whose name matches this glob, e.g. *.go"`
	IgnoreCase bool   `json:"ignoreCase,omitempty" jsonschema:"match without regard to case"`
	Literal    bool   `json:"literal,omitempty" jsonschema:"treat pattern as plain text, not a regular expression"`
	MaxMatches int    `json:"maxMatches,omitempty" jsonschema:"most matches to return (default and most: 100)"`
}

const grepDescription = `Search file contents for a pattern, recursively under path. Each result is path:line: text. At most 100 matches are returned (fewer with maxMatches), and a matching line is cut at 500 characters; the output says when either happened. The pattern is an extended regular expression unless literal is set. Binary files are skipped. When ripgrep is available it is used, and then files ignored by .gitignore and hidden files are skipped too.`

// grepLineKeep bounds the bytes kept of one output line: room for a long
// path and 500 characters of text.
const grepLineKeep = 8 << 10

// grepSchema is the grep tool's input schema.
var grepSchema = schemaFor[grepIn](func(p map[string]*jsonschema.Schema) {
	p["maxMatches"].Minimum = minimum(1)
})

// hasRG probes once whether ripgrep runs in the sandbox.
func (ts *toolset) hasRG() bool {
	ts.rgOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := ts.sb.Exec(ctx, sandbox.Cmd{Args: []string{"rg", "--version"}})
		ts.rg = err == nil && res.ExitCode == 0
	})
	return ts.rg
}

func (ts *toolset) grep(ctx context.Context, in grepIn) (string, error) {
	if in.Pattern == "" {
		return "", argError("grep", "pattern is empty")
	}
	if in.MaxMatches < 0 {
		return "", argError("grep", "maxMatches must be 1 or more")
	}
	limit := GrepMaxMatches
	if in.MaxMatches > 0 {
		limit = min(in.MaxMatches, GrepMaxMatches)
	}
	where := in.Path
	if where == "" {
		where = "."
	}
	fi, err := ts.sb.Stat(ctx, where)
	if err != nil {
		return "", fmt.Errorf("grep: %w", err)
	}
	args := ts.grepArgs(in, fi.Path)
	sink := &matchSink{limit: limit}
	errOut := newHeadBuffer(4 << 10)
	res, err := ts.sb.Exec(ctx, sandbox.Cmd{Args: args, Stdout: sink, Stderr: errOut})
	if err != nil {
		return "", fmt.Errorf("grep: %w", err)
	}
	sink.flush()
	// Exit 1 is "no match"; 2 is an error, which grep also reports when some
	// files were unreadable but others matched.
	if res.ExitCode >= 2 && !res.Stopped && len(sink.matches) == 0 {
		msg := strings.TrimSpace(errOut.String())
		if msg == "" {
			msg = fmt.Sprintf("%s exited with code %d", args[0], res.ExitCode)
		}
		return "", fmt.Errorf("grep: %s", msg)
	}
	if len(sink.matches) == 0 {
		return "No matches found.", nil
	}
	slices.SortFunc(sink.matches, func(a, b match) int {
		if c := strings.Compare(a.path, b.path); c != 0 {
			return c
		}
		return a.line - b.line
	})
	var b strings.Builder
	for _, m := range sink.matches {
		fmt.Fprintf(&b, "%s:%d: %s", ts.display(m.path), m.line, m.text)
		if m.cut {
			fmt.Fprintf(&b, " … [line cut at %d characters]", GrepMaxLineChars)
		}
		b.WriteByte('\n')
	}
	if sink.more {
		if limit < GrepMaxMatches {
			fmt.Fprintf(&b, "[Stopped at maxMatches=%d; more matches exist. Raise maxMatches (up to %d) or narrow the search.]", limit, GrepMaxMatches)
		} else {
			fmt.Fprintf(&b, "[Showing the first %d matches; more exist. Narrow the pattern, the path or include to see the others.]", limit)
		}
	}
	if sink.anyCut {
		fmt.Fprintf(&b, "\n[Lines longer than %d characters were cut; read the file at that line to see it whole.]", GrepMaxLineChars)
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

func (ts *toolset) grepArgs(in grepIn, target string) []string {
	var args []string
	if ts.hasRG() {
		args = []string{"rg", "--line-number", "--with-filename", "--no-heading", "--color=never", "--null", "--no-messages", "--sort=path"}
		if in.IgnoreCase {
			args = append(args, "--ignore-case")
		}
		if in.Literal {
			args = append(args, "--fixed-strings")
		}
		if in.Include != "" {
			args = append(args, "--glob", in.Include)
		}
	} else {
		args = []string{"grep", "-r", "-n", "-H", "-I", "-Z", "-s", "--color=never", "--exclude-dir=.git"}
		if in.IgnoreCase {
			args = append(args, "-i")
		}
		if in.Literal {
			args = append(args, "-F")
		} else {
			args = append(args, "-E")
		}
		if in.Include != "" {
			args = append(args, "--include="+in.Include)
		}
	}
	return append(args, "-e", in.Pattern, "--", target)
}

type match struct {
	path string
	line int
	text string
	cut  bool
}

var errEnough = errors.New("enough matches")

// matchSink parses "path NUL line:text" records as they stream in, keeping
// a bounded part of each line, and stops the search once it knows more
// matches exist than it will show.
type matchSink struct {
	limit   int
	matches []match
	more    bool
	anyCut  bool
	partial []byte
	over    bool // the current line outgrew grepLineKeep
}

func (s *matchSink) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		room := grepLineKeep - len(s.partial)
		if room < len(chunk) {
			s.over = true
		}
		if room > 0 {
			s.partial = append(s.partial, chunk[:min(room, len(chunk))]...)
		}
		if i < 0 {
			break
		}
		p = p[i+1:]
		if err := s.record(); err != nil {
			return n, err
		}
	}
	return n, nil
}

// flush parses a last line that had no newline.
func (s *matchSink) flush() {
	if len(s.partial) > 0 && !s.more {
		s.record()
	}
}

func (s *matchSink) record() error {
	line, over := s.partial, s.over
	s.partial, s.over = s.partial[:0], false
	nul := bytes.IndexByte(line, 0)
	if nul < 0 {
		return nil
	}
	rest := line[nul+1:]
	colon := bytes.IndexByte(rest, ':')
	if colon < 0 {
		return nil
	}
	num, err := strconv.Atoi(string(rest[:colon]))
	if err != nil {
		return nil
	}
	if len(s.matches) == s.limit {
		s.more = true
		return errEnough
	}
	text := rest[colon+1:]
	text = bytes.TrimSuffix(text, []byte("\r"))
	cut := false
	if utf8.RuneCount(text) > GrepMaxLineChars {
		i, count := 0, 0
		for count < GrepMaxLineChars {
			_, size := utf8.DecodeRune(text[i:])
			i += size
			count++
		}
		text, cut = text[:i], true
	} else if over {
		cut = true
	}
	s.anyCut = s.anyCut || cut
	s.matches = append(s.matches, match{path: string(line[:nul]), line: num, text: string(text), cut: cut})
	return nil
}

// headBuffer keeps the first max bytes written to it.
type headBuffer struct {
	max int
	buf []byte
}

func newHeadBuffer(max int) *headBuffer { return &headBuffer{max: max} }

func (h *headBuffer) Write(p []byte) (int, error) {
	if room := h.max - len(h.buf); room > 0 {
		h.buf = append(h.buf, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (h *headBuffer) String() string { return string(h.buf) }
