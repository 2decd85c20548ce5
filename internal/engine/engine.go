package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/hook"
	"github.com/hitch-dev/hitch/internal/startstop"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/secret"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/tool"
)

// Agent is a validated agent definition, as the engine needs it.
type Agent struct {
	Name         string
	Version      int
	Model        model.Model
	Instructions string
	Tools        []tool.Tool
	Policy       policy.Policy
	Limits       Limits
	// Answer, when set, makes the final answer typed.
	Answer *AnswerSpec
	// Description tells a parent's model what this agent does, when it is
	// a sub-agent.
	Description string
	// Children are the sub-agents this agent may delegate to.
	Children []*Agent
	// Budget is the family budget a root run of this agent starts with.
	Budget *store.Budget
	// Hooks, when set, watch and shape the turn loop.
	Hooks hook.Hooks
	// Workspace, when set, gives each run its own sandbox and the tools
	// bound to it (the agent's Tools then only declare them).
	Workspace Workspace
	// Sources are tool lists that may change between turns (MCP servers).
	// Each turn offers Tools, then the sources' tools as of the turn's
	// start; a source's tool named like a tool or sub-agent is left out.
	Sources []tool.Source

	byName   map[string]tool.Tool
	children map[string]*Agent
	specs    []model.ToolSpec
	names    []string
}

// Prepare indexes the agent's tools. It must be called once before use.
func (a *Agent) Prepare() error {
	if a.Limits.HookTimeout == 0 {
		a.Limits.HookTimeout = hookTimeoutDefault
	}
	a.byName = make(map[string]tool.Tool, len(a.Tools))
	a.specs = a.specs[:0]
	a.names = a.names[:0]
	for _, t := range a.Tools {
		info := t.Info()
		if _, dup := a.byName[info.Name]; dup {
			return fmt.Errorf("tool %q is declared twice", info.Name)
		}
		a.byName[info.Name] = t
		a.specs = append(a.specs, model.ToolSpec{Name: info.Name, Description: info.Description, Schema: info.Schema})
		a.names = append(a.names, info.Name)
	}
	a.children = make(map[string]*Agent, len(a.Children))
	for _, c := range a.Children {
		if _, dup := a.byName[c.Name]; dup {
			return fmt.Errorf("sub-agent %q has the name of a tool or another sub-agent", c.Name)
		}
		a.children[c.Name] = c
		a.byName[c.Name] = subAgentTool{c}
		a.specs = append(a.specs, specOf(c))
		a.names = append(a.names, c.Name)
	}
	return nil
}

// Config configures an Engine.
type Config struct {
	Store store.Store
	// Owner names this node in leases.
	Owner string
	// Agents finds the definition a stored run continues under.
	Agents func(name string, version int) (*Agent, bool)
	// Models finds, by its name, the model a fork goes on with in place
	// of its agent's (RunStarted.Model). Nil knows none.
	Models func(name string) (model.Model, bool)
	// LeaseTTL and RenewEvery set the lease's length and renewal period.
	LeaseTTL   time.Duration
	RenewEvery time.Duration
	// CancelPoll is how often a runner checks the store for a cancel
	// request made by another process.
	CancelPoll time.Duration
	// ForceSettleGrace is how long a cancelled runner may take to settle
	// before it stops renewing its lease, so another node finalizes it.
	ForceSettleGrace time.Duration
	// AwaitPoll is how often Await polls the store for runs driven
	// elsewhere.
	AwaitPoll time.Duration
	// MaxRunners bounds the runs this engine drives at once.
	MaxRunners int
	// StepConcurrency bounds the runners doing a step's CPU work at once
	// (admit.go); waits on a model, a commit, a timer, a policy, a hook
	// or a tool body hold no slot. 0 leaves them unbounded.
	StepConcurrency int
	// ClaimBatch bounds the due runs one sweeper pass claims, so that the
	// nodes sharing a store each take a share of a backlog. 0 means
	// MaxRunners.
	ClaimBatch int
	// ClaimCooldown is the sweeper's pause after a pass that claimed a
	// full batch: short enough that a node alone drains a backlog quickly,
	// long enough that the other nodes claim their share meanwhile.
	ClaimCooldown time.Duration
	// OnCommit, if set, sees every batch of entries a runner made durable.
	// It runs on the runner's goroutine: keep it quick.
	OnCommit func(runID string, entries []store.Entry)
	// Prices turn usage into USD for budgets and outcomes.
	Prices model.Prices
	// OnDelta, if set, sees model text deltas as they stream. They are not
	// journaled; the journal keeps whole replies.
	OnDelta func(runID, delta string)
	// Secrets replaces secret values in every entry before it is staged,
	// so neither the journal nor the model's context holds one.
	Secrets *secret.Redactor
	// RunContext, if set, adds values to the context every runner (and
	// so every tool body) starts from, such as the runtime's scheduler.
	RunContext func(context.Context) context.Context
	// OnStoreTiming, if set, sees how long each lease claim
	// (op TimingClaim; n runs claimed) and each journal append (op
	// TimingAppend; n entries) took, and its error. It runs on the
	// caller's goroutine: keep it quick.
	OnStoreTiming func(op string, took time.Duration, n int, err error)
	// Logger gets the engine's warnings: a runner refused by fencing.
	// Nil logs nothing.
	Logger *slog.Logger
}

