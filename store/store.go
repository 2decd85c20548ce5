package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
)

// Store is the durable backend. Implementations must be safe for concurrent
// use by many runners.
type Store interface {
	// Now returns the store's clock. Every lease expiry and wake time is
	// judged by it, so all nodes sharing a store agree.
	Now(ctx context.Context) (time.Time, error)

	// RunCreate creates a queued run with the given first journal entries
	// (at positions 1..n), atomically. It is idempotent by ID: when a run
	// with that ID exists, it returns that run and created=false and writes
	// nothing.
	RunCreate(ctx context.Context, p RunCreateParams) (run Run, created bool, err error)

	// RunGet returns one run, or ErrNotFound.
	RunGet(ctx context.Context, id string) (Run, error)

	// RunList returns runs newest first (CreatedAt, then ID, descending),
	// or oldest first with p.Oldest, filtered by p, at most p.Limit of
	// them. With p.After (a RunCursor of the last run of the previous
	// page) it returns the runs that follow
	// that run in this order, so that pages never repeat a run, and reach
	// every run that existed when the first page was read, whatever is
	// created meanwhile. A bad cursor, status or tenant is an error.
	RunList(ctx context.Context, p RunListParams) ([]Run, error)

	// RunCountsFor counts runs by status among those p's filters select,
	// as RunList would (p.After, p.Limit and p.Oldest are ignored).
	// Statuses without runs are absent. Bad filters are refused as RunList
	// does. Of one tenant or all, with no filter but statuses, the counts
	// are exact and read in time independent of the number of runs; with
	// other filters a status's count stops at MaxFilteredCount, which
	// then means at least that many.
	RunCountsFor(ctx context.Context, p RunListParams) (map[hitchtype.Status]int, error)

	// RunRequestCancel records a durable request to cancel a run, with who
	// asked and why when p says. A waiting run becomes due at once so a
	// runner picks the request up. It is idempotent: the first request's
	// CancelBy and CancelReason are kept; on a terminal run it changes
	// nothing and returns the run. ErrNotFound when the run does not exist.
	RunRequestCancel(ctx context.Context, p RunRequestCancelParams) (Run, error)

	// JournalAppend appends entries at positions p.After+1.. under the lease
	// token p.Token, optionally changing the run's status in the same
	// transaction. It returns what a runner needs of the run as it stands
	// after the append; RunGet reads the rest.
	//
	// Errors: ErrNotFound; ErrEnded when the run is terminal; ErrFenced when
	// p.Token is not the run's current token, or its lease was released;
	// ErrConflict when p.After is not the journal's length. Nothing is
	// written on error.
	//
	// With p.Charge, the family budget is charged in the same transaction,
	// as BudgetCharge would (Charge checked against the limits, Adjust not).
	// The refusals above are judged first; then, when the reservation would
	// take a limited counter past its limit, the answer is a
	// *BudgetExhaustedError and nothing at all is written: no entries, no
	// status change, no charge. Since the append is conditional on the
	// token and the position, a retried or duplicated append can never
	// count its charge twice, and a charge whose entries are journaled is
	// never lost.
	//
	// A terminal p.Status does two more things in the same transaction, so
	// that a family's state follows its runs without polling:
	//   - every non-terminal direct child (ParentID equal to the run's ID)
	//     gets CancelRequested set, and a waiting child becomes due at once
	//     (its WakeAt becomes now, unless it is already earlier). Each
	//     child's own terminal append carries the cancellation on to its
	//     children;
	//   - when the run's parent is waiting, the parent becomes due at once
	//     (WakeAt now, unless already earlier), so it sees the child's end.
	JournalAppend(ctx context.Context, p JournalAppendParams) (Appended, error)

	// JournalRead returns entries with positions above p.After, in order,
	// at most p.Limit of them (a Limit of 0 means DefaultReadLimit).
	// ErrNotFound when the run does not exist. The answer is whole or an
	// error: when a position it should hold (from p.After+1 up to the
	// run's Position, as far as the limit reaches) has no entry, the error
	// is ErrCorrupt, naming the run and the position.
	// With p.Kinds only entries of those kinds are read, and only the
	// positions read are checked.
	JournalRead(ctx context.Context, p JournalReadParams) ([]Entry, error)

	// JournalReadMany reads the heads of several journals in one
	// statement: for each id of p.RunIDs (at most MaxReadMany) the run's
	// entries from position 1 up to p.Limit of them (0 means
	// DefaultReadLimit). The answer holds one slice per id, in the order of
	// p.RunIDs; a run that does not exist has an empty one (a run always
	// holds its first entry). Each slice is whole as JournalRead's is, or
	// the error is ErrCorrupt; a slice that reached the limit may go on,
	// and JournalRead reads the rest.
	JournalReadMany(ctx context.Context, p JournalReadManyParams) ([][]Entry, error)

	// LeaseClaim leases runs to p.Owner for p.TTL and returns them. Without
	// p.RunID it claims up to p.Limit due runs: queued or running runs whose
	// lease is absent or expired, and waiting runs whose WakeAt has come.
	// Concurrent claims never return the same run twice. With p.RunID it
	// claims exactly that run if it is not terminal and not leased to a live
	// lease, whatever its status; a live lease gives *LeaseHeldError, a
	// terminal run ErrEnded, a missing one ErrNotFound.
	//
	// A claim sets the status to running, clears WakeAt, and increments the
	// run's token.
	LeaseClaim(ctx context.Context, p LeaseClaimParams) ([]Lease, error)

	// LeaseRenew extends a lease by p.TTL from now. It returns the run (so
	// the runner sees CancelRequested) or ErrFenced when the token is no
	// longer current, or ErrEnded.
	LeaseRenew(ctx context.Context, p LeaseRenewParams) (Run, error)

	// LeaseRenewMany renews many leases of one owner at once, each as
	// LeaseRenew would (by p.TTL from now), in one transaction: a node
	// renews every run it drives in one round trip. It answers one
	// LeaseRenewal per lease of p.Leases (at most MaxListLimit), in order:
	// Renewed is false, and nothing is changed for it, where LeaseRenew
	// would give ErrFenced, ErrEnded or ErrNotFound. An error means no
	// lease was renewed.
	LeaseRenewMany(ctx context.Context, p LeaseRenewManyParams) ([]LeaseRenewal, error)

	// RunCancelRequested returns the ids of the runs leased to p.Owner
	// that have a cancel requested and have not ended, in order of id,
	// after p.After, at most p.Limit of them (MaxListLimit when 0): a node
	// asks it once a poll for the runs it drives. The store answers from
	// the few runs with a cancel pending, so a poll costs the same with
	// ten or ten thousand runs in flight.
	RunCancelRequested(ctx context.Context, p RunCancelRequestedParams) ([]string, error)

	// LeaseRelease gives a lease back before it expires, so that another
	// node claims the run at once instead of waiting out the TTL (a runner
	// that drains or fails). With the run's current token and owner it
	// clears the lease (LeaseOwner empty, LeaseExpires zero) and leaves the
	// status as it is: a running run is due at once for a claim of due
	// runs; a waiting run keeps its WakeAt. The token is not changed, and
	// appends and renewals under the released lease are refused with
	// ErrFenced. It returns the run as it stands after the release.
	//
	// It is idempotent: releasing again with the same token, once released,
	// returns the run and nil. A token that is not current (the run was
	// claimed again since), or an owner that does not hold the lease, gives
	// ErrFenced and changes nothing; a terminal run gives ErrEnded; a
	// missing one ErrNotFound.
	LeaseRelease(ctx context.Context, p LeaseReleaseParams) (Run, error)

	// BudgetCharge charges a family's budget, stored with its root run,
	// atomically: the use becomes use + p.Charge + p.Adjust. p.Charge is a
	// reservation checked against the limits first: when it would take a
	// limited counter past its limit, nothing is written and the answer is
	// a *BudgetExhaustedError. p.Adjust (which may be negative) is not
	// checked: it settles a reservation to what the work really cost. It
	// returns the use after the charge. A root without a budget accepts
	// every charge and returns a zero use. ErrNotFound when the root does
	// not exist.
	//
	// Engines charge through JournalAppend (its Charge field) instead, so
	// that a charge is fenced and keyed by journal position; this method
	// is not fenced, and a retried call charges again.
	BudgetCharge(ctx context.Context, p BudgetChargeParams) (Budget, error)

	// BudgetGet returns a family's limits and use; ok is false when the
	// root has no budget.
	BudgetGet(ctx context.Context, rootID string) (limits, used Budget, ok bool, err error)

	// LeaderAttemptElect elects p.LeaderID leader of p.Name (one
	// leadership per name, shared by every node of the store) until the
	// store's clock reaches now + p.TTL, when nobody leads it, when the
	// leadership has run out, or when p.LeaderID leads it already (a
	// re-election, which extends it and keeps ElectedAt). It returns the
	// leadership as it stands and whether p.LeaderID holds it; a refused
	// attempt writes nothing. Attempts are atomic: two nodes never both
	// hold one unexpired leadership.
	//
	// A leader must stop trusting its leadership before ExpiresAt, by a
	// margin for clock rates and the time the answer took: it counts from
	// when it sent the attempt, on its own clock, not from the store's.
	LeaderAttemptElect(ctx context.Context, p LeaderElectParams) (leader Leadership, elected bool, err error)

	// LeaderResign ends p.LeaderID's leadership of p.Name at once, so that
	// another node is elected at its next attempt instead of after the
	// TTL. It is idempotent: resigning a leadership that p.LeaderID does
	// not hold (any more) changes nothing and returns nil.
	LeaderResign(ctx context.Context, p LeaderResignParams) error

	// RunPrune deletes settled families for retention, whole: a root run
	// with every run below it and their journals and budget. A family is
	// settled when every run of it is terminal and was last updated before
	// p.Before, and its root does not work a session's submission (a
	// session's transcript is rebuilt from those runs). It deletes at most
	// p.Limit families, oldest root first, in one transaction, and returns
	// their roots and how many runs they held; with p.DryRun it deletes
	// nothing and says what it would delete. A pruned run is gone: RunGet
	// and JournalRead answer ErrNotFound. Never a run that is not terminal,
	// never part of a family. It is idempotent.
	RunPrune(ctx context.Context, p RunPruneParams) (RunPruneResult, error)

	// SessionKeyPrune deletes at most limit (1 to MaxPruneLimit) session
	// idempotency keys whose window has passed by the store's clock, and
	// returns how many it deleted.
	SessionKeyPrune(ctx context.Context, limit int) (int, error)

	// Close releases the store's resources. Leases are not released.
	Close() error
}

