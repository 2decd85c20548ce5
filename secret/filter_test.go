package secret

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// exact is r without its filter: every text goes to the exact search.
func exact(r *Redactor) *Redactor {
	e := *r
	e.filter = &filter{off: true}
	return &e
}

// TestFilterAgreesWithTheSearch: for texts made of secrets' forms (whole,
// cut short, folded across whitespace and JSON escapes, masked, encoded)
// among ordinary words, a Redactor answers exactly what its exact search
// answers, and the filter both passes and stops texts along the way.
func TestFilterAgreesWithTheSearch(t *testing.T) {
	t.Parallel()
	values := map[string]string{"OPENAI_API_KEY": canary, "GITHUB_TOKEN": "ghp_R2d2C3poBB8x4Lk0"}
	r, err := New(values)
	if err != nil {
		t.Fatal(err)
	}
	if r.filter.off {
		t.Fatal("the filter is off for values without whitespace or backslashes")
	}
	slow := exact(r)
	pieces := []string{"the", "run", `"kind":"model.reply"`, " ", "\n", `\n`, `\r\n`, "\t", `\\`, "sk-", "ghp", "...", "***", "…", "42Rt", "{", "}"}
	for _, v := range values {
		enc := base64.StdEncoding.EncodeToString([]byte(v))
		pieces = append(pieces, v, strings.ToUpper(v), strings.ToLower(v), enc, v[:4], v[:7], v[:3]+"*****"+v[len(v)-4:],
			v[:3]+"..."+v[len(v)-4:], v[len(v)-5:])
	}
	rng := rand.New(rand.NewPCG(1, 2))
	passed, stopped := 0, 0
	for i := range 20000 {
		var b strings.Builder
		for range 1 + rng.IntN(12) {
			p := pieces[rng.IntN(len(pieces))]
			if rng.IntN(4) == 0 { // fold it: whitespace or an escape between its bytes
				var f strings.Builder
				for j := 0; j < len(p); j++ {
					f.WriteByte(p[j])
					if rng.IntN(3) == 0 {
						f.WriteString([]string{" ", "\n", "\r\n", `\n`, `\t`, "\t"}[rng.IntN(6)])
					}
				}
				p = f.String()
			}
			b.WriteString(p)
		}
		s := b.String()
		if rng.IntN(2) == 0 { // as a journaled entry holds it
			j, _ := json.Marshal(map[string]string{"text": s})
			s = string(j)
		}
		if mayMatch(r.filter, s) {
			passed++
		} else {
			stopped++
		}
		if got, want := r.String(s), slow.String(s); got != want {
			t.Fatalf("text %d %q: redacted to %q, the exact search says %q", i, s, got, want)
		}
		if got, want := string(r.Bytes([]byte(s))), string(slow.Bytes([]byte(s))); got != want {
			t.Fatalf("bytes %d %q: redacted to %q, the exact search says %q", i, s, got, want)
		}
	}
	if passed < 1000 || stopped < 1000 {
		t.Errorf("the filter passed %d texts and stopped %d: want many of both", passed, stopped)
	}
}

// TestFilterOffForFoldedForms: a value holding a byte the folded search
// skips (a backslash, whitespace) turns the filter off, so every text is
// searched exactly.
func TestFilterOffForFoldedForms(t *testing.T) {
	t.Parallel()
	for _, v := range []string{`pa"ss\word-123`, "two words here"} {
		r, err := New(map[string]string{"V": v})
		if err != nil {
			t.Fatal(err)
		}
		if !r.filter.off {
			t.Errorf("%q: the filter is on", v)
		}
	}
}

// TestCleanTextCostsNoAllocation: an entry that holds no secret is
// answered as it came, without a copy.
func TestCleanTextCostsNoAllocation(t *testing.T) {
	r := benchRedactor(t, 10)
	entry := cleanEntry()
	if n := testing.AllocsPerRun(100, func() { r.Bytes(entry) }); n != 0 {
		t.Errorf("Bytes of a clean entry: %.0f allocations, want 0", n)
	}
	if out := r.Bytes(entry); &out[0] != &entry[0] {
		t.Error("Bytes of a clean entry returned a copy")
	}
}

func benchRedactor(tb testing.TB, n int) *Redactor {
	values := map[string]string{}
	for i := range n {
		values[fmt.Sprintf("KEY_%d", i)] = fmt.Sprintf("sk-proj-%04dQz9xWc7Rt2Lm5Np8Vb", i)
	}
	r, err := New(values)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// cleanEntry is a model reply as a run journals it: about 1 KB of JSON
// with text, line breaks and a tool call.
func cleanEntry() []byte {
	text := strings.Repeat("The numbers add up to 42; next, read the file and check each line.\n", 12)
	b, _ := json.Marshal(map[string]any{"text": text, "calls": []map[string]any{{"id": "t1c1", "name": "read", "args": map[string]string{"path": "notes/today.md"}}},
		"usage": map[string]int{"input": 812, "output": 64}})
	return b
}

func BenchmarkRedactCleanEntry(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		r := benchRedactor(b, n)
		entry := cleanEntry()
		for _, c := range []struct {
			name string
			r    *Redactor
		}{{"filtered", r}, {"exact", exact(r)}} {
			b.Run(fmt.Sprintf("secrets=%d/%s", n, c.name), func(b *testing.B) {
				b.SetBytes(int64(len(entry)))
				b.ReportAllocs()
				for b.Loop() {
					c.r.Bytes(entry)
				}
			})
		}
	}
}