// log is the engine's logger.
func (e *Engine) log() *slog.Logger {
	if e.cfg.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return e.cfg.Logger
}

// The operations Config.OnStoreTiming sees.
const (
	TimingClaim  = "claim"
	TimingAppend = "append"
)

// Engine drives runs against one store.
type Engine struct {
	cfg   Config
	slots *slots
	// steps holds a token for each runner doing a step's CPU work; nil
	// when they are unbounded.
	steps chan struct{}
	// starved is set when a run was left for want of a slot (a start on a
	// full node, or a sweeper pass that filled every slot): the next slot
	// given back kicks the sweeper, so the run does not wait for a poll.
	starved atomic.Bool
	kick    chan struct{}
	// closed is closed when Close begins: nothing new is claimed.
	closed chan struct{}

	mu      sync.Mutex
	active  map[string]*runner
	wg      sync.WaitGroup
	closing bool
	// keeperStop stops the lease keeper; nil while it does not run
	// (keeper.go).
	keeperStop context.CancelFunc
}

// New returns an engine. It starts no goroutine until a run is driven.
func New(cfg Config) *Engine {
	e := &Engine{cfg: cfg, slots: newSlots(cfg.MaxRunners), kick: make(chan struct{}, 1),
		closed: make(chan struct{}), active: map[string]*runner{}}
	if cfg.StepConcurrency > 0 {
		e.steps = make(chan struct{}, cfg.StepConcurrency)
	}
	return e
}

// giveSlot gives a runner slot back, and kicks the sweeper when a run
// waits for one.
func (e *Engine) giveSlot() {
	e.slots.give(1)
	if e.starved.CompareAndSwap(true, false) {
		select {
		case e.kick <- struct{}{}:
		default:
		}
	}
}

// InFlight is how many runs the engine drives now.
func (e *Engine) InFlight() int { return e.slots.inUse() }

// Errors of the engine's commands.
var (
	ErrRunnerBusy   = errors.New("runner busy")
	ErrUnknownAgent = errors.New("agent is not registered")
	ErrClosed       = errors.New("engine is closed")
	ErrNotUncertain = errors.New("call is not uncertain")
	ErrReconciled   = errors.New("call is already reconciled")
	ErrUnknownCall  = errors.New("no such call")
	errFenced       = errors.New("lease lost")
	errEnded        = store.ErrEnded
	// errNoSlot: every runner slot is taken; the run is left as it was,
	// due, for this node's sweeper or another node to drive.
	errNoSlot = errors.New("no free runner slot")
)

// StartParams start a run.
type StartParams struct {
	ID string
	// Tenant owns the run; empty means hitchtype.DefaultTenant.
	Tenant string
	Input  string
	// Instructions are the caller's layer of instructions for this run.
	Instructions string
	// Metadata is the caller's JSON object, journaled with the run.
	Metadata json.RawMessage
	// Detached leaves the new run queued for any worker instead of
	// driving it here.
	Detached bool
}

// StartResult tells what Start did.
type StartResult struct {
	Run store.Run
	// Created is false when a run with the ID already existed.
	Created bool
	// SameInput, for an existing run, says whether it was started with the
	// same agent, version and input.
	SameInput bool
}

