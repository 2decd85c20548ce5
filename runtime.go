package hitch

import (
	"cmp"
	"context"
	"log/slog"
	"runtime"
	"time"

	"github.com/hitch-dev/hitch/approval"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/engine"
	"github.com/hitch-dev/hitch/internal/node"
	"github.com/hitch-dev/hitch/internal/retention"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/secret"
	"github.com/hitch-dev/hitch/sessions"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/triggers"
)

// Reconciliation settles an uncertain call from outside the run.
type Reconciliation = hitchtype.Reconciliation

// Errors of the runtime's commands.
var (
	// ErrRunnerBusy: a command waited CommandWait for the run's live runner
	// and was refused; it is not applied, then or later.
	ErrRunnerBusy = engine.ErrRunnerBusy
	// ErrUnknownAgent: the run's agent name and version are not registered
	// with this runtime.
	ErrUnknownAgent = engine.ErrUnknownAgent
	// ErrNotUncertain: the call named by Reconcile is not an uncertain
	// effect.
	ErrNotUncertain = engine.ErrNotUncertain
	// ErrReconciled: the call was already reconciled.
	ErrReconciled = engine.ErrReconciled
	// ErrUnknownCall: the run has no call with that id.
	ErrUnknownCall = engine.ErrUnknownCall
	// ErrNotFound: no run has that id.
	ErrNotFound = store.ErrNotFound
	// ErrBadCursor: RunsParams.After is not a cursor Runs returned.
	ErrBadCursor = store.ErrBadCursor
	// ErrEnded: the run has ended; a command that needs a live run is
	// refused.
	ErrEnded = store.ErrEnded
	// ErrNoApproval: the call does not wait for an approval.
	ErrNoApproval = engine.ErrNoApproval
	// ErrAnswered: the approval request was already answered.
	ErrAnswered = engine.ErrAnswered
	// ErrApprovalExpired: the approval request passed its deadline; a late
	// answer is refused.
	ErrApprovalExpired = engine.ErrApprovalExpired
	// ErrDeniedAtAnswer: the grant was recorded, but the policy, asked
	// again at the answer, denied the call; the model is told and the run
	// goes on without it.
	ErrDeniedAtAnswer = engine.ErrDeniedAtAnswer
	// ErrCorrupt: a run's journal has a missing position, so it is not
	// replayed.
	ErrCorrupt = engine.ErrCorrupt
)

// PendingApproval is an approval request waiting for an answer.
type PendingApproval = hitchtype.PendingApproval