// RunPruneParams are the parameters of RunPrune.
type RunPruneParams struct {
	// Before: only families whose every run was last updated before it.
	Before time.Time
	// Limit bounds the families of one call: 1 to MaxPruneLimit; 0 means
	// DefaultPruneLimit.
	Limit int
	// DryRun deletes nothing.
	DryRun bool
}

// RunPruneResult is what RunPrune deleted, or would delete.
type RunPruneResult struct {
	// Roots are the families' root runs, oldest first.
	Roots []string
	// Runs counts the runs of those families.
	Runs int64
}

// Bounds of one prune call.
const (
	DefaultPruneLimit = 100
	MaxPruneLimit     = 1000
)

// CheckPrune checks RunPrune's parameters and fills the default limit.
func CheckPrune(p RunPruneParams) (RunPruneParams, error) {
	switch {
	case p.Before.IsZero():
		return p, errors.New("before: is required")
	case p.Limit == 0:
		p.Limit = DefaultPruneLimit
	case p.Limit < 0 || p.Limit > MaxPruneLimit:
		return p, fmt.Errorf("limit: %d, want 1 to %d", p.Limit, MaxPruneLimit)
	}
	return p, nil
}

// PruneRuns is a driver's RunPrune statements, once CheckPrune has passed
// p and filled its limit.
type PruneRuns func(ctx context.Context, p RunPruneParams) (RunPruneResult, error)

