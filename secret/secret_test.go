package secret

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"io/fs"
	"strings"
	"testing"
)

const canary = "sk-live-7Qz9xWcanary42Rt"

func newRedactor(t *testing.T) *Redactor {
	t.Helper()
	r, err := New(map[string]string{"OPENAI_API_KEY": canary, "DB_PASSWORD": `pa"ss\word-123`})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRedactForms(t *testing.T) {
	t.Parallel()
	r := newRedactor(t)
	fold := func(s string, w int) string {
		var b strings.Builder
		for i := 0; i < len(s); i += w {
			b.WriteString(s[i:min(i+w, len(s))])
			b.WriteString("\n")
		}
		return b.String()
	}
	cases := []struct{ name, in string }{
		{"verbatim", "key=" + canary + " done"},
		{"env line", "OPENAI_API_KEY=" + canary + "\nPATH=/usr/bin"},
		{"upper", "KEY: " + strings.ToUpper(canary)},
		{"lower", "key: " + strings.ToLower(canary)},
		{"folded by 5", fold(canary, 5)},
		{"folded by 1 with CRLF", strings.Join(strings.Split(canary, ""), "\r\n")},
		{"base64 alone", base64.StdEncoding.EncodeToString([]byte(canary))},
		{"base64 url", base64.URLEncoding.EncodeToString([]byte(canary))},
		{"base64 offset 1", base64.StdEncoding.EncodeToString([]byte("x" + canary + "tail"))},
		{"base64 offset 2", base64.StdEncoding.EncodeToString([]byte("xy" + canary + "tail!"))},
		{"base64 offset 3", base64.StdEncoding.EncodeToString([]byte("xyz" + canary))},
		{"base64 folded", fold(base64.StdEncoding.EncodeToString([]byte("export K="+canary+"\n")), 8)},
		{"masked stars", "Incorrect API key provided: sk-l*************42Rt."},
		{"masked dots", "invalid key sk-live-...42Rt"},
		{"masked ellipsis", "key sk-…42Rt refused"},
		{"json escaped", mustJSON(t, map[string]string{"out": `pa"ss\word-123`})},
		{"json folded", mustJSON(t, map[string]string{"out": fold(canary, 5)})},
		{"json folded CRLF", mustJSON(t, map[string]string{"out": strings.Join(strings.Split(canary, ""), "\r\n")})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := r.String(c.in)
			for _, leak := range leaks(c.in) {
				if strings.Contains(out, leak) {
					t.Errorf("%q leaks %q in %q", c.in, leak, out)
				}
			}
			if !strings.Contains(out, "[secret:") {
				t.Errorf("%q: no marker in %q", c.in, out)
			}
		})
	}
}

