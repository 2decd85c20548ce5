package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
)

// TriggerStore keeps trigger bindings: durable schedules that start a run
// or send a session a message at each occurrence. A driver offers them by
// implementing it next to Store; the conformance suite (storetest) checks
// it on every driver that does.
//
// The store keeps a binding's definition as opaque JSON (Spec) and its
// bookkeeping as columns: the next occurrence due (NextFire), the fire and
// miss counts, and a claim. Occurrences are computed by the caller; the
// store only judges when one is due, by its clock, and fences each
// occurrence so that its bookkeeping is done once:
//
//	active ──claim (NextFire ≤ now)──► claimed ──retire──► active (NextFire moved on)
//	  ▲ │                                 │   └──retire (no next)──► done
//	  │ pause/resume                      └──release (failure)──► active, retried later
//	paused
//
// A claim is fenced: ClaimToken grows with every claim, and a retire or a
// release names the token and the occurrence it claimed, so a claimer
// whose claim ran out and was taken over changes nothing. A dispatcher
// that dies between its dispatch and its retire leaves the claim to run
// out; the occurrence is then claimed again and dispatched again, which
// is why a dispatch must be idempotent by (binding, occurrence).
type TriggerStore interface {
	// TriggerCreate creates a binding. It is idempotent by ID: when the
	// binding exists it returns it, created=false, and writes nothing —
	// unless p.Replace is set and the stored Spec differs, when the
	// definition, NextFire and State are replaced (counts are kept, and
	// a claim in flight is fenced off). With p.MaxPerSession above 0
	// and p.SessionID set, a new binding is refused with
	// *TriggerLimitError when the session already has that many
	// bindings that are not done.
	TriggerCreate(ctx context.Context, p TriggerCreateParams) (t Trigger, created bool, err error)

	// TriggerGet returns one binding, or ErrTriggerNotFound.
	TriggerGet(ctx context.Context, id string) (Trigger, error)

	// TriggerList returns bindings in order of their ids, after the cursor
	// p.After, at most p.Limit (0 means 100, at most MaxTriggerPage).
	TriggerList(ctx context.Context, p TriggerListParams) ([]Trigger, error)

	// TriggerSetState moves binding id to state to when it is in state
	// from, in one write, and returns the binding as it stands: one in
	// another state is returned unchanged. ErrTriggerNotFound when it does
	// not exist. PauseTrigger and ResumeTrigger are its uses.
	TriggerSetState(ctx context.Context, id, from, to string) (Trigger, error)

	// TriggerRemove deletes a binding. It is idempotent: removed is false
	// when there was none. A claim in flight finds it gone at retire.
	TriggerRemove(ctx context.Context, id string) (removed bool, err error)

	// TriggerClaim claims up to p.Limit (0 means 1, at most MaxTriggerPage)
	// active bindings whose NextFire has come by the store clock and whose
	// claim is absent or has run out (or whose retry time has come), the
	// earliest NextFire first, for p.TTL. Concurrent claims never return
	// the same binding twice. It returns them with the store clock's
	// reading, by which the caller judges missed occurrences.
	TriggerClaim(ctx context.Context, p TriggerClaimParams) (claimed []Trigger, now time.Time, err error)

	// TriggerRetire settles a claimed occurrence in one transaction: it
	// counts a fire (Fired: FireCount+1, LastFire = the occurrence) or a
	// skip (Skipped: SkipCount+1, LastSkip, SkipReason), and
	// p.Missed skipped occurrences, moves NextFire to p.Next (the zero
	// time makes the binding done), and clears the claim. It is fenced:
	// unless p.Token is the binding's current claim token, p.Owner its
	// claimer and p.Occurrence its NextFire, it writes nothing and answers
	// ErrTriggerFenced. ErrTriggerNotFound when the binding is gone.
	TriggerRetire(ctx context.Context, p TriggerRetireParams) (Trigger, error)

	// TriggerRelease gives back a claim whose dispatch failed: it records
	// p.Error, counts the failure and makes the occurrence due again at
	// p.RetryAt (not before), leaving NextFire as it is. Fenced and
	// answered like TriggerRetire.
	TriggerRelease(ctx context.Context, p TriggerReleaseParams) (Trigger, error)

	// TriggerNextDue returns the earliest time at which an active binding
	// becomes claimable (its NextFire, or its claim's end when later), or
	// ok=false when none will.
	TriggerNextDue(ctx context.Context) (at time.Time, ok bool, err error)
}

// Trigger states.
const (
	TriggerActive = "active"
	TriggerPaused = "paused"
	TriggerDone   = "done"
)

// MaxTriggerPage bounds a TriggerList page and a TriggerClaim batch.
const MaxTriggerPage = hitchtype.MaxTriggerPage

// MaxTriggerSpecBytes bounds a binding's definition.
const MaxTriggerSpecBytes = 64 << 10