// Prune makes a RunPrune (see Store).
func (prune PruneRuns) Prune(ctx context.Context, p RunPruneParams) (RunPruneResult, error) {
	p, err := CheckPrune(p)
	if err != nil {
		return RunPruneResult{}, fmt.Errorf("run prune: %w", err)
	}
	res, err := prune(ctx, p)
	return Result(res, err, "run prune", "")
}

// PruneSessionKeys is a driver's SessionKeyPrune statement, once its limit
// is checked: it deletes at most limit expired keys and counts them.
type PruneSessionKeys func(ctx context.Context, limit int) (int, error)

// Prune makes a SessionKeyPrune (see Store).
func (prune PruneSessionKeys) Prune(ctx context.Context, limit int) (int, error) {
	if limit < 1 || limit > MaxPruneLimit {
		return 0, fmt.Errorf("session key prune: limit: %d, want 1 to %d", limit, MaxPruneLimit)
	}
	n, err := prune(ctx, limit)
	return Result(n, err, "session key prune", "")
}

// LeaderElectParams are the parameters of LeaderAttemptElect.
type LeaderElectParams struct {
	// Name names the leadership, such as "maintenance".
	Name string
	// LeaderID names the node that wants to lead.
	LeaderID string
	// TTL is how long the leadership lasts from the store's clock now.
	TTL time.Duration
}