// started is the first entry of a run Start creates.
func (a *Agent) started(p StartParams) RunStarted {
	return RunStarted{Agent: a.Name, Version: a.Version, Input: p.Input, DepthLeft: a.Limits.MaxDepth, Instructions: p.Instructions, Metadata: p.Metadata}
}

// InputHash identifies what a run was started with.
func InputHash(agent string, version int, input string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00%s", agent, version, input)
	return hex.EncodeToString(h.Sum(nil))
}

// Start creates a run and drives it in the background when a runner slot is
// free; on a full node it leaves the run queued, for this node's sweeper or
// another node, and returns at once. Once the run is created, Start
// succeeds: a claim that fails leaves the run queued too. Starting an existing ID creates
// nothing and reports whether the input matched.
func (e *Engine) Start(ctx context.Context, a *Agent, p StartParams) (StartResult, error) {
	hash := InputHash(a.Name, a.Version, p.Input+"\x00"+p.Instructions)
	first, title, value := e.startedEntry(a.started(p))
	cp := store.RunCreateParams{
		ID: p.ID, Tenant: p.Tenant, Agent: a.Name, Version: a.Version, InputHash: hash, Budget: a.Budget,
		Entries: []store.EntryInput{first}, Title: title,
	}
	// A run this node drives at once is created leased to it, in the same
	// write, sparing the claim that would follow. Without a free slot it is
	// created queued, and started below leaves it for the sweeper.
	leased := !p.Detached && !e.isClosing() && e.slots.take(1) == 1
	if leased {
		cp.Lease = &store.CreateLease{Owner: e.cfg.Owner, TTL: e.cfg.LeaseTTL}
	}
	run, created, err := e.cfg.Store.RunCreate(ctx, cp)
	if err != nil {
		if leased {
			e.giveSlot()
		}
		return StartResult{}, fmt.Errorf("create run: %w", err)
	}
	res := StartResult{Run: run, Created: created, SameInput: run.InputHash == hash}
	if !leased || !created {
		if leased {
			e.giveSlot()
		}
		return e.started(ctx, res, 1, p.Detached), nil
	}
	// The journal is the one entry just written, stamped with the run's
	// creation time: neither OnCommit nor the runner reads it back.
	journal := []store.Entry{{RunID: run.ID, Pos: 1, Kind: first.Kind, At: run.CreatedAt, Data: first.Data}}
	if e.cfg.OnCommit != nil {
		e.cfg.OnCommit(run.ID, journal)
	}
	// On a closing engine spawn gives the lease back, leaving the run due
	// for another node, and frees the slot.
	_, _ = e.spawnGated(store.Lease{Run: run, Token: run.LeaseToken, ExpiresAt: run.LeaseExpires}, nil, true, nil,
		&born{journal: journal, budget: a.Budget, started: value})
	return res, nil
}

// started reports a created run's first n entries to OnCommit and drives
// the run unless detached.
func (e *Engine) started(ctx context.Context, res StartResult, n int, detached bool) StartResult {
	run, created := res.Run, res.Created
	e.report(ctx, res, n)
	// A retried start of a run still queued drives it: the first start may
	// have died between creating the run and claiming it.
	if detached || (!created && (!res.SameInput || run.Status != hitchtype.StatusQueued)) {
		return res
	}
	// The run is durable now: whatever keeps it from being driven here (a
	// full node, a claim the store did not answer in time, a closing
	// engine) leaves it queued for a worker, and the start has succeeded.
	_ = e.Drive(ctx, run.ID)
	return res
}

// report gives a created run's first n entries to OnCommit.
func (e *Engine) report(ctx context.Context, res StartResult, n int) {
	if !res.Created || e.cfg.OnCommit == nil {
		return
	}
	if es, err := e.cfg.Store.JournalRead(ctx, store.JournalReadParams{RunID: res.Run.ID, Limit: n}); err == nil {
		e.cfg.OnCommit(res.Run.ID, es)
	}
}