// Config configures a Runtime.
type Config struct {
	// Store keeps runs and journals. Required.
	Store store.Store
	// Agents are the definitions this runtime can drive. A stored run
	// continues only under the name and version it started with.
	Agents []*Agent
	// Node names this process in leases. Default: host name and pid.
	Node string
	// LeaseTTL is how long a runner's lease lasts without renewal; it is
	// renewed every third of it. Default 30s; 10ms to 10m.
	LeaseTTL time.Duration
	// ForceSettleGrace is how long a cancelled run's runner may take to
	// settle before it lets its lease lapse. Default 60s; 1s to 1h.
	ForceSettleGrace time.Duration
	// CancelPoll is how often a runner looks for cancel requests made by
	// other processes. Default 1s; 10ms to 1m.
	CancelPoll time.Duration
	// MaxRunners bounds the runs this runtime drives at once: its runs in
	// flight. A run waiting on its model costs a goroutine and its
	// transcript, so a node's memory, not its CPU, sets it (docs/defaults.md
	// gives the measured cost a run). A run is claimed only once a slot is
	// held for it; on a full node Start leaves the run queued and returns
	// at once. Default DefaultMaxRunners; 1 to 100000.
	MaxRunners int
	// StepConcurrency bounds the runs doing a step's CPU work at once
	// (folding the journal, building a model request, staging entries). A
	// run waiting on its model, a commit, a timer, a policy, a hook or a
	// tool body holds no slot, so the bound keeps only a few runners ready
	// to run and a start or a stream gets a core soon however many runs
	// are in flight. Default DefaultStepsPerCore × GOMAXPROCS; 1 to
	// 100000.
	StepConcurrency int
	// FollowBuffer bounds the entries a follower of a run (Follow, an
	// event stream) may leave unread before it is cut with
	// ErrFollowerBehind. Default DefaultFollowBuffer; 1 to 100000.
	FollowBuffer int
	// FollowPoll is how often the one reader of a followed run reads its
	// journal when this runtime has not committed to it: the bound on how
	// late a follower sees another node's commits. Default
	// DefaultFollowPoll; 10ms to 1m.
	FollowPoll time.Duration
	// ClaimBatch bounds the due runs one pass of the sweeper claims, so that
	// the nodes of a store each take a share of a backlog. Default
	// DefaultClaimBatch; 1 to 1000.
	ClaimBatch int
	// LeaderTTL is how long a leadership won by Lead lasts without
	// re-election; it is re-elected every third of it, and trusted until a
	// fifth of it before it could run out. Default 15s; 10ms to 10m.
	LeaderTTL time.Duration
	// Retention is how long a settled family (every run terminal) is kept
	// after its last change; then the leader prunes it (see Lead, Prune).
	// Infinite keeps everything. Default 30 days; 1m to 100 years.
	Retention time.Duration
	// PruneEvery is how often the leader prunes. Default 1m; 10ms to 24h.
	PruneEvery time.Duration
	// PruneBatch bounds the families, and the expired session keys, one
	// prune transaction deletes. Default 100; 1 to 1000.
	PruneBatch int
	// OnLeader, if set, sees who leads (see Lead) after Lead's first
	// attempt and whenever that changes as this node sees it: Node while
	// this node leads, another node's name, or "" when none is known (an
	// attempt failed, or Lead stopped). It runs on the election's
	// goroutine: keep it quick.
	OnLeader func(leader string)
	// Prices override or add model prices (USD per million tokens) to the
	// built-in list, for budgets and reported costs.
	Prices model.Prices
	// Sessions configures sessions (see Runtime.Sessions).
	Sessions sessions.Config
	// Triggers configures trigger bindings and their dispatcher (see
	// Runtime.Triggers, RunTriggers).
	Triggers triggers.Config
	// OnEvent, if set, sees progress as it happens: every batch of journal
	// entries once durable, and model text deltas. It runs on the run's
	// goroutine: keep it quick.
	OnEvent func(Event)
	// Secrets are the values that must never be written down. Each is
	// replaced by [secret:NAME] (see package secret) in every journal
	// entry before it is staged — a run's or a session's, whoever wrote
	// it — and in a session's metadata and a trigger's definition, so
	// neither the store nor a model's context holds one; in streamed
	// deltas and background errors given to OnEvent; and in the errors
	// the runtime's commands return. Default: none.
	Secrets *secret.Redactor
	// OnStoreTiming, if set, sees how long each lease claim (op
	// TimingClaim, n the runs claimed) and each journal append (op
	// TimingAppend, n the entries of the batch) of this runtime's runners
	// took, and its error: the seam for claim and commit latency metrics
	// (see telemetry.Metrics.StoreTiming). It runs on the caller's
	// goroutine: keep it quick.
	OnStoreTiming func(op string, took time.Duration, n int, err error)
	// Logger gets the runtime's warnings: a runner that the store refused
	// because another runner holds its run now (a lost lease), with the
	// run and both lease tokens. Default: slog.Default().
	Logger *slog.Logger
}

// The operations Config.OnStoreTiming sees.
const (
	TimingClaim  = engine.TimingClaim
	TimingAppend = engine.TimingAppend
)

// Event is progress of a run.
type Event struct {
	RunID string
	// Entries are journal entries just made durable.
	Entries []store.Entry
	// Delta is streamed model text, not journaled.
	Delta string
	// Err is a transient error of a background service (the sweeper),
	// which goes on after a backoff. RunID is empty then.
	Err error
}

// Runtime drives runs on a store.
type Runtime struct {
	cfg Config
	n   *node.Node
}