// LeaderResignParams are the parameters of LeaderResign.
type LeaderResignParams struct {
	Name     string
	LeaderID string
}

// Leadership is who leads a name, and until when by the store's clock.
type Leadership struct {
	Name     string
	LeaderID string
	// ElectedAt is when LeaderID's unbroken leadership began.
	ElectedAt time.Time
	ExpiresAt time.Time
}

// Notifier is implemented by a Store that can tell a node when work may
// have become due (a run created, released or woken, a cancel requested),
// so an idle node claims at once instead of at its next poll. It is
// optional: a node type-asserts for it and polls without it.
type Notifier interface {
	// Wake returns a channel that receives when work may be due. Wakes
	// coalesce (one receive may stand for many events) and are hints: a
	// claim after one may find nothing. The channel is the same on every
	// call and meant for one receiver; it is never closed.
	Wake() <-chan struct{}
}

// Budget is a family's limits, or its use. In limits, a zero counter is
// unlimited.
type Budget struct {
	Tokens     int64 `json:"tokens,omitempty"`
	MicroUSD   int64 `json:"micro_usd,omitempty"`
	ModelCalls int64 `json:"model_calls,omitempty"`
	ToolCalls  int64 `json:"tool_calls,omitempty"`
	// WallMS bounds the family's wall time from the root's creation; it is
	// judged by the engine, not charged.
	WallMS int64 `json:"wall_ms,omitempty"`
}

// Exceeds names the first counter of b that goes past a limit in limits
// while charge asks for more of it, or "" when none does.
func (b Budget) Exceeds(limits, charge Budget) string {
	for _, c := range []struct {
		name              string
		used, limit, want int64
	}{
		{"tokens", b.Tokens, limits.Tokens, charge.Tokens},
		{"usd", b.MicroUSD, limits.MicroUSD, charge.MicroUSD},
		{"model_calls", b.ModelCalls, limits.ModelCalls, charge.ModelCalls},
		{"tool_calls", b.ToolCalls, limits.ToolCalls, charge.ToolCalls},
	} {
		if c.limit > 0 && c.want > 0 && c.used > c.limit {
			return c.name
		}
	}
	return ""
}

