package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hitch-dev/hitch/hitchtype"
)

// Bounds on what one call to any driver may carry. They keep every request,
// and so every transaction and every answer, to a known size; drivers check
// them with CheckName and CheckEntries before they write.
const (
	// MaxNameBytes bounds ids, agent names, owners, entry kinds and hashes.
	MaxNameBytes = hitchtype.MaxNameBytes
	// MaxEntries bounds the entries of one RunCreate or JournalAppend.
	MaxEntries = 1000
	// MaxEntryBytes bounds the JSON data of one entry.
	MaxEntryBytes = 16 << 20
	// MaxWriteBytes bounds the JSON data of one call in all.
	MaxWriteBytes = 64 << 20
	// MaxTitleRunes bounds a run's title: the head of its input kept to
	// find it by.
	MaxTitleRunes = 200
	// MaxTextRunes bounds RunListParams.Text.
	MaxTextRunes = 200
	// MaxFilteredCount bounds each status's count of RunCountsFor with
	// filters other than tenant and statuses, so that a count reads a
	// bounded number of runs however many match.
	MaxFilteredCount = 10000
	// MaxReadKinds bounds JournalReadParams.Kinds.
	MaxReadKinds = 16
)

// Title is the title a run with this input keeps: its first MaxTitleRunes
// characters (invalid UTF-8 replaced).
func Title(input string) string {
	input = strings.ToValidUTF8(input, "\uFFFD")
	n := 0
	for i := range input {
		if n == MaxTitleRunes {
			return input[:i]
		}
		n++
	}
	return input
}

// LikePattern is a LIKE pattern, with a backslash as its escape character, that
// matches any text containing s.
func LikePattern(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(s) + "%"
}

// CheckKinds refuses more than MaxReadKinds kinds, or a bad kind.
func CheckKinds(kinds []string) error {
	if len(kinds) > MaxReadKinds {
		return fmt.Errorf("kinds: %d kinds, more than %d", len(kinds), MaxReadKinds)
	}
	for i, k := range kinds {
		if err := CheckName(fmt.Sprintf("kinds[%d]", i), k, true); err != nil {
			return err
		}
	}
	return nil
}

// CheckName refuses an empty required name and one longer than
// MaxNameBytes, naming field.
func CheckName(field, v string, required bool) error {
	switch {
	case required && v == "":
		return fmt.Errorf("%s is empty", field)
	case len(v) > MaxNameBytes:
		return fmt.Errorf("%s is %d bytes long, more than %d", field, len(v), MaxNameBytes)
	}
	return nil
}

// CheckEntries refuses entries past the bounds above, a missing kind or
// data that is not JSON, naming the entry.
func CheckEntries(es []EntryInput) error {
	if len(es) > MaxEntries {
		return fmt.Errorf("entries: %d entries in one call, more than %d", len(es), MaxEntries)
	}
	total := 0
	for i, e := range es {
		if e.Kind == "" || len(e.Kind) > MaxNameBytes { // named only when refused: this runs for every entry
			return CheckName(fmt.Sprintf("entries[%d].kind", i), e.Kind, true)
		}
		if len(e.Data) > MaxEntryBytes {
			return fmt.Errorf("entries[%d].data is %d bytes, more than %d", i, len(e.Data), MaxEntryBytes)
		}
		if !json.Valid(e.Data) {
			return fmt.Errorf("entries[%d].data is not valid JSON", i)
		}
		total += len(e.Data)
	}
	if total > MaxWriteBytes {
		return fmt.Errorf("entries: %d bytes of data in one call, more than %d", total, MaxWriteBytes)
	}
	return nil
}

// CheckTenant refuses a tenant that hitchtype.CheckTenant refuses, naming
// field. An empty tenant passes when it may stand for a default or for
// "all"; required refuses it.
func CheckTenant(field, v string, required bool) error {
	if v == "" && !required {
		return nil
	}
	if err := hitchtype.CheckTenant(v); err != nil {
		return fmt.Errorf("%s: %w", field, err)
	}
	return nil
}

// CheckList checks a RunList's parameters and returns its limit: 0 means
// DefaultListLimit, and anything outside 0..MaxListLimit is refused. It
// also returns the cursor's position, zero when p.After is empty.
func CheckList(p RunListParams) (limit int, after Cursor, err error) {
	limit = p.Limit
	switch {
	case limit == 0:
		limit = DefaultListLimit
	case limit < 0 || limit > MaxListLimit:
		return 0, Cursor{}, fmt.Errorf("limit %d is outside 0..%d", p.Limit, MaxListLimit)
	}
	for _, st := range p.Statuses {
		if !st.Valid() {
			return 0, Cursor{}, fmt.Errorf("statuses: unknown status %q", st)
		}
	}
	if err := errors.Join(
		CheckTenant("tenant", p.Tenant, false),
		CheckName("agent", p.Agent, false),
		CheckName("parent id", p.ParentID, false),
		CheckName("root id", p.RootID, false),
	); err != nil {
		return 0, Cursor{}, err
	}
	if len(p.Reasons) > MaxReasons {
		return 0, Cursor{}, fmt.Errorf("reasons: %d, more than %d", len(p.Reasons), MaxReasons)
	}
	for i, r := range p.Reasons {
		if err := CheckName(fmt.Sprintf("reasons[%d]", i), r, false); err != nil {
			return 0, Cursor{}, err
		}
	}
	if n := utf8.RuneCountInString(p.Text); n > MaxTextRunes || !utf8.ValidString(p.Text) {
		return 0, Cursor{}, fmt.Errorf("text: %d characters of valid UTF-8 at most, got %d bytes", MaxTextRunes, len(p.Text))
	}
	if !p.CreatedAfter.IsZero() && !p.CreatedBefore.IsZero() && !p.CreatedAfter.Before(p.CreatedBefore) {
		return 0, Cursor{}, fmt.Errorf("created after %s is not before created before %s",
			p.CreatedAfter.UTC().Format(time.RFC3339Nano), p.CreatedBefore.UTC().Format(time.RFC3339Nano))
	}
	if p.After != "" {
		if after, err = ParseRunCursor(p.After); err != nil {
			return 0, Cursor{}, fmt.Errorf("after: %w", err)
		}
	}
	return limit, after, nil
}

// ResolveTenant is the tenant a new run gets: the root's when root is
// known (a run that is not a root, whose root exists), else given, else
// hitchtype.DefaultTenant. A given tenant other than the root's is
// ErrTenantMismatch.
func ResolveTenant(given, root string) (string, error) {
	if err := CheckTenant("tenant", given, false); err != nil {
		return "", err
	}
	switch {
	case root != "" && given != "" && given != root:
		return "", fmt.Errorf("%w: tenant %q, but its root's is %q", ErrTenantMismatch, given, root)
	case root != "":
		return root, nil
	case given != "":
		return given, nil
	}
	return hitchtype.DefaultTenant, nil
}

// CheckCancelNote refuses a cancel request whose By or Reason is longer
// than MaxCancelNoteBytes, naming the field.
func CheckCancelNote(p RunRequestCancelParams) error {
	for _, f := range []struct{ name, v string }{{"by", p.By}, {"reason", p.Reason}} {
		if len(f.v) > MaxCancelNoteBytes {
			return fmt.Errorf("%s is %d bytes long, more than %d", f.name, len(f.v), MaxCancelNoteBytes)
		}
	}
	return nil
}
