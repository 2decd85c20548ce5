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
	// MaxNameBytes, MaxEntries, MaxEntryBytes and MaxWriteBytes are the
	// store package's bounds, the same for every driver.
	MaxNameBytes  = store.MaxNameBytes
	MaxEntries    = store.MaxEntries
	MaxEntryBytes = store.MaxEntryBytes
	MaxWriteBytes = store.MaxWriteBytes
	// MaxListLimit bounds RunList and LeaseClaim limits.
	MaxListLimit = store.MaxListLimit
	// MaxReadLimit bounds a JournalRead limit.
	MaxReadLimit = 10 * store.DefaultReadLimit
	// MaxLeaseTTL bounds a lease's time to live, so that a typo cannot park
	// a run for years.
	MaxLeaseTTL = 24 * time.Hour
	// defaultListLimit is what a RunList limit of 0 means.
	defaultListLimit = store.DefaultListLimit
)

func validateCreate(p *store.RunCreateParams) error {
	if err := store.CheckName("id", p.ID, true); err != nil {
		return err
	}
	if p.RootID == "" {
		p.RootID = p.ID
	}
	if err := errors.Join(
		store.CheckName("root id", p.RootID, true),
		store.CheckName("parent id", p.ParentID, false),
		store.CheckName("agent", p.Agent, false),
		store.CheckName("input hash", p.InputHash, false),
		store.CheckTenant("tenant", p.Tenant, false),
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
	return store.CheckEntries(p.Entries)
}

func validateAppend(p store.JournalAppendParams) error {
	if err := store.CheckName("run id", p.RunID, true); err != nil {
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
	return store.CheckEntries(p.Entries)
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