// Add returns b + o, counter by counter (WallMS is left as in b).
func (b Budget) Add(o Budget) Budget {
	b.Tokens += o.Tokens
	b.MicroUSD += o.MicroUSD
	b.ModelCalls += o.ModelCalls
	b.ToolCalls += o.ToolCalls
	return b
}

// BudgetCharge is a charge to a family's budget.
type BudgetCharge struct {
	// RootID is the family's root run. In JournalAppendParams it may be
	// left empty, meaning the appending run's root; when set it must be
	// that root.
	RootID string
	// Charge is a reservation, checked against the limits.
	Charge Budget
	// Adjust settles a reservation to what the work cost; it may be
	// negative and is not checked.
	Adjust Budget
}

// BudgetChargeParams are the parameters of the BudgetCharge method.
type BudgetChargeParams = BudgetCharge

// BudgetExhaustedError refuses a charge that would take a counter past its
// limit.
type BudgetExhaustedError struct {
	RootID string
	Which  string // tokens, usd, model_calls, tool_calls
	Limit  int64
	Used   int64
}

func (e *BudgetExhaustedError) Error() string {
	return fmt.Sprintf("family budget of %s exhausted: %s used %d of %d", e.RootID, e.Which, e.Used, e.Limit)
}

// DefaultReadLimit bounds a JournalRead that names no limit.
const DefaultReadLimit = 1000

// Run is a run's row: identity, status, lease and journal length.
type Run struct {
	ID       string
	RootID   string // equal to ID for a root run
	ParentID string // empty for a root run
	Depth    int    // 0 for a root run
	// Tenant owns the run; every run of a family has its root's tenant.
	Tenant  string
	Agent   string
	Version int
	// InputHash identifies the input the run was started with, so a
	// repeated start can say whether its input was the same.
	InputHash string
	Status    hitchtype.Status
	// Position is the journal's length: the position of its last entry.
	Position int64
	// LeaseOwner, LeaseToken and LeaseExpires describe the current lease.
	// LeaseToken only grows; LeaseExpires is zero when no lease is held.
	LeaseOwner   string
	LeaseToken   int64
	LeaseExpires time.Time
	// WakeAt is when a waiting run becomes due; zero means only an explicit
	// claim wakes it.
	WakeAt          time.Time
	CancelRequested bool
	// CancelBy and CancelReason are who asked to cancel the run and why,
	// as the first cancel request said; empty when it did not say (or a
	// parent's end cancelled the run).
	CancelBy, CancelReason string
	// Outcome is the terminal summary, set with a terminal status.
	Outcome   json.RawMessage
	CreatedAt time.Time
	UpdatedAt time.Time
	// Title is the text the run is found by: the first MaxTitleRunes
	// characters of its input.
	Title string
	// ForkedFrom, for a fork, names the run and position its history was
	// copied from (as its run.started does); nil for any other run.
	ForkedFrom *hitchtype.ForkedFrom
}

// Appended is a run as an append left it: only what the appending runner
// reads, so that the most frequent write returns a few columns, not the
// whole row.
type Appended struct {
	// Position is the journal's length after the append.
	Position int64
	Status   hitchtype.Status
	// LeaseOwner is empty when the append released the lease.
	LeaseOwner      string
	CancelRequested bool
}

// Entry is one journal entry.
type Entry struct {
	RunID string
	Pos   int64
	Kind  string
	At    time.Time // store clock at append
	// Data is read back byte for byte as it was appended, never
	// normalised: a runner's replay reads what it wrote.
	Data json.RawMessage
}

// EntryInput is an entry to append.
type EntryInput struct {
	Kind string
	Data json.RawMessage
}