// Trigger is a binding's row.
type Trigger struct {
	ID     string
	Tenant string
	// SessionID is the session that registered the binding (through a
	// tool), or "" for a binding declared in config or by a caller.
	SessionID string
	// Spec is the binding's definition, as JSON the store does not read.
	Spec  json.RawMessage
	State string // TriggerActive, TriggerPaused, TriggerDone
	// FireCount counts occurrences dispatched; MissedCount those skipped.
	FireCount   int64
	MissedCount int64
	// LastFire is the last occurrence dispatched (zero before the first).
	LastFire time.Time
	// NextFire is the next occurrence to dispatch; zero when done.
	NextFire time.Time
	// ClaimOwner, ClaimToken and ClaimUntil describe the current claim;
	// ClaimToken only grows. After a failed dispatch ClaimOwner is empty
	// and ClaimUntil is when it is retried.
	ClaimOwner string
	ClaimToken int64
	ClaimUntil time.Time
	// SkipCount counts occurrences a pre_trigger hook denied, so they
	// were not dispatched; LastSkip is the latest one, SkipReason why.
	SkipCount  int64
	LastSkip   time.Time
	SkipReason string
	// Failures counts dispatches that failed since the last retire;
	// LastError is the latest one's error.
	Failures  int
	LastError string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// TriggerCreateParams are the parameters of TriggerCreate.
type TriggerCreateParams struct {
	ID        string
	Tenant    string // "" means "default"
	SessionID string
	Spec      json.RawMessage
	// NextFire is the first occurrence; it must be set.
	NextFire time.Time
	// Paused creates the binding paused.
	Paused bool
	// Replace replaces an existing binding's definition when it differs.
	Replace bool
	// MaxPerSession bounds the bindings of SessionID that are not done.
	MaxPerSession int
}

// TriggerListParams are the parameters of TriggerList. Empty filters
// match every binding.
type TriggerListParams struct {
	After     string
	Limit     int
	SessionID string
	State     string
	Tenant    string
}

// TriggerClaimParams are the parameters of TriggerClaim.
type TriggerClaimParams struct {
	Owner string
	TTL   time.Duration
	Limit int
}

// TriggerRetireParams are the parameters of TriggerRetire.
type TriggerRetireParams struct {
	ID         string
	Owner      string
	Token      int64
	Occurrence time.Time
	Fired      bool
	Missed     int64
	Next       time.Time
	// Skipped settles an occurrence that was not dispatched because a
	// hook denied it (not with Fired): SkipCount+1, LastSkip = the
	// occurrence, SkipReason = p.SkipReason (cut as an error is).
	Skipped    bool
	SkipReason string
}

// TriggerReleaseParams are the parameters of TriggerRelease.
type TriggerReleaseParams struct {
	ID         string
	Owner      string
	Token      int64
	Occurrence time.Time
	RetryAt    time.Time
	Error      string
}

// MaxTriggerErrorBytes bounds the error a release records; a longer one is
// cut.
const MaxTriggerErrorBytes = 1024

// TriggerErrorText is the error text a release stores: without NUL bytes,
// valid UTF-8, at most MaxTriggerErrorBytes.
func TriggerErrorText(s string) string {
	s = strings.ReplaceAll(s, "\x00", "")
	if len(s) > MaxTriggerErrorBytes {
		s = s[:MaxTriggerErrorBytes]
	}
	return strings.ToValidUTF8(s, "")
}

// Trigger errors.
var (
	ErrTriggerNotFound = errors.New("trigger not found")
	// ErrTriggerFenced: the claim named is no longer current (it ran out
	// and was taken over, or the binding was replaced or moved on).
	ErrTriggerFenced = errors.New("trigger claim is stale")
)

// TriggerLimitError refuses a binding past its session's bound.
type TriggerLimitError struct {
	SessionID string
	Limit     int
}

func (e *TriggerLimitError) Error() string {
	return fmt.Sprintf("session %s has %d trigger bindings already, its limit", e.SessionID, e.Limit)
}

// CheckTriggerCreate refuses a create the drivers must not store, naming
// the field.
func CheckTriggerCreate(p TriggerCreateParams) error {
	errs := []error{CheckName("id", p.ID, true), CheckName("tenant", p.Tenant, false), CheckName("session id", p.SessionID, false)}
	switch {
	case len(p.Spec) > MaxTriggerSpecBytes:
		errs = append(errs, fmt.Errorf("spec is %d bytes, more than %d", len(p.Spec), MaxTriggerSpecBytes))
	case !json.Valid(p.Spec):
		errs = append(errs, errors.New("spec is not valid JSON"))
	}
	if p.NextFire.IsZero() {
		errs = append(errs, errors.New("next fire is not set"))
	}
	if p.MaxPerSession < 0 {
		errs = append(errs, fmt.Errorf("max per session %d is negative", p.MaxPerSession))
	}
	return errors.Join(errs...)
}

// CheckTriggerClaim refuses a claim without an owner, with a TTL outside
// 1ms..24h, or a limit outside 0..MaxTriggerPage.
func CheckTriggerClaim(p TriggerClaimParams) error {
	switch {
	case p.Owner == "":
		return errors.New("owner is empty")
	case p.TTL < time.Millisecond || p.TTL > 24*time.Hour:
		return fmt.Errorf("ttl %v is outside 1ms..24h", p.TTL)
	case p.Limit < 0 || p.Limit > MaxTriggerPage:
		return fmt.Errorf("limit %d is outside 0..%d", p.Limit, MaxTriggerPage)
	}
	return CheckName("owner", p.Owner, true)
}

// TenantOr returns tenant, or "default" when it is empty.
func TenantOr(tenant string) string {
	if tenant == "" {
		return "default"
	}
	return tenant
}
