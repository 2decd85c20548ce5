// Package secret keeps secret values out of everything hitch writes down.
//
// A Redactor knows a set of named values (API keys, tokens, passwords) and
// replaces each of them with the marker [secret:NAME] wherever it appears in
// a text: verbatim, in upper or lower case, folded across lines, encoded as
// base64 (standard or URL alphabet, at any alignment inside a longer
// encoding), or masked the way providers print keys (the first characters
// and the last four kept, the middle starred). Everything the runtime
// journals, traces, logs or returns as an error passes through one.
//
// Values shorter than MinLen are refused: redacting a three-letter word
// everywhere would ruin every text and protect nothing.
package secret

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hitch-dev/hitch/internal/ident"
)

// MinLen is the shortest value a Redactor accepts, in bytes.
const MinLen = 8

// MaxValues bounds the values one Redactor holds.
const MaxValues = 1024

// Marker returns the text that stands for the secret name.
func Marker(name string) string { return "[secret:" + name + "]" }

// Redactor replaces secret values in texts. The zero value and nil redact
// nothing. It is safe for concurrent use once built.
type Redactor struct {
	forms  []form          // longest first, so a longer form wins an overlap
	masked []maskedPattern // provider-style masks
	maxLen int             // longest form, for folded matching
	filter *filter         // what no text without a candidate needs searched
}

type form struct {
	text string
	name string
}

type maskedPattern struct {
	re   *regexp.Regexp
	head string // the characters a mask keeps first
	name string
}

// New builds a Redactor from named values. Every problem is reported at
// once: a name outside letters, digits and "_.-", a value shorter than
// MinLen, or too many values.
func New(values map[string]string) (*Redactor, error) {
	var errs []string
	if len(values) > MaxValues {
		errs = append(errs, fmt.Sprintf("%d values: at most %d", len(values), MaxValues))
	}
	names := make([]string, 0, len(values))
	for n := range values {
		names = append(names, n)
	}
	sort.Strings(names)
	r := &Redactor{}
	seen := map[string]bool{}
	for _, n := range names {
		v := values[n]
		if !ident.Secret(n) {
			errs = append(errs, fmt.Sprintf("secret %q: name wants 1–64 letters, digits, '_', '.' or '-'", n))
			continue
		}
		if len(v) < MinLen {
			errs = append(errs, fmt.Sprintf("secret %s: value is %d bytes, want at least %d", n, len(v), MinLen))
			continue
		}
		for _, f := range formsOf(v) {
			if !seen[f] {
				seen[f] = true
				r.forms = append(r.forms, form{text: f, name: n})
				r.maxLen = max(r.maxLen, len(f))
			}
		}
		if p := maskPattern(v); p != nil {
			r.masked = append(r.masked, maskedPattern{re: p, head: v[:maskHead], name: n})
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("secrets: %s", strings.Join(errs, "; "))
	}
	slices.SortStableFunc(r.forms, func(a, b form) int { return len(b.text) - len(a.text) })
	r.filter = newFilter(r.forms, r.masked)
	return r, nil
}

// formsOf lists the spellings of v that are searched for verbatim.
func formsOf(v string) []string {
	fs := []string{v, strings.ToUpper(v), strings.ToLower(v)}
	// JSON escapes a value that has quotes, backslashes or control
	// characters; a journaled string holds that spelling.
	if esc := jsonEscape(v); esc != v {
		fs = append(fs, esc)
	}
	// base64 at each of the three alignments a value can have inside a
	// longer encoding: only the characters that depend on v alone.
	for off := range 3 {
		src := append(make([]byte, off), v...)
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
			s := enc.EncodeToString(src)
			s = strings.TrimRight(s, "=")
			// Leading characters mix in the padding bytes; trailing ones
			// mix in whatever follows v.
			start := (off*8 + 5) / 6
			if off == 0 {
				start = 0
			}
			end := (len(src) * 8) / 6
			if start < end && end-start >= MinLen {
				fs = append(fs, s[start:end])
			}
			if off == 0 {
				fs = append(fs, s) // the whole encoding, padding dropped
			}
		}
	}
	return fs
}

func jsonEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// maskPattern matches v as providers print a key in errors: a few leading
// characters, a run of mask characters, and the last four.
func maskPattern(v string) *regexp.Regexp {
	if len(v) < 12 || !utf8.ValidString(v) {
		return nil
	}
	head, tail := regexp.QuoteMeta(v[:maskHead]), regexp.QuoteMeta(v[len(v)-maskTail:])
	return regexp.MustCompile(head + `[^\s"'*.…•]{0,16}(?:[*•]{3,}|…+|\.{3,})[^\s"'*.…•]{0,16}` + tail)
}

// The characters a masked key keeps of the value, first and last.
const maskHead, maskTail = 3, 4

// maxMasked bounds the length of a masked value a Stream waits for: the
// kept head and tail, up to 16 bytes each side of the mask, and a mask of
// up to 64 bytes.
const maxMasked = maskHead + 16 + 64 + 16 + maskTail

// Empty reports whether r redacts nothing.
func (r *Redactor) Empty() bool { return r == nil || len(r.forms) == 0 }

// String redacts a text.
func (r *Redactor) String(s string) string {
	if r.Empty() || s == "" || !mayMatch(r.filter, s) {
		return s
	}
	for _, f := range r.forms {
		if strings.Contains(s, f.text) {
			s = strings.ReplaceAll(s, f.text, Marker(f.name))
		}
	}
	for _, m := range r.masked {
		s = m.re.ReplaceAllLiteralString(s, Marker(m.name))
	}
	return r.folded(s)
}