// RunCreateParams are the parameters of RunCreate.
type RunCreateParams struct {
	ID       string
	RootID   string // empty means ID
	ParentID string
	Depth    int
	// Tenant owns the run; empty means hitchtype.DefaultTenant. A run that
	// is not a root (RootID other than ID) takes its root's tenant when the
	// root exists: Tenant may then be empty or the root's, and any other
	// tenant is refused (ErrTenantMismatch), writing nothing.
	Tenant    string
	Agent     string
	Version   int
	InputHash string
	// Entries are the first journal entries; at least one.
	Entries []EntryInput
	// Budget, for a root run, is its family's budget limits.
	Budget *Budget
	// Title is kept with the run to find it by (RunListParams.Text):
	// callers pass the run's input; the store keeps its first
	// MaxTitleRunes characters.
	Title string
	// Lease, when set, leases the run to the caller as it is created, as
	// a LeaseClaim of it would (status running, token 1): a node that
	// creates a run to drive it at once spares the claim's write. A run
	// that already exists is returned as it is, leased or not.
	Lease *CreateLease
	// ForkedFrom, for a fork, is kept with the run: the run and position
	// its history was copied from.
	ForkedFrom *hitchtype.ForkedFrom
}

// CreateLease is the lease a RunCreate takes on the run it creates.
type CreateLease struct {
	Owner string
	TTL   time.Duration
}

// RunRequestCancelParams are the parameters of RunRequestCancel.
type RunRequestCancelParams struct {
	ID string
	// By and Reason say who asked and why (each at most MaxCancelNoteBytes);
	// the runner that ends the run journals them in its outcome.
	By, Reason string
}

// MaxReasons bounds RunListParams.Reasons.
const MaxReasons = 16

// MaxCancelNoteBytes bounds RunRequestCancelParams.By and Reason.
const MaxCancelNoteBytes = 4 << 10

// RunListParams are the parameters of RunList. Filters combine with AND.
type RunListParams struct {
	// Tenant filters one tenant's runs; empty means all tenants.
	Tenant string
	// Agent filters runs of one agent (any version); empty means all.
	Agent string
	// Statuses filters by status; empty means all.
	Statuses []hitchtype.Status
	// ParentID filters children of one run.
	ParentID string
	// RootID filters one family: a root run and its descendants.
	RootID string
	// After is the cursor of the previous page: RunCursor of its last
	// run. Empty starts at the newest run.
	After string
	// Limit bounds the answer: 0 means 100, at most MaxListLimit.
	Limit int
	// CreatedAfter, when set, keeps runs created at or after it;
	// CreatedBefore, when set, runs created before it.
	CreatedAfter, CreatedBefore time.Time
	// Reasons, when set, keeps runs whose outcome's reason (Outcome.Reason:
	// max_turns, cancelled, ...) is one of them; "" stands for no reason
	// (a run that completed with its answer, or has not ended). Combined
	// with Statuses it reads an index of (tenant, status, reason).
	Reasons []string
	// Oldest lists oldest first (CreatedAt, then ID, ascending); After is
	// then the cursor of the last run of the previous page in that order.
	Oldest bool
	// Text, when set, keeps runs whose id, agent or title contains it,
	// ignoring ASCII case; at most MaxTextRunes characters. It is a
	// substring match over those bounded columns, not an index: the list
	// reads runs newest first until its page is full.
	Text string
}

// JournalAppendParams are the parameters of JournalAppend.
type JournalAppendParams struct {
	RunID   string
	Token   int64
	After   int64
	Entries []EntryInput
	// Status, when set, becomes the run's status. A terminal status, or
	// waiting or queued, releases the lease in the same transaction.
	Status hitchtype.Status
	// Outcome is stored with a terminal Status.
	Outcome json.RawMessage
	// WakeAt, with Status waiting, is when the run becomes due again. A run
	// whose cancel was requested does not park: it is due at once.
	WakeAt time.Time
	// Charge, when set, is charged to the family budget in the same
	// transaction as the append.
	Charge *BudgetCharge
}

