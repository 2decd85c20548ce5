package store

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DefaultListLimit is what a RunList limit of 0 means; MaxListLimit bounds
// RunList and LeaseClaim limits.
const (
	DefaultListLimit = 100
	MaxListLimit     = 1000
)

// ErrBadCursor refuses a RunListParams.After that RunCursor did not make.
var ErrBadCursor = errors.New("bad cursor")

// Cursor is a position in RunList's order (CreatedAt, then ID,
// descending): the page after it starts with the next older run.
type Cursor struct {
	CreatedAt time.Time
	ID        string
}

// RunCursor returns the cursor after r, to pass as RunListParams.After for
// the next page. It is opaque to callers and the same for every driver.
func RunCursor(r Run) string {
	raw := strconv.FormatInt(r.CreatedAt.UnixMicro(), 10) + "." + r.ID
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// ParseRunCursor reads a cursor made by RunCursor.
func ParseRunCursor(s string) (Cursor, error) {
	bad := func(why string) (Cursor, error) {
		return Cursor{}, fmt.Errorf("%w: %.60q is not a run list cursor (%s)", ErrBadCursor, s, why)
	}
	if len(s) > 2*MaxNameBytes {
		return bad("too long")
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return bad("not base64url")
	}
	us, id, ok := strings.Cut(string(raw), ".")
	if !ok || id == "" {
		return bad("no run id")
	}
	n, err := strconv.ParseInt(us, 10, 64)
	if err != nil {
		return bad("no time")
	}
	if len(id) > MaxNameBytes {
		return bad("run id too long")
	}
	return Cursor{CreatedAt: time.UnixMicro(n).UTC(), ID: id}, nil
}
