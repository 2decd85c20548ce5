// Package ident checks the names hitch accepts (agents, tenants, routes,
// hooks, secrets, environment variables, scratch schemas) by walking their
// bytes. A regular expression would do, but one with a counted repetition
// compiles into a state per count, and a package-level one is compiled by
// every process at start, whatever the command: about a millisecond and
// 6,000 allocations of each hitch process went to these few rules.
package ident

// Name reports whether s is 1–64 letters, digits, '.', '_' or '-',
// starting with a letter or digit: the rule for agents, tenants, routes and
// hooks.
func Name(s string) bool { return valid(s, 64, alnum, nameByte) }

// Secret reports whether s is 1–64 letters, digits, '.', '_' or '-': a
// secret's name.
func Secret(s string) bool { return valid(s, 64, nameByte, nameByte) }

// Env reports whether s is an environment variable's name: a letter or '_',
// then up to 127 letters, digits or '_'.
func Env(s string) bool {
	return valid(s, 128, func(c byte) bool { return letter(c) || c == '_' }, func(c byte) bool { return alnum(c) || c == '_' })
}

// Schema reports whether s is 1–63 of a-z, 0-9 and '_', not starting with a
// digit: a scratch schema's name, safe in SQL unquoted.
func Schema(s string) bool {
	lower := func(c byte) bool { return 'a' <= c && c <= 'z' || c == '_' }
	return valid(s, 63, lower, func(c byte) bool { return lower(c) || '0' <= c && c <= '9' })
}

// valid reports whether s has 1 to max bytes, the first accepted by first
// and the others by rest.
func valid(s string, max int, first, rest func(byte) bool) bool {
	if len(s) == 0 || len(s) > max || !first(s[0]) {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !rest(s[i]) {
			return false
		}
	}
	return true
}

func letter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

func alnum(c byte) bool { return letter(c) || '0' <= c && c <= '9' }

func nameByte(c byte) bool { return alnum(c) || c == '.' || c == '_' || c == '-' }