// WithDefaults returns the config with every unset field set to its
// default (see Defaults).
func (c Config) WithDefaults() Config {
	if c.Node == "" {
		c.Node = node.DefaultName()
	}
	c.LeaseTTL = cmp.Or(c.LeaseTTL, DefaultLeaseTTL)
	c.ForceSettleGrace = cmp.Or(c.ForceSettleGrace, DefaultForceSettleGrace)
	c.CancelPoll = cmp.Or(c.CancelPoll, DefaultCancelPoll)
	c.MaxRunners = cmp.Or(c.MaxRunners, DefaultMaxRunners)
	c.StepConcurrency = cmp.Or(c.StepConcurrency, DefaultStepsPerCore*runtime.GOMAXPROCS(0))
	c.ClaimBatch = cmp.Or(c.ClaimBatch, DefaultClaimBatch)
	c.FollowBuffer = cmp.Or(c.FollowBuffer, DefaultFollowBuffer)
	c.FollowPoll = cmp.Or(c.FollowPoll, DefaultFollowPoll)
	c.LeaderTTL = cmp.Or(c.LeaderTTL, DefaultLeaderTTL)
	c.Retention = cmp.Or(c.Retention, DefaultRetention)
	c.PruneEvery = cmp.Or(c.PruneEvery, DefaultPruneEvery)
	c.PruneBatch = cmp.Or(c.PruneBatch, DefaultPruneBatch)
	c.Triggers = c.Triggers.WithDefaults()
	return c
}

// MaxMaxRunners is the largest Config.MaxRunners.
const MaxMaxRunners = node.MaxMaxRunners

// Open returns a runtime. It drives nothing until a run is started,
// commanded or recovered. A config with a field out of its range is
// refused with every problem named at once.
func Open(cfg Config) (*Runtime, error) {
	cfg = cfg.WithDefaults()
	agents := make([]*node.Agent, len(cfg.Agents))
	for i, a := range cfg.Agents {
		if a != nil {
			agents[i] = a.n
		}
	}
	ncfg := node.Config{Agents: agents, FollowBuffer: cfg.FollowBuffer, FollowPoll: cfg.FollowPoll,
		Sessions: cfg.Sessions, Triggers: cfg.Triggers, Leader: LeaderName, LeaderTTL: cfg.LeaderTTL, OnLeader: cfg.OnLeader,
		SweepMaxBackoff: DefaultSweepMaxBackoff,
		Retention: retention.Config{Store: cfg.Store, Retention: cfg.Retention, Batch: cfg.PruneBatch, Every: cfg.PruneEvery,
			MaxBatches: MaxPruneBatches},
		Engine: engine.Config{Store: cfg.Store, Owner: cfg.Node,
			LeaseTTL: cfg.LeaseTTL, RenewEvery: cfg.LeaseTTL / 3, CancelPoll: cfg.CancelPoll,
			ForceSettleGrace: cfg.ForceSettleGrace, AwaitPoll: 50 * time.Millisecond, MaxRunners: cfg.MaxRunners,
			StepConcurrency: cfg.StepConcurrency,
			ClaimBatch:      cfg.ClaimBatch, ClaimCooldown: DefaultClaimCooldown,
			Prices: model.DefaultPrices().With(cfg.Prices), Secrets: cfg.Secrets, OnStoreTiming: cfg.OnStoreTiming,
			Logger: cmp.Or(cfg.Logger, slog.Default())}}
	if f := cfg.OnEvent; f != nil {
		ncfg.OnEvent = func(ev node.Event) { f(Event(ev)) }
	}
	n, err := node.New(ncfg)
	if err != nil {
		return nil, err
	}
	return &Runtime{cfg: cfg, n: n}, nil
}

// NewRunID returns a fresh random run id.
func NewRunID() string { return hitchtype.NewID("run_", 10) }

// StartOption adjusts Start.
type StartOption func(*startOptions)

// startOptions are what the StartOptions set: the node's start.
type startOptions = node.Start

// MaxMetadataBytes bounds a run's metadata, as JSON.
const MaxMetadataBytes = hitchtype.MaxMetadataBytes

// WithMetadata attaches a JSON object to the run (a ticket, who asked),
// journaled with its start and never sent to the model; at most
// MaxMetadataBytes as JSON.
func WithMetadata(m map[string]any) StartOption { return func(p *startOptions) { p.Metadata = m } }

// MaxRunIDBytes bounds a run id.
const MaxRunIDBytes = hitchtype.MaxRunIDBytes

// ErrBadRunID: a run id outside the documented character set or length.
var ErrBadRunID = hitchtype.ErrBadRunID

// CheckRunID reports whether id can name a run: 1 to MaxRunIDBytes bytes of
// ASCII letters, digits and the marks . _ : -, and not "." or ".." (ids
// reach terminals, URL paths and web pages, and must pass through each
// unchanged, so nothing else is allowed).
func CheckRunID(id string) error { return hitchtype.CheckRunID(id) }

