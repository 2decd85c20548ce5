package store

import (
	"encoding/json"
	"fmt"

	"github.com/hitch-dev/hitch/hitchtype"
)

// A fork's source is kept with its run as the JSON of its ForkedFrom, in
// one text column: empty for every run that is not a fork.

// CheckForked checks a fork's source before it is kept: a run id and a
// position of its journal.
func CheckForked(f *hitchtype.ForkedFrom) error {
	if f == nil {
		return nil
	}
	if f.Pos < 1 {
		return fmt.Errorf("forked from position %d: want 1 or more", f.Pos)
	}
	return CheckName("forked from run", f.Run, true)
}

// ForkedText is the column a driver keeps f in: "" for nil.
func ForkedText(f *hitchtype.ForkedFrom) string {
	if f == nil {
		return ""
	}
	b, _ := json.Marshal(f) // two strings, an int and two bools: cannot fail
	return string(b)
}

// ParseForked reads the column ForkedText wrote; "" is nil.
func ParseForked(runID, s string) (*hitchtype.ForkedFrom, error) {
	if s == "" {
		return nil, nil
	}
	var f hitchtype.ForkedFrom
	if err := json.Unmarshal([]byte(s), &f); err != nil {
		return nil, fmt.Errorf("decode forked_from of %s: %w", runID, err)
	}
	if f.Run == "" {
		return nil, fmt.Errorf("decode forked_from of %s: it names no run", runID)
	}
	return &f, nil
}