// Drive claims one run by ID and drives it in the background until it
// parks, ends or loses its lease. It takes a runner slot before the claim:
// on a full node it claims nothing and gives errNoSlot at once, and the
// run stays as it was. A run leased elsewhere gives *store.LeaseHeldError.
func (e *Engine) Drive(ctx context.Context, runID string) error {
	if e.isClosing() {
		return ErrClosed
	}
	if e.slots.take(1) == 0 {
		e.starved.Store(true)
		return errNoSlot
	}
	leases, err := e.claim(ctx, store.LeaseClaimParams{Owner: e.cfg.Owner, TTL: e.cfg.LeaseTTL, RunID: runID})
	if err != nil {
		e.giveSlot()
		return err
	}
	_, err = e.spawn(leases[0], nil, true)
	return err
}

// Work claims due runs (expired leases, due wakes, queued runs) up to the
// free runner slots, at most Config.ClaimBatch, and drives them. It returns
// how many it claimed.
func (e *Engine) Work(ctx context.Context) (int, error) {
	leases, err := e.claimDue(ctx, e.cfg.ClaimBatch)
	if err != nil {
		return 0, err
	}
	if err := e.spawnAll(leases); err != nil {
		return 0, err
	}
	return len(leases), nil
}

// WorkAll drives every due run: it claims in batches as runner slots free
// up, until a claim finds nothing due that it has not already driven. It
// returns how many runs it claimed. A run claimed twice (one that failed
// and gave its lease back, say) is given back again and not counted.
//
// The batches are claimed one after another while slots are free, and only
// then are their runners started: a node recovering thousands of runs
// reclaims them all in a few statements instead of claiming each next batch
// among the first batches' runners. The leases outlive that by far.
func (e *Engine) WorkAll(ctx context.Context) (int, error) {
	seen := map[string]bool{}
	total := 0
	var claimed []store.Lease
	start := func() error {
		err := e.spawnAll(claimed)
		total += len(claimed)
		claimed = nil
		return err
	}
	for {
		if freed := e.slots.wait(); e.slots.free() <= 0 {
			if err := start(); err != nil {
				return total, err
			}
			select {
			case <-freed:
				continue
			case <-e.closed:
				return total, ErrClosed
			case <-ctx.Done():
				return total, ctx.Err()
			}
		}
		leases, err := e.claimDue(ctx, store.MaxListLimit)
		if err != nil {
			return total, errors.Join(err, start())
		}
		fresh := len(claimed)
		for _, l := range leases {
			if seen[l.Run.ID] {
				e.giveBack(l)
				e.giveSlot()
				continue
			}
			seen[l.Run.ID] = true
			claimed = append(claimed, l)
		}
		if len(claimed) == fresh {
			return total, start()
		}
	}
}

// claimDue takes up to batch free runner slots and claims as many due
// runs; the slots it found no run for are given back. Each lease returned
// holds a slot.
func (e *Engine) claimDue(ctx context.Context, batch int) ([]store.Lease, error) {
	if e.isClosing() {
		return nil, nil
	}
	n := e.slots.take(min(max(batch, 1), store.MaxListLimit))
	if n == 0 {
		return nil, nil
	}
	leases, err := e.claim(ctx, store.LeaseClaimParams{Owner: e.cfg.Owner, TTL: e.cfg.LeaseTTL, Limit: n})
	if unused := n - len(leases); unused > 0 {
		e.slots.give(unused)
	}
	if err != nil {
		return nil, fmt.Errorf("claim runs: %w", err)
	}
	return leases, nil
}

// claim asks the store for leases and sees the request through to its
// answer even when ctx ends meanwhile (bounded by the lease TTL): a claim
// cancelled in flight may still commit, and its runs would then stay leased
// to nobody until the leases ran out. Leases answered after ctx ended are
// given back at once.
func (e *Engine) claim(ctx context.Context, p store.LeaseClaimParams) ([]store.Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.LeaseTTL)
	defer cancel()
	began := time.Now()
	leases, err := e.cfg.Store.LeaseClaim(cctx, p)
	if f := e.cfg.OnStoreTiming; f != nil {
		f(TimingClaim, time.Since(began), len(leases), err)
	}
	if err == nil && ctx.Err() != nil {
		for _, l := range leases {
			e.giveBack(l)
		}
		return nil, ctx.Err()
	}
	return leases, err
}