// JournalReadParams are the parameters of JournalRead.
type JournalReadParams struct {
	RunID string
	After int64
	Limit int
	// Kinds, when set, keeps only entries of these kinds (at most
	// MaxReadKinds), read inside the store without sending the others:
	// positions between them are then absent by design.
	Kinds []string
}

// JournalReadManyParams are the parameters of JournalReadMany.
type JournalReadManyParams struct {
	RunIDs []string
	// Limit bounds the entries read of each run.
	Limit int
}

// LeaseClaimParams are the parameters of LeaseClaim.
type LeaseClaimParams struct {
	Owner string
	TTL   time.Duration
	// Limit bounds a claim of due runs; 0 means 1.
	Limit int
	// RunID, when set, claims exactly this run.
	RunID string
}

// LeaseRenewParams are the parameters of LeaseRenew.
type LeaseRenewParams struct {
	RunID string
	Owner string
	Token int64
	TTL   time.Duration
}

// LeaseRenewManyParams are the parameters of LeaseRenewMany.
type LeaseRenewManyParams struct {
	Owner  string
	TTL    time.Duration
	Leases []LeaseHeld
}

// RunCancelRequestedParams are the parameters of RunCancelRequested.
type RunCancelRequestedParams struct {
	// Owner is the node whose leased runs are asked about; required.
	Owner string
	// After is the last id of the previous page; empty for the first.
	After string
	// Limit bounds the page: 0 means MaxListLimit.
	Limit int
}

// LeaseHeld names a lease: a run and the token its claim gave.
type LeaseHeld struct {
	RunID string
	Token int64
}

// LeaseRenewal is what LeaseRenewMany did with one lease.
type LeaseRenewal struct {
	RunID string
	// Renewed is false when the lease is no longer the owner's (another
	// claim, a release) or the run has ended or does not exist.
	Renewed bool
	// CancelRequested is the run's, when renewed.
	CancelRequested bool
}

// CheckRenewMany checks LeaseRenewMany's parameters other than the TTL.
func CheckRenewMany(p LeaseRenewManyParams) error {
	if len(p.Leases) > MaxListLimit {
		return fmt.Errorf("%d leases: at most %d at once", len(p.Leases), MaxListLimit)
	}
	errs := []error{CheckName("owner", p.Owner, true)}
	for _, l := range p.Leases {
		errs = append(errs, CheckName("run id", l.RunID, true))
	}
	return errors.Join(errs...)
}

// LeaseReleaseParams are the parameters of LeaseRelease.
type LeaseReleaseParams struct {
	RunID string
	Owner string
	Token int64
}

// Lease is a claimed run.
type Lease struct {
	Run Run // as it stands after the claim
	// Token fences every append made under this lease.
	Token     int64
	ExpiresAt time.Time
}

// Sentinel errors. Drivers translate backend errors into these.
var (
	ErrNotFound = errors.New("run not found")
	ErrEnded    = errors.New("run has ended")
	ErrFenced   = errors.New("lease token is stale")
	ErrConflict = errors.New("journal position conflict")
	// ErrTenantMismatch refuses a run whose tenant is not its root's, or a
	// session's submission run whose tenant is not the session's.
	ErrTenantMismatch = errors.New("tenant does not match")
	// ErrCorrupt reports stored data that breaks the store's own
	// invariants, such as a journal with a missing position. It is never
	// the caller's fault, and retrying does not help.
	ErrCorrupt = errors.New("store is corrupt")
)

// LeaseHeldError reports a live lease on a run that was claimed by ID.
type LeaseHeldError struct {
	RunID     string
	Owner     string
	ExpiresAt time.Time
}

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("run %s is leased to %s until %s", e.RunID, e.Owner, e.ExpiresAt.UTC().Format(time.RFC3339Nano))
}