// WithID gives the run a caller-chosen id, which makes a retried start
// idempotent. The id must pass CheckRunID.
func WithID(id string) StartOption { return func(p *startOptions) { p.ID = id } }

// WithTenant starts the run for tenant t (see hitchtype.CheckTenant: 1 to
// 64 characters of a-z, 0-9, _ and -). Without it the run belongs to
// hitchtype.DefaultTenant. Its sub-agents' runs belong to the same tenant.
// Starting an existing id again returns that run whatever its tenant.
func WithTenant(t string) StartOption { return func(p *startOptions) { p.Tenant = t } }

// WithInstructions adds the caller's layer of instructions to this run,
// laid over the agent's: the caller's take precedence. They are journaled
// with the run.
func WithInstructions(s string) StartOption { return func(p *startOptions) { p.Instructions = s } }

// Detached creates the run queued and leaves it to whichever worker claims
// it first (hitch worker, or Recover), instead of driving it here.
func Detached() StartOption { return func(p *startOptions) { p.Detached = true } }

// StartResult tells what Start did: Created is false when a run with the
// id already existed (nothing new was started), and SameInput then says
// whether it was started with the same agent, version and input.
type StartResult = hitchtype.StartResult

// Start creates a run of agent on input and drives it in the background.
// With WithID, starting the same id again creates nothing: Created is false
// and SameInput says whether the input matched.
func (rt *Runtime) Start(ctx context.Context, agent *Agent, input string, opts ...StartOption) (StartResult, error) {
	o := startOf(input, opts)
	if err := node.NewID(&o.ID, "start"); err != nil {
		return StartResult{}, err
	}
	return rt.n.Start(ctx, agent.engine(), o)
}

