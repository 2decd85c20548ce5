package ident

import (
	"regexp"
	"strings"
	"testing"
)

// TestRules checks each rule against the regular expression it stands for,
// on names at and around each bound and with bytes each rule refuses.
func TestRules(t *testing.T) {
	t.Parallel()
	rules := []struct {
		name string
		fn   func(string) bool
		re   *regexp.Regexp
	}{
		{"Name", Name, regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)},
		{"Secret", Secret, regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)},
		{"Env", Env, regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)},
		{"Schema", Schema, regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)},
	}
	inputs := []string{"", "a", "A", "0", "_", ".", "-", "a.b", "a-b", "a_b", "_a", ".a", "-a", "9a",
		"abc\n", "\nabc", "a b", "é", "aé", "a\x00", "HOME", "PATH_2", "hitch_scratch", "Hitch", "a/b", "a:b"}
	for _, n := range []int{62, 63, 64, 65, 127, 128, 129} {
		inputs = append(inputs, strings.Repeat("a", n), "_"+strings.Repeat("b", n-1), strings.Repeat("x", n-1)+".")
	}
	for _, r := range rules {
		for _, in := range inputs {
			if got, want := r.fn(in), r.re.MatchString(in); got != want {
				t.Errorf("%s(%q) = %v, want %v", r.name, in, got, want)
			}
		}
	}
}

// FuzzRules compares the rules with their regular expressions on any input.
func FuzzRules(f *testing.F) {
	for _, s := range []string{"agent-1", "_x", "a\n", strings.Repeat("z", 64)} {
		f.Add(s)
	}
	name := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)
	secret := regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
	env := regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
	schema := regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)
	f.Fuzz(func(t *testing.T, s string) {
		if Name(s) != name.MatchString(s) || Secret(s) != secret.MatchString(s) ||
			Env(s) != env.MatchString(s) || Schema(s) != schema.MatchString(s) {
			t.Errorf("%q: the rules disagree with their expressions", s)
		}
	})
}
