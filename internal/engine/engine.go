package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/hook"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/policy"
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
	// OnCommit, if set, sees every batch of entries a runner made durable.
	// It runs on the runner's goroutine: keep it quick.
	OnCommit func(runID string, entries []store.Entry)
	// Prices turn usage into USD for budgets and outcomes.
	Prices model.Prices
	// OnDelta, if set, sees model text deltas as they stream. They are not
	// journaled; the journal keeps whole replies.
	OnDelta func(runID, delta string)
}

// Engine drives runs against one store.
type Engine struct {
	cfg   Config
	slots chan struct{}

	mu      sync.Mutex
	active  map[string]*runner
	wg      sync.WaitGroup
	closing bool
}

// New returns an engine. It starts no goroutine until a run is driven.
func New(cfg Config) *Engine {
	return &Engine{cfg: cfg, slots: make(chan struct{}, cfg.MaxRunners), active: map[string]*runner{}}
}

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
)

// StartParams start a run.
type StartParams struct {
	ID    string
	Input string
	// Instructions are the caller's layer of instructions for this run.
	Instructions string
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

// InputHash identifies what a run was started with.
func InputHash(agent string, version int, input string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00%s", agent, version, input)
	return hex.EncodeToString(h.Sum(nil))
}

// Start creates a run and drives it in the background. Starting an existing
// ID creates nothing and reports whether the input matched.
func (e *Engine) Start(ctx context.Context, a *Agent, p StartParams) (StartResult, error) {
	hash := InputHash(a.Name, a.Version, p.Input+"\x00"+p.Instructions)
	run, created, err := e.cfg.Store.RunCreate(ctx, store.RunCreateParams{
		ID: p.ID, Agent: a.Name, Version: a.Version, InputHash: hash, Budget: a.Budget,
		Entries: []store.EntryInput{entry(KindRunStarted, RunStarted{Agent: a.Name, Version: a.Version, Input: p.Input, DepthLeft: a.Limits.MaxDepth, Instructions: p.Instructions})},
	})
	if err != nil {
		return StartResult{}, fmt.Errorf("create run: %w", err)
	}
	res := StartResult{Run: run, Created: created, SameInput: run.InputHash == hash}
	if created && e.cfg.OnCommit != nil {
		if es, err := e.cfg.Store.JournalRead(ctx, store.JournalReadParams{RunID: run.ID, Limit: 1}); err == nil {
			e.cfg.OnCommit(run.ID, es)
		}
	}
	if !created || p.Detached {
		return res, nil
	}
	if err := e.Drive(ctx, run.ID); err != nil && !errors.As(err, new(*store.LeaseHeldError)) {
		return res, err
	}
	return res, nil
}

// Drive claims one run by ID and drives it in the background until it
// parks, ends or loses its lease. A run leased elsewhere gives
// *store.LeaseHeldError.
func (e *Engine) Drive(ctx context.Context, runID string) error {
	leases, err := e.cfg.Store.LeaseClaim(ctx, store.LeaseClaimParams{Owner: e.cfg.Owner, TTL: e.cfg.LeaseTTL, RunID: runID})
	if err != nil {
		return err
	}
	for _, l := range leases {
		if err := e.spawn(l, nil); err != nil {
			return err
		}
	}
	return nil
}

// Work claims due runs (expired leases, due wakes, queued runs) up to the
// free runner slots and drives them. It returns how many it claimed.
func (e *Engine) Work(ctx context.Context) (int, error) {
	free := cap(e.slots) - len(e.slots)
	if free <= 0 {
		return 0, nil
	}
	leases, err := e.cfg.Store.LeaseClaim(ctx, store.LeaseClaimParams{Owner: e.cfg.Owner, TTL: e.cfg.LeaseTTL, Limit: free})
	if err != nil {
		return 0, fmt.Errorf("claim runs: %w", err)
	}
	for _, l := range leases {
		if err := e.spawn(l, nil); err != nil {
			return 0, err
		}
	}
	return len(leases), nil
}

// spawn starts a runner for a lease. prepare, if set, runs on the runner's
// goroutine before its first step (commands use it to apply themselves).
func (e *Engine) spawn(l store.Lease, prepare func(*runner) error) error {
	e.mu.Lock()
	if e.closing {
		e.mu.Unlock()
		return ErrClosed
	}
	r := newRunner(e, l)
	e.active[l.Run.ID] = r
	e.wg.Add(1)
	e.mu.Unlock()
	// Slots bound concurrent runners; Drive and commands wait for one.
	e.slots <- struct{}{}
	go func() {
		defer e.wg.Done()
		defer func() { <-e.slots }()
		r.err = r.run(prepare)
		e.mu.Lock()
		if e.active[l.Run.ID] == r {
			delete(e.active, l.Run.ID)
		}
		e.mu.Unlock()
		close(r.done)
	}()
	return nil
}

// Await waits until the run is no longer queued or running: ended, or
// parked waiting. It returns the run as it then stands.
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
		if run.Status == hitchtype.StatusWaiting && !run.WakeAt.IsZero() {
			// A wake is due (an approval deadline, say): whoever touches
			// the run next acts on it.
			if now, err := e.cfg.Store.Now(ctx); err == nil && !now.Before(run.WakeAt) {
				if err := e.Drive(ctx, runID); err == nil {
					continue
				}
			}
		}
		if run.Status != hitchtype.StatusQueued && run.Status != hitchtype.StatusRunning && !e.familyBusy(ctx, run, 16) {
			return run, nil
		}
		if r != nil && r.err != nil && !errors.Is(r.err, errFenced) && !errors.Is(r.err, errStopped) {
			return run, r.err
		}
		{
			t := time.NewTimer(e.cfg.AwaitPoll)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return store.Run{}, ctx.Err()
			}
		}
	}
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
// once it has ended, or as it stands after the command wait.
func (e *Engine) Cancel(ctx context.Context, runID string, wait time.Duration) (store.Run, error) {
	run, err := e.cfg.Store.RunRequestCancel(ctx, runID)
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
	} else if err := e.Drive(ctx, runID); err != nil && !errors.As(err, new(*store.LeaseHeldError)) && !errors.Is(err, store.ErrEnded) {
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
	lease, err := e.claimForCommand(ctx, runID, wait)
	if err != nil {
		return err
	}
	applied := make(chan error, 1)
	err = e.spawn(lease, func(r *runner) error {
		// The journal may have moved between the check and the claim.
		if err := checkReconcile(r.st, rec.Call); err != nil {
			applied <- err
			return nil
		}
		err := r.commit(entry(KindCallReconcile, CallReconciled(rec)))
		applied <- err
		return err
	})
	if err != nil {
		return err
	}
	select {
	case err := <-applied:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
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
		leases, err := e.cfg.Store.LeaseClaim(ctx, store.LeaseClaimParams{Owner: e.cfg.Owner, TTL: e.cfg.LeaseTTL, RunID: runID})
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
func (e *Engine) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { e.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close waits for the engine's runners to park or end. Runners stop at
// their next step when ctx is done; their leases then expire and another
// node recovers them.
func (e *Engine) Close(ctx context.Context) error {
	e.mu.Lock()
	e.closing = true
	for _, r := range e.active {
		r.stop()
	}
	e.mu.Unlock()
	done := make(chan struct{})
	go func() { e.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