// leaks lists what must not survive of the canary in an output: the
// value's distinctive middle, in each spelling the input used.
func leaks(in string) []string {
	mid := canary[6:18]
	out := []string{mid, strings.ToUpper(mid), strings.ToLower(mid), "7Qz9", "canary42", "CANARY42", `pa\"ss`, `word-123`}
	if strings.Contains(in, "\n") {
		out = out[:0] // folded inputs: checked by the dense form below
	}
	return out
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestFoldedLeavesNoPiece(t *testing.T) {
	t.Parallel()
	r := newRedactor(t)
	in := "before\n" + canary[:7] + "\n" + canary[7:15] + "\n" + canary[15:] + "\nafter"
	out := r.String(in)
	dense := strings.Join(strings.Fields(out), "")
	if strings.Contains(dense, canary[3:]) || strings.Contains(out, canary[7:15]) {
		t.Fatalf("folded value survived: %q", out)
	}
	if !strings.HasPrefix(out, "before\n") || !strings.HasSuffix(out, "\nafter") {
		t.Fatalf("text around the value changed: %q", out)
	}
}

func TestJSONStaysValid(t *testing.T) {
	t.Parallel()
	r := newRedactor(t)
	doc := mustJSON(t, map[string]any{"stdout": "KEY=" + canary + "\n", "n": 3, "pw": `pa"ss\word-123`})
	out := r.Bytes([]byte(doc))
	if !json.Valid(out) {
		t.Fatalf("redacted JSON is invalid: %s", out)
	}
	if strings.Contains(string(out), canary) || strings.Contains(string(out), "word-123") {
		t.Fatalf("leak: %s", out)
	}
}

func TestUntouchedTextIsShared(t *testing.T) {
	t.Parallel()
	r := newRedactor(t)
	in := []byte(`{"text":"nothing secret here, just words"}`)
	if out := r.Bytes(in); &out[0] != &in[0] {
		t.Fatal("a clean text was copied")
	}
	var nilR *Redactor
	if nilR.String("x "+canary) != "x "+canary || !nilR.Empty() {
		t.Fatal("a nil redactor changed a text")
	}
}

func TestErrorKeepsIdentity(t *testing.T) {
	t.Parallel()
	r := newRedactor(t)
	base := &fs.PathError{Op: "open", Path: "/tmp/" + canary, Err: fs.ErrNotExist}
	err := r.Error(base)
	if strings.Contains(err.Error(), canary) {
		t.Fatalf("error text leaks: %v", err)
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("errors.Is lost the cause")
	}
	if r.Error(nil) != nil {
		t.Fatal("nil error changed")
	}
}

func TestNewRefusesEveryProblemAtOnce(t *testing.T) {
	t.Parallel()
	_, err := New(map[string]string{"short": "abc", "bad name!": canary, "ok": canary})
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"secret short: value is 3 bytes", `secret "bad name!": name`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

func FuzzRedact(f *testing.F) {
	f.Add("plain", 0, 0)
	f.Add(canary, 3, 2)
	f.Fuzz(func(t *testing.T, text string, at, fold int) {
		r, err := New(map[string]string{"K": canary})
		if err != nil {
			t.Fatal(err)
		}
		if at < 0 {
			at = -at
		}
		at %= len(text) + 1
		v := canary
		if fold > 0 {
			w := fold%7 + 1
			var b strings.Builder
			for i := 0; i < len(v); i += w {
				b.WriteString(v[i:min(i+w, len(v))])
				b.WriteByte('\n')
			}
			v = b.String()
		}
		in := text[:at] + v + text[at:]
		out := r.String(in)
		if strings.Contains(strings.Join(strings.Fields(out), ""), canary) {
			t.Fatalf("leak in %q", out)
		}
	})
}

func TestStreamHoldsASplitValue(t *testing.T) {
	t.Parallel()
	r := newRedactor(t)
	text := "the key is " + canary + " and " + strings.ToUpper(canary) + ", done"
	for _, size := range []int{1, 2, 3, 5, 7, 11, len(text)} {
		s := r.NewStream()
		var out strings.Builder
		for i := 0; i < len(text); i += size {
			out.WriteString(s.Write(text[i:min(i+size, len(text))]))
		}
		out.WriteString(s.Flush())
		got := out.String()
		if want := r.String(text); got != want {
			t.Errorf("pieces of %d: got %q, want %q", size, got, want)
		}
	}
	var nilR *Redactor
	if s := nilR.NewStream(); s.Write("a"+canary) != "a"+canary || s.Flush() != "" {
		t.Fatal("a nil redactor's stream changed a text")
	}
}

// TestStreamRedactsEveryForm streams texts holding each form a value can
// take (upper case, masked as providers print keys, base64 alone, inside a
// longer encoding and wrapped across a line as base64(1) wraps it, folded across lines)
// in pieces of every small size, and checks that what comes out is what
// redacting the whole text gives, with nothing of the value left.
func TestStreamRedactsEveryForm(t *testing.T) {
	t.Parallel()
	r := newRedactor(t)
	wrap := func(s string, w int) string {
		var b strings.Builder
		for i := 0; i < len(s); i += w {
			b.WriteString(s[i:min(i+w, len(s))])
			b.WriteString("\n")
		}
		return b.String()
	}
	long := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("pad ", 7) + "export OPENAI_API_KEY=" + canary + "\n"))
	texts := map[string]string{
		"upper":           "the key is " + strings.ToUpper(canary) + ", done",
		"masked stars":    "Incorrect API key provided: sk-l*************42Rt. Check it.",
		"masked dots":     "invalid key sk-live-...42Rt sent",
		"masked ellipsis": "key sk-…42Rt refused",
		"base64":          "b64: " + base64.StdEncoding.EncodeToString([]byte(canary)) + " end",
		"base64 url":      "b64: " + base64.URLEncoding.EncodeToString([]byte("x"+canary+"tail")) + " end",
		"base64 wrapped":  "$ base64 env.txt\n" + wrap(long, 76) + "$ ",
		"folded":          "the key:\n" + wrap(canary, 5) + "that was it",
		"folded CRLF":     "k=" + strings.Join(strings.Split(canary, ""), "\r\n") + " ok",
	}
	for name, text := range texts {
		want := r.String(text)
		for _, leak := range append(leaks(text), "sk-l", "42Rt") {
			if strings.Contains(strings.Join(strings.Fields(want), ""), leak) {
				t.Fatalf("%s: the whole text keeps %q: %q", name, leak, want)
			}
		}
		for size := 1; size <= 13; size++ {
			s := r.NewStream()
			var out strings.Builder
			for i := 0; i < len(text); i += size {
				out.WriteString(s.Write(text[i:min(i+size, len(text))]))
			}
			out.WriteString(s.Flush())
			if got := out.String(); got != want {
				t.Errorf("%s in pieces of %d:\n got %q\nwant %q", name, size, got, want)
			}
		}
	}
}
