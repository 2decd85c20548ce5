package store

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
)

// The checks and decisions below are made once for every driver: a driver
// calls them before (or, for Refused and CheckWhole, after) its statements,
// so the drivers differ only in their SQL.

// Bounds of leases and reads, the same for every driver.
const (
	// MaxLeaseTTL bounds a lease's time to live, so that a typo cannot
	// park a run for years.
	MaxLeaseTTL = 24 * time.Hour
	// MaxReadLimit bounds a JournalRead or SessionRead limit.
	MaxReadLimit = 10 * DefaultReadLimit
)

// CheckCreate checks a RunCreate's parameters, naming the field at fault,
// and fills a root's RootID with its ID.
func CheckCreate(p *RunCreateParams) error {
	if err := CheckName("id", p.ID, true); err != nil {
		return err
	}
	if p.RootID == "" {
		p.RootID = p.ID
	}
	if err := errors.Join(
		CheckName("root id", p.RootID, true),
		CheckName("parent id", p.ParentID, false),
		CheckName("agent", p.Agent, false),
		CheckName("input hash", p.InputHash, false),
		CheckTenant("tenant", p.Tenant, false),
		CheckForked(p.ForkedFrom),
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
	if l := p.Lease; l != nil {
		if err := CheckName("lease owner", l.Owner, true); err != nil {
			return err
		}
		if err := CheckLease(l.TTL, 1); err != nil {
			return err
		}
	}
	if b := p.Budget; b != nil && (b.Tokens < 0 || b.MicroUSD < 0 || b.ModelCalls < 0 || b.ToolCalls < 0 || b.WallMS < 0) {
		return fmt.Errorf("budget: a limit is negative: %+v", *b)
	}
	return CheckEntries(p.Entries)
}

// CreateRun is a driver's RunCreate statements, once CheckCreate has
// passed p: they insert the run, or read the one that holds p.ID, with
// created false.
type CreateRun func(ctx context.Context, p RunCreateParams) (run Run, created bool, err error)

// Create makes a RunCreate (see Store).
func (create CreateRun) Create(ctx context.Context, p RunCreateParams) (Run, bool, error) {
	if err := CheckCreate(&p); err != nil {
		return Run{}, false, fmt.Errorf("run create: %w", err)
	}
	run, created, err := create(ctx, p)
	if err != nil {
		return Run{}, false, fmt.Errorf("run create %q: %w", p.ID, err)
	}
	return run, created, nil
}

// CheckAppend checks a JournalAppend's parameters. An append must carry
// entries or a status: a charge alone would count work no journal holds.
func CheckAppend(p JournalAppendParams) error {
	if err := CheckName("run id", p.RunID, true); err != nil {
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
	if p.Charge != nil {
		if err := CheckName("charge root id", p.Charge.RootID, false); err != nil {
			return err
		}
	}
	return CheckEntries(p.Entries)
}

// Refused says why a run as it stands does not take an append of p — it
// ended (ErrEnded), its lease is not p's (ErrFenced), or its journal is
// not p.After long (ErrConflict) — or nil when it does.
func Refused(cur Run, p JournalAppendParams) error {
	switch {
	case cur.Status.Terminal():
		return fmt.Errorf("%w (status %s)", ErrEnded, cur.Status)
	case cur.LeaseToken != p.Token || cur.LeaseOwner == "":
		return fmt.Errorf("%w (token %d, current token %d, lease owner %q)",
			ErrFenced, p.Token, cur.LeaseToken, cur.LeaseOwner)
	case cur.Position != p.After:
		return fmt.Errorf("%w (after %d, journal length %d)", ErrConflict, p.After, cur.Position)
	}
	return nil
}

// CheckReadLimit checks a read's after and limit and returns the limit:
// 0 means DefaultReadLimit.
func CheckReadLimit(after int64, limit int) (int, error) {
	switch {
	case limit == 0:
		limit = DefaultReadLimit
	case limit < 0 || limit > MaxReadLimit:
		return 0, fmt.Errorf("limit %d is outside 0..%d", limit, MaxReadLimit)
	}
	if after < 0 {
		return 0, fmt.Errorf("after %d is negative", after)
	}
	return limit, nil
}

// CheckJournalRead checks a JournalRead's parameters and returns its limit.
func CheckJournalRead(p JournalReadParams) (int, error) {
	limit, err := CheckReadLimit(p.After, p.Limit)
	if err != nil {
		return 0, err
	}
	return limit, CheckKinds(p.Kinds)
}

// MaxReadMany bounds the runs of one JournalReadMany.
const MaxReadMany = 100

// CheckReadMany checks a JournalReadMany's parameters and returns its
// limit: 0 means DefaultReadLimit.
func CheckReadMany(p JournalReadManyParams) (int, error) {
	if len(p.RunIDs) > MaxReadMany {
		return 0, fmt.Errorf("run ids: %d runs, more than %d", len(p.RunIDs), MaxReadMany)
	}
	for _, id := range p.RunIDs {
		if err := CheckName("run id", id, true); err != nil {
			return 0, err
		}
	}
	return CheckReadLimit(0, p.Limit)
}

// JournalHeads reads the rows of a JournalReadMany's statement, one or
// more a run found: scan reads the current row, the run's id, its
// journal's length and an entry, ok false for a row without one. It
// answers the entries in the order of ids, each run's checked whole up to
// limit (CheckWhole); a run not found has none.
func JournalHeads(rows Rows, ids []string, limit int, scan func() (runID string, length int64, e Entry, ok bool, err error)) ([][]Entry, error) {
	var (
		entries = map[string][]Entry{}
		lengths = map[string]int64{}
	)
	for rows.Next() {
		id, length, e, ok, err := scan()
		if err != nil {
			return nil, err
		}
		lengths[id] = length
		if ok {
			entries[id] = append(entries[id], e)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := make([][]Entry, len(ids))
	for i, id := range ids {
		length, ok := lengths[id]
		if !ok {
			continue
		}
		es := entries[id]
		slices.SortFunc(es, func(a, b Entry) int { return cmp.Compare(a.Pos, b.Pos) })
		if err := CheckWhole(es, 0, length, limit); err != nil {
			return nil, fmt.Errorf("run %q: %w", id, err)
		}
		out[i] = es
	}
	return out, nil
}

// CheckWhole checks that entries read after position after hold every
// position up to the journal's length, as far as limit reaches. A gap
// means a row was lost behind the store's back: answering without it would
// fold a wrong state, so it is ErrCorrupt.
func CheckWhole(entries []Entry, after, length int64, limit int) error {
	for i, e := range entries {
		if want := after + 1 + int64(i); e.Pos != want {
			return fmt.Errorf("%w: position %d is missing from the journal (next stored is %d)", ErrCorrupt, want, e.Pos)
		}
	}
	if want := min(max(length-after, 0), int64(limit)); int64(len(entries)) < want {
		return fmt.Errorf("%w: position %d is missing from the journal of length %d", ErrCorrupt,
			after+int64(len(entries))+1, length)
	}
	return nil
}

// CheckClaim checks a LeaseClaim's parameters.
func CheckClaim(p LeaseClaimParams) error {
	if err := errors.Join(CheckName("owner", p.Owner, true), CheckName("run id", p.RunID, false)); err != nil {
		return err
	}
	return CheckLease(p.TTL, p.Limit)
}

// CheckLease checks a lease's time to live and a claim's limit.
func CheckLease(ttl time.Duration, limit int) error {
	switch {
	case ttl < time.Microsecond || ttl > MaxLeaseTTL:
		return fmt.Errorf("ttl %v is outside 1µs..%v", ttl, MaxLeaseTTL)
	case limit < 0 || limit > MaxListLimit:
		return fmt.Errorf("limit %d is outside 0..%d", limit, MaxListLimit)
	}
	return nil
}

// Charged is what a family has used once c is charged to used, or a
// *BudgetExhaustedError naming the first limited counter c's reservation
// would take past its limit (the adjustment of settled work is never
// refused).
func Charged(rootID string, limits, used Budget, c BudgetCharge) (Budget, error) {
	next := used.Add(c.Charge).Add(c.Adjust)
	which := next.Exceeds(limits, c.Charge)
	if which == "" {
		return next, nil
	}
	e := &BudgetExhaustedError{RootID: rootID, Which: which}
	switch which {
	case "tokens":
		e.Limit, e.Used = limits.Tokens, used.Tokens
	case "usd":
		e.Limit, e.Used = limits.MicroUSD, used.MicroUSD
	case "model_calls":
		e.Limit, e.Used = limits.ModelCalls, used.ModelCalls
	case "tool_calls":
		e.Limit, e.Used = limits.ToolCalls, used.ToolCalls
	}
	return Budget{}, e
}

// MessageRef is the part of a session message entry's data a store reads.
type MessageRef struct {
	ID    string             `json:"id"`
	Mode  hitchtype.SendMode `json:"mode"`
	Text  string             `json:"text"`
	RunID string             `json:"run_id"`
}

// CheckSessionAppend checks a SessionAppend's parameters and returns what
// the store reads of its data.
func CheckSessionAppend(p SessionAppendParams) (MessageRef, error) {
	var ref MessageRef
	if err := errors.Join(CheckName("session id", p.SessionID, true), CheckName("idempotency key", p.IdempotencyKey, false)); err != nil {
		return ref, err
	}
	switch {
	case p.After < AnyPosition:
		return ref, fmt.Errorf("after %d is below %d", p.After, AnyPosition)
	case len(p.Data) > MaxEntryBytes:
		return ref, fmt.Errorf("data is %d bytes, more than %d", len(p.Data), MaxEntryBytes)
	case p.IdempotencyKey != "" && p.Kind != hitchtype.KindMessageAdmitted:
		return ref, fmt.Errorf("idempotency key on a %s entry: only admissions take one", p.Kind)
	case p.IdempotencyKey != "" && p.KeyTTL <= 0:
		return ref, fmt.Errorf("key ttl %s: an idempotency key needs a positive ttl", p.KeyTTL)
	}
	switch p.Kind {
	case hitchtype.KindMessageAdmitted, hitchtype.KindMessageEdited, hitchtype.KindMessageRemoved, hitchtype.KindMessageJoined:
	case hitchtype.KindSubmissionInterrupt:
		if err := json.Unmarshal(p.Data, &ref); err != nil {
			return ref, fmt.Errorf("data of %s: %w", p.Kind, err)
		}
		if ref.RunID == "" {
			return ref, errors.New("data.run_id is empty")
		}
		return ref, nil
	default:
		return ref, fmt.Errorf("kind %q: want one of %s, %s, %s, %s, %s", p.Kind, hitchtype.KindMessageAdmitted,
			hitchtype.KindMessageEdited, hitchtype.KindMessageRemoved, hitchtype.KindMessageJoined, hitchtype.KindSubmissionInterrupt)
	}
	if err := json.Unmarshal(p.Data, &ref); err != nil {
		return ref, fmt.Errorf("data of %s: %w", p.Kind, err)
	}
	if err := CheckName("data.id", ref.ID, true); err != nil {
		return ref, err
	}
	switch {
	case p.Kind == hitchtype.KindMessageAdmitted && !ref.Mode.Valid():
		return ref, fmt.Errorf("data.mode %q: want queue, steer or interrupt", ref.Mode)
	case p.Kind == hitchtype.KindMessageJoined && ref.RunID == "":
		return ref, errors.New("data.run_id is empty")
	}
	return ref, nil
}

// IsObject reports whether b is a JSON object (a session's metadata must
// be one).
func IsObject(b json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(b, &m) == nil && m != nil
}