// spawnAll starts a runner for each lease, each holding a slot taken
// before the claim; when one cannot start, the leases left are given back
// with their slots.
//
// The runners wait until the last one is spawned: started one by one, the
// first thousands would be runnable before the rest exist, and the
// goroutine spawning them would wait its turn behind each of them.
func (e *Engine) spawnAll(leases []store.Lease) error {
	gate := make(chan struct{})
	defer close(gate)
	for i, l := range leases {
		if _, err := e.spawnGated(l, nil, true, gate, nil); err != nil {
			for _, rest := range leases[i+1:] {
				e.giveBack(rest)
				e.giveSlot()
			}
			return err
		}
	}
	return nil
}

// Closing is closed once Close has begun: the engine claims nothing new and
// its runners are draining.
func (e *Engine) Closing() <-chan struct{} { return e.closed }

func (e *Engine) isClosing() bool {
	select {
	case <-e.closed:
		return true
	default:
		return false
	}
}

// spawn starts a runner for a lease. It never waits: slot says whether
// the caller took a runner slot for it before the claim. A runner without
// one (a command on a full node) applies prepare and then leaves the run
// due for a runner with a slot. prepare, if set, runs on the runner's
// goroutine before its first step (commands use it to apply themselves).
// When the engine is closing, the lease and the slot are given back.
func (e *Engine) spawn(l store.Lease, prepare func(*runner) error, slot bool) (*runner, error) {
	return e.spawnGated(l, prepare, slot, nil, nil)
}

// born is what Start knows of a root run it has just created, leased to
// this engine: its whole journal and its family's budget limits (nil: no
// budget), of which nothing is used yet. Its runner need not read them back.
type born struct {
	journal []store.Entry
	budget  *store.Budget
	started any // what journal's run.started was encoded from, or nil
}

// spawnGated is spawn whose runner starts once gate is closed (at once
// when gate is nil). b, when set, describes a run Start just created.
func (e *Engine) spawnGated(l store.Lease, prepare func(*runner) error, slot bool, gate <-chan struct{}, b *born) (*runner, error) {
	e.mu.Lock()
	if e.closing {
		e.mu.Unlock()
		e.giveBack(l)
		if slot {
			e.giveSlot()
		}
		return nil, ErrClosed
	}
	r := newRunner(e, l)
	r.noSlot = !slot
	r.born = b
	e.active[l.Run.ID] = r
	if e.keeperStop == nil {
		e.startKeeper()
	}
	e.wg.Add(1)
	e.mu.Unlock()
	go func() {
		defer e.wg.Done()
		if gate != nil {
			<-gate
		}
		r.err = r.run(prepare)
		if cause := context.Cause(r.ctx); r.err != nil && cause != nil && !failed(cause) {
			// Ended from outside (its lease lost, a stop, a drain), the
			// runner returns whatever its work in flight returned, often a
			// cancelled read: the reason it was ended is what it reports.
			r.err = cause
		}
		if r.holdsLease() {
			// Failed, or drained for a graceful stop: give the lease back
			// so the run is due at once, here or on another node.
			e.giveBack(l)
		}
		e.mu.Lock()
		if e.active[l.Run.ID] == r {
			delete(e.active, l.Run.ID)
		}
		e.stopKeeper()
		e.mu.Unlock()
		if slot {
			e.giveSlot()
		}
		close(r.done)
	}()
	return r, nil
}

// failed reports a runner error that should reach whoever waits on the run:
// not a lost lease, a stop or a drain.
func failed(err error) bool {
	return err != nil && !errors.Is(err, errFenced) && !errors.Is(err, errStopped) && !errors.Is(err, errDrained) && !errors.Is(err, errLeft)
}

// Await waits until the run is no longer queued or running: ended, or
// parked waiting. It returns the run as it then stands. A run that is due
// and has no runner — queued, its lease expired or given back, or its wake
// come — is driven here as soon as a runner slot is free, so a run whose
// process died, or that a full node left queued, does not wait for a
// worker. A runner of this engine that fails gives its error.
func (e *Engine) Await(ctx context.Context, runID string) (store.Run, error) {
	for {
		e.mu.Lock()
		r := e.active[runID]
		e.mu.Unlock()
		if r != nil {
			select {
			case <-r.done:
			case <-ctx.Done():
				return store.Run{}, ctx.Err()
			}
		}
		run, err := e.cfg.Store.RunGet(ctx, runID)
		if err != nil {
			return store.Run{}, err
		}
		if r != nil && failed(r.err) && !run.Status.Terminal() {
			return run, r.err
		}
		var freed <-chan struct{}
		if due, err := e.due(ctx, run); err != nil {
			return store.Run{}, err
		} else if due {
			// Claimed here, or by someone else just now, or ended by
			// them meanwhile: look again rather than report a stale row.
			freed = e.slots.wait()
			err := e.Drive(ctx, runID)
			if err == nil || errors.As(err, new(*store.LeaseHeldError)) || errors.Is(err, store.ErrEnded) {
				continue
			}
			if !errors.Is(err, errNoSlot) {
				freed = nil
			}
		}
		if run.Status != hitchtype.StatusQueued && run.Status != hitchtype.StatusRunning && !e.familyBusy(ctx, run, 16) {
			return run, nil
		}
		{
			t := time.NewTimer(e.cfg.AwaitPoll)
			select {
			case <-t.C:
			case <-freed: // room to drive it now
				t.Stop()
			case <-ctx.Done():
				t.Stop()
				return store.Run{}, ctx.Err()
			}
		}
	}
}

// due reports whether a run needs a runner and has none, by the store's
// clock: queued or running with no live lease (never claimed, expired or
// given back), or waiting with its wake come (an approval deadline, say:
// whoever touches the run next acts on it).
func (e *Engine) due(ctx context.Context, run store.Run) (bool, error) {
	var at time.Time
	switch {
	case run.Status == hitchtype.StatusQueued || run.Status == hitchtype.StatusRunning:
		at = run.LeaseExpires
	case run.Status == hitchtype.StatusWaiting && !run.WakeAt.IsZero():
		at = run.WakeAt
	default:
		return false, nil
	}
	if at.IsZero() {
		return true, nil
	}
	now, err := e.cfg.Store.Now(ctx)
	if err != nil {
		return false, fmt.Errorf("read store clock: %w", err)
	}
	return !now.Before(at), nil
}

// familyBusy reports whether a run is not at rest: queued or running, or
// waiting for children of which one is still going or has ended (so the
// run is about to be woken), or whose own children are busy. A run waiting
// only on people (approvals, reconciliation) anywhere below is at rest.
func (e *Engine) familyBusy(ctx context.Context, run store.Run, depth int) bool {
	switch {
	case run.Status == hitchtype.StatusQueued || run.Status == hitchtype.StatusRunning:
		return true
	case run.Status != hitchtype.StatusWaiting || depth == 0 || run.Position < 1:
		return false
	}
	last, err := e.cfg.Store.JournalRead(ctx, store.JournalReadParams{RunID: run.ID, After: run.Position - 1, Limit: 1})
	if err != nil || len(last) != 1 || last[0].Kind != KindRunWaiting {
		return false
	}
	var w RunWaiting
	if json.Unmarshal(last[0].Data, &w) != nil || w.Reason != "children" {
		return false
	}
	for _, call := range w.Calls {
		child, err := e.cfg.Store.RunGet(ctx, childID(run.ID, call))
		if err != nil || child.Status.Terminal() || e.familyBusy(ctx, child, depth-1) {
			return true
		}
	}
	return false
}

// Cancel records a durable cancel request and makes sure a runner acts on
// it: the local runner at once, a remote one at its next poll, and a run
// with no runner by claiming it here. It is idempotent and returns the run
// once it has ended, or as it stands after the command wait. The request's
// By and Reason (the first request's, when there are several) are
// journaled in the run's outcome.
func (e *Engine) Cancel(ctx context.Context, req store.RunRequestCancelParams, wait time.Duration) (store.Run, error) {
	runID := req.ID
	run, err := e.cfg.Store.RunRequestCancel(ctx, req)
	if err != nil {
		return store.Run{}, err
	}
	if run.Status.Terminal() {
		return run, nil
	}
	e.mu.Lock()
	r := e.active[runID]
	e.mu.Unlock()
	if r != nil {
		r.requestCancel()
	} else if err := e.Drive(ctx, runID); err != nil && !errors.As(err, new(*store.LeaseHeldError)) && !errors.Is(err, store.ErrEnded) && !errors.Is(err, errNoSlot) {
		return run, err
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	got, err := e.Await(wctx, runID)
	if err != nil {
		if ctx.Err() == nil {
			return e.cfg.Store.RunGet(ctx, runID)
		}
		return store.Run{}, err
	}
	return got, nil
}

// Reconcile settles an uncertain call and drives the run on in the
// background. It waits at most wait for the run's lease; a run whose runner
// holds it longer gives ErrRunnerBusy and the command is not applied, then
// or later. Reconciling a call twice gives ErrReconciled.
func (e *Engine) Reconcile(ctx context.Context, runID string, rec Reconciliation, wait time.Duration) error {
	// Check first without the lease, so a refused command leaves no trace.
	st, err := e.foldRun(ctx, runID)
	if err != nil {
		return err
	}
	if err := checkReconcile(st, rec.Call); err != nil {
		return err
	}
	if st.ended != nil {
		return fmt.Errorf("%w: %s", store.ErrEnded, runID)
	}
	return e.command(ctx, runID, wait, driveOn, func(r *runner) (reply, err error) {
		// The journal may have moved between the check and the claim.
		if err := checkReconcile(r.st, rec.Call); err != nil {
			return err, nil
		}
		err = r.commit(entry(KindCallReconcile, CallReconciled(rec)))
		return err, err
	})
}

func checkReconcile(st *state, call string) error {
	c := st.findCall(call)
	switch {
	case c == nil:
		return fmt.Errorf("%w: %s", ErrUnknownCall, call)
	case c.reconciled:
		return fmt.Errorf("%w: %s", ErrReconciled, call)
	case !c.uncertain:
		return fmt.Errorf("%w: %s", ErrNotUncertain, call)
	}
	return nil
}

// claimForCommand takes a run's lease for a command, waiting at most wait
// for a live runner to let go.
func (e *Engine) claimForCommand(ctx context.Context, runID string, wait time.Duration) (store.Lease, error) {
	deadline := time.Now().Add(wait)
	delay := 10 * time.Millisecond
	for {
		leases, err := e.claim(ctx, store.LeaseClaimParams{Owner: e.cfg.Owner, TTL: e.cfg.LeaseTTL, RunID: runID})
		if err == nil && len(leases) == 1 {
			return leases[0], nil
		}
		var held *store.LeaseHeldError
		if err != nil && !errors.As(err, &held) {
			return store.Lease{}, err
		}
		if time.Now().After(deadline) {
			owner := ""
			if held != nil {
				owner = " (held by " + held.Owner + ")"
			}
			return store.Lease{}, fmt.Errorf("%w: run %s did not free its lease within %s%s", ErrRunnerBusy, runID, wait, owner)
		}
		t := time.NewTimer(min(delay, time.Until(deadline)+time.Millisecond))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return store.Lease{}, ctx.Err()
		}
		delay = min(2*delay, 200*time.Millisecond)
	}
}

// Wait waits, bounded by ctx, until the engine drives no run: each has
// ended, parked or lost its lease.
func (e *Engine) Wait(ctx context.Context) error { return startstop.Wait(ctx, &e.wg) }

// Close stops the engine gracefully: it claims nothing new, and lets its
// runners finish the model calls and tool bodies they have started until ctx
// ends. Each runner journals what finished, stops before its next model call
// or tool body, and gives its lease back, so another node resumes the run at
// once. Runners still going when ctx ends are abandoned: they stop without
// writing, and their leases expire. Close returns ctx's error then.
func (e *Engine) Close(ctx context.Context) error {
	e.mu.Lock()
	for _, r := range e.active {
		r.drain()
	}
	if !e.closing {
		e.closing = true
		close(e.closed) // after the drains: whoever sees it sees them
	}
	e.mu.Unlock()
	done := make(chan struct{})
	go func() { e.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	e.mu.Lock()
	n := len(e.active)
	for _, r := range e.active {
		r.stop()
	}
	e.mu.Unlock()
	// Stopped runners return within a short grace (work that ignores its
	// context is abandoned); wait for that, bounded.
	t := time.NewTimer(4 * settleGrace)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
	}
	return fmt.Errorf("close: drain cut short, %d run(s) abandoned: %w", n, ctx.Err())
}
