// Package canary finds secret values where they must not be, for the
// secret canary tests: in a store file read raw, an API answer, a stream, a
// page of the console, a command's output.
//
// A Finder reports a value in every spelling the redactor knows (verbatim,
// upper or lower case, folded across lines, JSON-escaped, base64 at any
// alignment, masked the way providers print keys) and in a few it does not
// (reversed, its middle alone), which can only be found where something
// read the value that should not have.
package canary

import (
	"encoding/base64"
	"fmt"
	"sort"
	"strings"

	"github.com/hitch-dev/hitch/secret"
)

// Finder looks for the spellings of a set of secret values.
type Finder struct {
	red   *secret.Redactor
	forms []string // explicit spellings, for a message that names the one found
}

// New returns a Finder for the named values (each at least secret.MinLen
// bytes).
func New(values map[string]string) (*Finder, error) {
	red, err := secret.New(values)
	if err != nil {
		return nil, err
	}
	f := &Finder{red: red}
	names := make([]string, 0, len(values))
	for n := range values {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		v := values[n]
		f.forms = append(f.forms, v, strings.ToUpper(v), strings.ToLower(v),
			strings.TrimRight(base64.StdEncoding.EncodeToString([]byte(v)), "="), reverse(v))
		if len(v) >= 2*secret.MinLen {
			f.forms = append(f.forms, v[4:len(v)-4])
		}
	}
	return f, nil
}

// Redactor is the redactor of the Finder's values, to hand the runtime
// under test.
func (f *Finder) Redactor() *secret.Redactor { return f.red }

// Find reports the first spelling of a value found in b, with a little of
// the text around it, or "" when there is none. Line breaks (raw, as JSON
// escapes, or as the CLI prints them) are taken out first, so a folded
// value is found too.
func (f *Finder) Find(b []byte) string {
	s := string(b)
	dense := strings.NewReplacer("⏎", "", `\n`, "", `\r`, "", `\t`, "").Replace(strings.Join(strings.Fields(s), ""))
	for _, form := range f.forms {
		for _, text := range []string{s, dense} {
			if i := strings.Index(text, form); i >= 0 {
				return fmt.Sprintf("%q in …%q…", form, around(text, i, len(form)))
			}
		}
	}
	// What the redactor would change is a spelling it knows.
	if red := f.red.String(s); red != s {
		i := 0
		for i < len(s) && i < len(red) && s[i] == red[i] {
			i++
		}
		return fmt.Sprintf("a spelling the redactor knows, at byte %d: …%q…", i, around(s, i, 48))
	}
	return ""
}

func around(s string, i, n int) string {
	from, to := max(0, i-24), min(len(s), i+n+24)
	return s[from:to]
}

func reverse(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}
