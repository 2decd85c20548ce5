package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// A tool call's arguments are shown as the tool receives them: each
// argument of a JSON object by name, a string as its text (a command's
// ">>", "<", "&" and quotes as typed, never JSON-escaped), anything else as
// JSON; a long value is folded under its first line.

// Bounds of an argument shown unfolded.
const (
	argFoldBytes = 240
	argFoldLines = 4
	argHeadRunes = 100
)

// argField is one argument of a call.
type argField struct {
	Name  string // empty when the arguments are not a JSON object
	Value string
	Head  string // the folded value's first line; empty when shown whole
	Size  string // the folded value's size in words
}

// argFields lays out a call's arguments (JSON text).
func argFields(raw string) []argField {
	raw = strings.TrimSpace(raw)
	dec := json.NewDecoder(strings.NewReader(raw))
	if tok, err := dec.Token(); err == nil && tok == json.Delim('{') {
		var out []argField
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				break
			}
			var v json.RawMessage
			if err := dec.Decode(&v); err != nil {
				break
			}
			out = append(out, fold(argField{Name: fmt.Sprint(k), Value: argText(v)}))
		}
		if _, err := dec.Token(); err == nil && !dec.More() {
			return out
		}
	}
	if raw == "" || raw == "{}" {
		return nil
	}
	return []argField{fold(argField{Value: cut(prettyJSON(raw))})}
}

// argText is a value as the tool reads it: a string's text, else JSON.
func argText(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return cut(s)
	}
	return cut(prettyJSON(string(v)))
}

// fold folds a long value under its first line.
func fold(f argField) argField {
	lines := strings.Count(f.Value, "\n") + 1
	if len(f.Value) <= argFoldBytes && lines <= argFoldLines {
		return f
	}
	head, _, _ := strings.Cut(f.Value, "\n")
	if utf8.RuneCountInString(head) > argHeadRunes {
		head = string([]rune(head)[:argHeadRunes])
	}
	f.Head = head + " …"
	f.Size = fmt.Sprintf("%d lines, %d bytes", lines, len(f.Value))
	return f
}

// prettyJSON indents JSON text keeping its keys in order and shows '<',
// '>' and '&' as themselves, or returns the text as it is.
func prettyJSON(s string) string {
	var buf bytes.Buffer
	if json.Indent(&buf, []byte(s), "", "  ") != nil {
		return s
	}
	return unescapeHTML(buf.String())
}

// unescapeHTML undoes the HTML-safe escapes (\u003c, \u003e, \u0026) that
// encoding/json writes in strings, leaving valid JSON that reads as typed.
func unescapeHTML(s string) string {
	if !strings.Contains(s, `\u00`) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		if s[i+1] == 'u' && i+6 <= len(s) {
			switch strings.ToLower(s[i+2 : i+6]) {
			case "003c":
				b.WriteByte('<')
				i += 5
				continue
			case "003e":
				b.WriteByte('>')
				i += 5
				continue
			case "0026":
				b.WriteByte('&')
				i += 5
				continue
			}
		}
		b.WriteByte(c)
		b.WriteByte(s[i+1])
		i++
	}
	return b.String()
}

// span says a duration in the units a person reads at a glance: "6 days
// 23 h", "3 h 12 min", "4 min 10 s", "800 ms". The console's script writes
// the same form.
func span(d time.Duration) string {
	if d < 0 {
		d = -d
	}
	switch {
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%d min %d s", int(d.Minutes()), int(d.Seconds())%60)
	case d < 24*time.Hour:
		return fmt.Sprintf("%d h %d min", int(d.Hours()), int(d.Minutes())%60)
	}
	days := int(d.Hours()) / 24
	unit := "days"
	if days == 1 {
		unit = "day"
	}
	return fmt.Sprintf("%d %s %d h", days, unit, int(d.Hours())%24)
}

// relative says when t is from now: "in 6 days 23 h" or "3 min 2 s ago".
func relative(t time.Time) string {
	d := time.Until(t)
	if d >= 0 {
		return "in " + span(d)
	}
	return span(d) + " ago"
}