// Bytes redacts a text held in bytes (a journal entry's JSON, say). The
// markers hold no quote or backslash, so valid JSON stays valid.
func (r *Redactor) Bytes(b []byte) []byte {
	if r.Empty() || len(b) == 0 || !mayMatch(r.filter, b) {
		return b
	}
	s := string(b)
	out := r.String(s)
	if out == s {
		return b
	}
	return []byte(out)
}

// Error redacts an error's text; a nil error stays nil.
func (r *Redactor) Error(err error) error {
	if err == nil || r.Empty() {
		return err
	}
	msg := err.Error()
	if red := r.String(msg); red != msg {
		return &redactedError{msg: red, err: err}
	}
	return err
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }

// Unwrap keeps errors.Is and errors.As working; the wrapped text is still
// the raw one, so callers print Error(), never the unwrapped chain.
func (e *redactedError) Unwrap() error { return e.err }

// folded finds values split by whitespace (a value folded across lines,
// say): it searches the text with its whitespace taken out and replaces the
// spans they came from.
func (r *Redactor) folded(s string) string {
	if !strings.ContainsFunc(s, unicode.IsSpace) && !strings.Contains(s, `\`) {
		return s
	}
	var dense strings.Builder
	idx := make([]int, 0, len(s)) // dense byte i came from s[idx[i]]
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == ' ' || c == '\n' || c == '\r' || c == '\t' {
			continue
		}
		// A line break inside a JSON string is spelled \n.
		if c == '\\' && i+1 < len(s) && (s[i+1] == 'n' || s[i+1] == 'r' || s[i+1] == 't') {
			i++
			continue
		}
		dense.WriteByte(c)
		idx = append(idx, i)
	}
	d := dense.String()
	type span struct {
		from, to int // in s, to exclusive
		name     string
	}
	var spans []span
	for _, f := range r.forms {
		for at := 0; ; {
			k := strings.Index(d[at:], f.text)
			if k < 0 {
				break
			}
			k += at
			from, to := idx[k], idx[k+len(f.text)-1]+1
			spans = append(spans, span{from, to, f.name})
			at = k + len(f.text)
		}
	}
	if len(spans) == 0 {
		return s
	}
	slices.SortFunc(spans, func(a, b span) int { return a.from - b.from })
	var b strings.Builder
	last := 0
	for _, sp := range spans {
		if sp.from < last {
			continue // overlaps a span already replaced
		}
		b.WriteString(s[last:sp.from])
		b.WriteString(Marker(sp.name))
		last = sp.to
	}
	b.WriteString(s[last:])
	return b.String()
}

// Stream redacts a text that arrives in pieces (streamed model text): a
// value split between two pieces is held back until it can be judged. It
// is not safe for concurrent use.
type Stream struct {
	r   *Redactor
	buf string
}

// NewStream returns a Stream that redacts with r.
func (r *Redactor) NewStream() *Stream { return &Stream{r: r} }

// Write takes the next piece and returns the redacted text that can be
// shown now; a tail that could begin a value is kept for the next piece.
func (s *Stream) Write(piece string) string {
	if s.r.Empty() {
		return piece
	}
	s.buf += piece
	cut := len(s.buf) - s.r.hold(s.buf)
	out := s.r.String(s.buf[:cut])
	s.buf = s.buf[cut:]
	return out
}

// Flush returns what is held back, redacted.
func (s *Stream) Flush() string {
	out := s.r.String(s.buf)
	s.buf = ""
	return out
}

// MaxHold bounds what a Stream holds back, in bytes: past it, a tail that
// might still grow into a value is let go (redacted as far as it can be
// judged alone).
const MaxHold = 4096

// hold is the length of the tail of s a Stream keeps back: the longest
// tail that begins a form, with whitespace anywhere in it (a value folded
// across lines), or that begins a masked value not yet closed.
func (r *Redactor) hold(s string) int {
	return min(max(r.holdForm(s), r.holdMasked(s)), MaxHold)
}

// holdForm finds the longest tail of s that, whitespace taken out, is the
// beginning of a form.
func (r *Redactor) holdForm(s string) int {
	// The last maxLen-1 characters other than whitespace, from the end,
	// and where each is in s.
	dense := make([]byte, 0, r.maxLen)
	idx := make([]int, 0, r.maxLen)
	for i := len(s) - 1; i >= 0 && len(dense) < r.maxLen-1 && len(s)-i <= MaxHold; i-- {
		if c := s[i]; !isFold(c) {
			dense = append(dense, c)
			idx = append(idx, i)
		}
	}
	slices.Reverse(dense)
	slices.Reverse(idx)
	longest := 0
	for _, f := range r.forms {
		for n := min(len(f.text)-1, len(dense)); n > longest; n-- {
			if string(dense[len(dense)-n:]) == f.text[:n] {
				longest = n
				break
			}
		}
	}
	if longest == 0 {
		return 0
	}
	return len(s) - idx[len(idx)-longest]
}

// holdMasked finds the earliest tail of s, at most maxMasked long, that
// starts with a masked value's head and holds nothing that would end one.
func (r *Redactor) holdMasked(s string) int {
	from := max(0, len(s)-maxMasked)
	hold := 0
	for _, m := range r.masked {
		for at := from; at < len(s); {
			k := strings.Index(s[at:], m.head)
			if k < 0 {
				break
			}
			k += at
			if !strings.ContainsFunc(s[k:], func(c rune) bool { return unicode.IsSpace(c) || c == '"' || c == '\'' }) {
				hold = max(hold, len(s)-k)
				break
			}
			at = k + 1
		}
	}
	return hold
}

func isFold(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }
