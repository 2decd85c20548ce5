package hitchtype

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// MaxRunIDBytes bounds a run id, and MaxSessionIDBytes a session id.
const (
	MaxRunIDBytes     = 128
	MaxSessionIDBytes = 128
)

// Errors of ids outside their character set or length.
var (
	// ErrBadRunID: a run id outside the documented character set or length.
	ErrBadRunID = errors.New("bad run id")
	// ErrBadSessionID: a session id outside the allowed characters or
	// length.
	ErrBadSessionID = errors.New("bad session id")
)

// CheckRunID reports whether id can name a run: 1 to MaxRunIDBytes bytes of
// ASCII letters, digits and the marks . _ : -, and not "." or ".." (ids
// reach terminals, URL paths and web pages, and must pass through each
// unchanged, so nothing else is allowed).
func CheckRunID(id string) error { return checkID(ErrBadRunID, id, MaxRunIDBytes) }

// CheckSessionID reports whether id can name a session: the characters of
// a run id, 1 to MaxSessionIDBytes bytes.
func CheckSessionID(id string) error { return checkID(ErrBadSessionID, id, MaxSessionIDBytes) }

func checkID(bad error, id string, most int) error {
	if id == "" || len(id) > most {
		return fmt.Errorf("%w: %.40q is %d bytes long: want 1 to %d", bad, id, len(id), most)
	}
	if id == "." || id == ".." {
		return fmt.Errorf("%w: %q is a path's dot segment, which a URL cannot carry", bad, id)
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == ':', c == '-':
		default:
			return fmt.Errorf("%w: %.40q has %q at byte %d: want letters, digits and . _ : -", bad, id, c, i)
		}
	}
	return nil
}

// ConfigError is one problem of a definition (an agent's Spec, a trigger
// binding), naming its field.
type ConfigError struct {
	Field   string // the field, such as "Limits.ToolConcurrency"
	Problem string // what is wrong and what is allowed
}

func (e ConfigError) Error() string { return e.Field + ": " + e.Problem }

// ConfigErrors is every problem found, in field order.
type ConfigErrors []ConfigError

func (es ConfigErrors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "; ")
}

// NewID returns prefix followed by n random bytes, in hex.
func NewID(prefix string, n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}
