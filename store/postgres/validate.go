package postgres

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

// Bounds on what one call may carry, the same as the SQLite driver's. They
// keep every request, and so every transaction and every answer, to a known
// size.
const (
	// MaxNameBytes bounds ids, agent names, owners, entry kinds and hashes.
	MaxNameBytes = 256
	// MaxEntries bounds the entries of one RunCreate or JournalAppend.
	MaxEntries = 1000
	// MaxEntryBytes bounds the JSON data of one entry.
	MaxEntryBytes = 16 << 20
	// MaxWriteBytes bounds the JSON data of one call in all.
	MaxWriteBytes = 64 << 20
	// MaxListLimit bounds RunList and LeaseClaim limits.
	MaxListLimit = 1000
	// MaxReadLimit bounds a JournalRead limit.
	MaxReadLimit = 10 * store.DefaultReadLimit
	// MaxLeaseTTL bounds a lease's time to live, so that a typo cannot park
	// a run for years.
	MaxLeaseTTL = 24 * time.Hour
	// defaultListLimit is what a RunList limit of 0 means.
	defaultListLimit = 100
)

func validateCreate(p *store.RunCreateParams) error {
	if err := checkName("id", p.ID, true); err != nil {
		return err
	}
	if p.RootID == "" {
		p.RootID = p.ID
	}
	if err := errors.Join(
		checkName("root id", p.RootID, true),
		checkName("parent id", p.ParentID, false),
		checkName("agent", p.Agent, false),
		checkName("input hash", p.InputHash, false),
	); err != nil {
		return err
	}
	switch {
	case p.Depth < 0:
		return fmt.Errorf("depth %d is negative", p.Depth)
	case p.ParentID == "" && p.Depth != 0:
		return fmt.Errorf("depth %d needs a parent id", p.Depth)
	case p.ParentID != "" && p.Depth == 0:
		return fmt.Errorf("a run with parent id %q needs a depth of at least 1", p.ParentID)
	case p.ParentID == p.ID:
		return errors.New("a run cannot be its own parent")
	case p.Version < 0:
		return fmt.Errorf("version %d is negative", p.Version)
	case len(p.Entries) == 0:
		return errors.New("entries: a run starts with at least one entry")
	}
	if p.Budget != nil {
		b := p.Budget
		if b.Tokens < 0 || b.MicroUSD < 0 || b.ModelCalls < 0 || b.ToolCalls < 0 || b.WallMS < 0 {
			return fmt.Errorf("budget: a limit is negative: %+v", *b)
		}
	}
	return checkEntries(p.Entries)
}

func checkName(field, v string, required bool) error {
	switch {
	case required && v == "":
		return fmt.Errorf("%s is empty", field)
	case len(v) > MaxNameBytes:
		return fmt.Errorf("%s is %d bytes long, more than %d", field, len(v), MaxNameBytes)
	}
	return nil
}

func checkEntries(es []store.EntryInput) error {
	if len(es) > MaxEntries {
		return fmt.Errorf("entries: %d entries in one call, more than %d", len(es), MaxEntries)
	}
	total := 0
	for i, e := range es {
		if err := checkName(fmt.Sprintf("entries[%d].kind", i), e.Kind, true); err != nil {
			return err
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

func validateAppend(p store.JournalAppendParams) error {
	if err := checkName("run id", p.RunID, true); err != nil {
		return err
	}
	switch {
	case p.After < 0:
		return fmt.Errorf("after %d is negative", p.After)
	case p.Status != "" && !p.Status.Valid():
		return fmt.Errorf("unknown status %q", p.Status)
	case len(p.Entries) == 0 && p.Status == "":
		return errors.New("nothing to append: no entries and no status")
	case !p.WakeAt.IsZero() && p.Status != hitchtype.StatusWaiting:
		return fmt.Errorf("wake at is set but the status is %q, not waiting", p.Status)
	case p.Outcome != nil && !p.Status.Terminal():
		return fmt.Errorf("outcome is set but the status %q is not terminal", p.Status)
	}
	if p.Outcome != nil {
		if len(p.Outcome) > MaxEntryBytes {
			return fmt.Errorf("outcome is %d bytes, more than %d", len(p.Outcome), MaxEntryBytes)
		}
		if !json.Valid(p.Outcome) {
			return errors.New("outcome is not valid JSON")
		}
	}
	return checkEntries(p.Entries)
}

func checkTTLAndLimit(ttl time.Duration, limit int) error {
	switch {
	case ttl < time.Microsecond || ttl > MaxLeaseTTL:
		return fmt.Errorf("ttl %v is outside 1µs..%v", ttl, MaxLeaseTTL)
	case limit < 0 || limit > MaxListLimit:
		return fmt.Errorf("limit %d is outside 0..%d", limit, MaxListLimit)
	}
	return nil
}