// startOf gathers a start's options.
func startOf(input string, opts []StartOption) node.Start {
	o := node.Start{Input: input}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// Await waits until the run ends or parks waiting (for a reconciliation,
// say), and returns it. It is bounded by ctx.
func (rt *Runtime) Await(ctx context.Context, runID string) (Run, error) {
	return rt.n.Await(ctx, runID)
}

// Get returns a run as it stands.
func (rt *Runtime) Get(ctx context.Context, runID string) (Run, error) { return rt.n.Get(ctx, runID) }

// Cancel records a durable cancel request and waits up to the agent's
// command wait for the run to end. It is idempotent: cancelling an ended run
// returns it unchanged. CancelBy and CancelReason say who asked and why;
// the run's outcome journals them (the first request's, when several
// came).
func (rt *Runtime) Cancel(ctx context.Context, runID string, opts ...CancelOption) (Run, error) {
	req := store.RunRequestCancelParams{ID: runID}
	cancelOf(opts)(&req)
	return rt.n.Cancel(ctx, req)
}

// CancelOption adds to a cancel request.
type CancelOption func(*store.RunRequestCancelParams)

// CancelBy names who asks to cancel (at most 4 KiB), for the journal.
func CancelBy(name string) CancelOption { return func(p *store.RunRequestCancelParams) { p.By = name } }

// CancelReason says why (at most 4 KiB), for the journal.
func CancelReason(why string) CancelOption {
	return func(p *store.RunRequestCancelParams) { p.Reason = why }
}

// cancelOf applies opts in order.
func cancelOf(opts []CancelOption) func(*store.RunRequestCancelParams) {
	return func(p *store.RunRequestCancelParams) {
		for _, o := range opts {
			o(p)
		}
	}
}

// Reconcile settles an uncertain call — with its confirmed output, as
// failed (Error: it did not act), or as unconfirmed — and drives the run on
// in the background. A live runner that does not let go within the command
// wait gives ErrRunnerBusy.
func (rt *Runtime) Reconcile(ctx context.Context, runID string, rec Reconciliation) error {
	return rt.n.Reconcile(ctx, runID, rec)
}

// Approve grants a pending approval request with a proof from the agent's
// approvers (approval.Approvers.Check). The policy is asked the decision's
// question again first (a sub-agent start as a start, a tool call as a
// call); a grant is durable, so the call is dispatched even after a crash,
// without asking again. A denial at the answer is recorded, the model is
// told, and Approve returns ErrDeniedAtAnswer. Refusals:
// approval.ErrNoApprovers and the proof errors of the approval package,
// ErrApprovalExpired, ErrAnswered, ErrNoApproval, ErrRunnerBusy.
func (rt *Runtime) Approve(ctx context.Context, runID, call string, proof approval.Proof) error {
	return rt.n.Answer(ctx, runID, call, true, proof, "")
}

// Reject rejects a pending approval request; the model is told, with
// reason, and the run goes on. It takes a proof like Approve.
func (rt *Runtime) Reject(ctx context.Context, runID, call string, proof approval.Proof, reason string) error {
	return rt.n.Answer(ctx, runID, call, false, proof, reason)
}

// Approvers returns the approvers of the agent a run was started with, so
// a caller can check a credential for one of its requests.
func (rt *Runtime) Approvers(ctx context.Context, runID string) (approval.Approvers, error) {
	return rt.n.Approvers(ctx, runID)
}

// PendingApprovalsParams page the approval requests waiting for answers:
// of one tenant (Tenant; empty means every tenant), of one family (RootID),
// after a cursor, at most Limit (0 means DefaultPageLimit, at most
// MaxPageLimit).
type PendingApprovalsParams = hitchtype.PendingApprovalsParams

// Page bounds of listings that page with a cursor.
const (
	DefaultPageLimit = engine.DefaultPageLimit
	MaxPageLimit     = engine.MaxPageLimit
)

// PendingApprovals lists approval requests waiting for an answer, oldest
// run first and in call order within a run, one page at a time: next is
// the cursor of the following page, and empty after the last page. A page
// may hold fewer requests than its limit and still have a next (it read
// its bound of waiting runs that wait for something else): keep paging
// until next is empty.
// Requests past their deadline by the store's clock are left out.
func (rt *Runtime) PendingApprovals(ctx context.Context, p PendingApprovalsParams) (page []PendingApproval, next string, err error) {
	return rt.n.PendingApprovals(ctx, p)
}

// ApprovalRequest returns one approval request while it waits for an
// answer. A request past its deadline by the store's clock gives
// ErrApprovalExpired, and the lapse is journaled if it was not yet (the
// model is told, and the run goes on when a runner picks it up): a late
// answer, which looks its request up first, is the next to touch the
// run. One answered gives ErrAnswered (a rejection stays a rejection
// after the deadline); ErrNoApproval, ErrUnknownCall, ErrNotFound and
// ErrEnded as for Approve.
func (rt *Runtime) ApprovalRequest(ctx context.Context, runID, call string) (PendingApproval, error) {
	return rt.n.ApprovalRequest(ctx, runID, call)
}

// Recover claims runs that are due — queued, with an expired lease, or
// waiting with a due wake — up to the free runner slots, and drives them in
// the background. It returns how many it claimed.
func (rt *Runtime) Recover(ctx context.Context) (int, error) { return rt.n.Eng.Work(ctx) }

// RecoverAll drives every due run, not only as many as there are runner
// slots: it claims in batches as slots free up, until nothing it has not
// already claimed is due, and returns how many it claimed. The runs go on in
// the background; Wait waits for them.
func (rt *Runtime) RecoverAll(ctx context.Context) (int, error) { return rt.n.RecoverAll(ctx) }

// Sweep runs the node's sweeper, a background service, until ctx ends or
// the runtime closes: every interval it claims the runs that are due —
// queued runs, runs whose process died or gave its lease back, waiting runs
// whose wake came (approval deadlines, a parent's backstop) — and drives
// them, up to the free runner slots. When the store is a store.Notifier
// (PostgreSQL's LISTEN/NOTIFY; SQLite for the writes of this process), the
// sweeper also passes at once when a node creates a run, gives a lease
// back, wakes a parent or asks for a cancel; a notification that is lost,
// or a write of another process on a SQLite file, delays that work by one
// interval at most. A store error does not end it: it
// backs off, doubling from the interval up to DefaultSweepMaxBackoff, and
// reports the error to Config.OnEvent. It returns nil when stopped.
func (rt *Runtime) Sweep(ctx context.Context, every time.Duration) error {
	return rt.n.Sweep(ctx, every)
}

// LeaderName is the leadership Lead holds in the store.
const LeaderName = "hitch.maintenance"

// Lead runs the node's leader election, a background service, until ctx
// ends or the runtime closes: among all the nodes of a store that run it,
// one at a time leads (IsLeader), for periodic work that must not run on
// every node at once. It attempts at once and then every third of
// Config.LeaderTTL; a leader that dies is replaced once its leadership runs
// out, and one that stops resigns so another takes over at its next
// attempt. A store error does not end it (it is reported to
// Config.OnEvent); the leadership's trust lapses on its own. While this
// node leads, it prunes every Config.PruneEvery what Config.Retention
// lets go (see Prune), at most MaxPruneBatches batches a pass. It returns
// nil when stopped. Only one Lead may run at a time on a runtime.
func (rt *Runtime) Lead(ctx context.Context) error { return rt.n.Lead(ctx) }

// Node is the name this runtime gives itself in leases and leaderships
// (Config.Node).
func (rt *Runtime) Node() string { return rt.cfg.Node }

// IsLeader reports whether this node leads now: Lead runs, its last
// attempt won the leadership, and less than Config.LeaderTTL less a fifth
// of it has passed on this node's clock since that attempt was sent — the
// leadership in the store cannot have run out yet, so no two nodes both
// report true.
func (rt *Runtime) IsLeader() bool { return rt.n.Leader.IsLeader() }

// Wait waits, bounded by ctx, until the runtime drives no run: each has
// ended, parked or lost its lease. Unlike Close it lets them finish.
func (rt *Runtime) Wait(ctx context.Context) error { return rt.n.Eng.Wait(ctx) }

// ErrNoWorkspace: the run's agent has no workspace to grant roots in.
var ErrNoWorkspace = engine.ErrNoWorkspace

// GrantRoot grants an existing directory to one run's workspace, as an
// extra root its tools may use, and journals the grant; a recovered run
// has it again. Granting a root twice is a no-op.
func (rt *Runtime) GrantRoot(ctx context.Context, runID, path, by string) error {
	return rt.n.ChangeRoot(ctx, runID, path, by, false)
}

// RevokeRoot takes a granted root back from a run's workspace.
func (rt *Runtime) RevokeRoot(ctx context.Context, runID, path, by string) error {
	return rt.n.ChangeRoot(ctx, runID, path, by, true)
}

// Roots lists the roots granted to a run, in the order granted (the
// workspace's default root is not listed).
func (rt *Runtime) Roots(ctx context.Context, runID string) ([]string, error) {
	return rt.n.Eng.Roots(ctx, runID)
}

// Journal returns a run's entries after position after, at most limit.
func (rt *Runtime) Journal(ctx context.Context, runID string, after int64, limit int) ([]store.Entry, error) {
	return rt.n.Journal(ctx, runID, after, limit)
}

// Close stops the runtime gracefully. It claims no new run, lets the model
// calls and tool bodies already started finish until ctx ends, journals
// their results, and parks each run before its next step, giving its lease
// back so another process resumes it at once. What is still running when
// ctx ends is abandoned: those runs are recovered once their leases expire,
// and Close returns ctx's error. DefaultDrainWindow is a good bound.
func (rt *Runtime) Close(ctx context.Context) error { return rt.n.Close(ctx) }

// RunsParams filter and page Runs (see hitchtype.RunsParams); Limit 0
// means DefaultPageLimit, at most MaxPageLimit.
type RunsParams = hitchtype.RunsParams

// Runs lists runs newest first (by creation time, then id), one page at a
// time: next is the cursor of the following page, and empty when this
// page is the last (a full page may be followed by an empty one). Paging
// never lists a run twice, and reaches every run that existed when the
// first page was read, however many are started meanwhile.
func (rt *Runtime) Runs(ctx context.Context, p RunsParams) (page []Run, next string, err error) {
	return rt.n.Runs(ctx, p)
}

// RunCounts counts runs by status, of one tenant or, with tenant "", of
// every tenant. Statuses without runs are absent.
func (rt *Runtime) RunCounts(ctx context.Context, tenant string) (map[hitchtype.Status]int, error) {
	return rt.n.RunCounts(ctx, tenant)
}

// RunCountsFor counts runs by status among those p's filters keep (its
// After and Limit are ignored). Statuses without runs are absent.
func (rt *Runtime) RunCountsFor(ctx context.Context, p RunsParams) (map[hitchtype.Status]int, error) {
	return rt.n.RunCountsFor(ctx, p)
}
