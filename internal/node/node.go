// Package node assembles what a runtime runs on one node: the engine, the
// agents it drives and the services around it (sessions, triggers,
// followers, the leader elector and the pruner), wired to each other once.
// The root package's Runtime is its facade.
package node

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/hitch-dev/hitch/approval"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/hook"
	"github.com/hitch-dev/hitch/internal/engine"
	"github.com/hitch-dev/hitch/internal/follow"
	"github.com/hitch-dev/hitch/internal/retention"
	"github.com/hitch-dev/hitch/internal/session"
	"github.com/hitch-dev/hitch/internal/trigger"
	"github.com/hitch-dev/hitch/internal/usage"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/secret"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/tool/builtin"
)

// Agent is an agent a node drives: its engine definition, the approvers
// of its requests, and the agents it delegates to.
type Agent struct {
	Eng       *engine.Agent
	Approvers approval.Approvers
	Subs      []*Agent
	// Def is the public definition the agent was built from, handed back
	// as it was given.
	Def any
}

// Event is progress of a run, or a background service's error (RunID
// empty then).
type Event struct {
	RunID   string
	Entries []store.Entry
	Delta   string
	Err     error
}

// Config configures a Node.
type Config struct {
	// Engine configures the engine; New sets its Agents, Models, OnCommit,
	// OnDelta and RunContext.
	Engine engine.Config
	// Agents are the agents the node drives, sub-agents below them.
	Agents []*Agent
	// FollowBuffer and FollowPoll configure the followers' readers.
	FollowBuffer int
	FollowPoll   time.Duration
	// Sessions and Triggers configure those services.
	Sessions hitchtype.SessionConfig
	Triggers hitchtype.TriggerConfig
	// Leader names the leadership the elector holds; LeaderTTL its length.
	Leader    string
	LeaderTTL time.Duration
	OnLeader  func(leader string)
	// Retention configures the pruner; New sets IsLeader and OnError.
	Retention retention.Config
	// SweepMaxBackoff bounds the waits of the sweeper and the dispatcher
	// after store errors.
	SweepMaxBackoff time.Duration
	// OnEvent, if set, sees every batch of entries made durable, model
	// text deltas and background errors, with no secret value in them.
	OnEvent func(Event)
}

// Node is the engine and its services, wired.
type Node struct {
	cfg     Config
	Eng     *engine.Engine
	Leader  *engine.Elector
	Sess    *session.Service
	Pruner  *retention.Pruner
	Usage   usage.Reader
	Trig    *trigger.Service
	Follow  *follow.Hub
	agents  map[string]*Agent
	parents map[string]*Agent
}

// New assembles a node and starts the services every runtime runs: the
// followers' hub and the session mover.
func New(cfg Config) (*Node, error) {
	if err := cfg.check(); err != nil {
		return nil, fmt.Errorf("open runtime: %w", err)
	}
	n := &Node{cfg: cfg, agents: map[string]*Agent{}, parents: map[string]*Agent{}}
	for _, a := range cfg.Agents {
		if err := n.register(a, nil); err != nil {
			return nil, err
		}
	}
	ecfg := cfg.Engine
	ecfg.Agents = func(name string, version int) (*engine.Agent, bool) {
		a, ok := n.agents[key(name, version)]
		if !ok {
			return nil, false
		}
		return a.Eng, true
	}
	ecfg.Models = func(name string) (model.Model, bool) { return modelNamed(cfg.Agents, name) }
	n.Follow = follow.New(follow.Config{Store: ecfg.Store, Buffer: cfg.FollowBuffer, Poll: cfg.FollowPoll, Page: store.DefaultReadLimit})
	_ = n.Follow.Start(context.Background()) // a new service: cannot be running
	ecfg.OnCommit = func(id string, _ []store.Entry) { n.Follow.Notify(id) }
	if f := cfg.OnEvent; f != nil {
		if !ecfg.Secrets.Empty() {
			f = redactEvents(ecfg.Secrets, f)
		}
		ecfg.OnCommit = func(id string, es []store.Entry) {
			n.Follow.Notify(id)
			f(Event{RunID: id, Entries: es})
		}
		ecfg.OnDelta = func(id, d string) { f(Event{RunID: id, Delta: d}) }
		n.cfg.OnEvent = f
	}
	n.openTriggers(&ecfg)
	if err := n.openSessions(&ecfg); err != nil {
		return nil, fmt.Errorf("open runtime: %w", err)
	}
	n.Eng = engine.New(ecfg)
	n.Sess.SetEngine(n.Eng)
	_ = n.Sess.Start(context.Background()) // a new service: cannot be running
	n.Leader = n.Eng.NewElector(cfg.Leader, cfg.LeaderTTL, cfg.LeaderTTL/5, n.onError("lead"), cfg.OnLeader)
	rcfg := cfg.Retention
	rcfg.IsLeader, rcfg.OnError = n.Leader.IsLeader, n.onError("retention")
	n.Pruner = retention.New(rcfg)
	n.Usage = usage.Reader{Store: ecfg.Store, Family: n.Eng.Family,
		Limits: func(agent string, version int) (hitchtype.Limits, bool) {
			a, ok := n.agents[key(agent, version)]
			if !ok {
				return hitchtype.Limits{}, false
			}
			return a.Eng.Limits, true
		}}
	return n, nil
}

// DefaultName names a node whose config names none: its host, its pid and
// a random suffix, so two processes never share a name.
func DefaultName() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hitchtype.NewID("", 3))
}

// Bounds of the Config, as in the defaults table.
const (
	minLeaseTTL, maxLeaseTTL                 = 10 * time.Millisecond, 10 * time.Minute
	minForceSettleGrace, maxForceSettleGrace = time.Second, time.Hour
	minCancelPoll, maxCancelPoll             = 10 * time.Millisecond, time.Minute
	maxFollowBuffer                          = 100000
	// MaxMaxRunners is the largest Engine.MaxRunners.
	MaxMaxRunners = 100000
)

// check reports every problem of a config with defaults applied, each
// naming its field of the runtime's Config.
func (c Config) check() error {
	var errs []error
	between := func(field string, v, lo, hi time.Duration) {
		if v < lo || v > hi {
			errs = append(errs, fmt.Errorf("out of range: Config.%s is %s, want %s to %s", field, v, lo, hi))
		}
	}
	e, r := c.Engine, c.Retention
	if e.Store == nil {
		errs = append(errs, errors.New("no store: Config.Store is required"))
	}
	between("LeaseTTL", e.LeaseTTL, minLeaseTTL, maxLeaseTTL)
	between("ForceSettleGrace", e.ForceSettleGrace, minForceSettleGrace, maxForceSettleGrace)
	between("CancelPoll", e.CancelPoll, minCancelPoll, maxCancelPoll)
	between("LeaderTTL", c.LeaderTTL, minLeaseTTL, maxLeaseTTL)
	between("FollowPoll", c.FollowPoll, minCancelPoll, maxCancelPoll)
	if c.FollowBuffer < 1 || c.FollowBuffer > maxFollowBuffer {
		errs = append(errs, fmt.Errorf("out of range: Config.FollowBuffer is %d, want 1 to %d", c.FollowBuffer, maxFollowBuffer))
	}
	if r.Retention != hitchtype.Infinite {
		between("Retention", r.Retention, time.Minute, 100*365*24*time.Hour)
	}
	between("PruneEvery", r.Every, 10*time.Millisecond, 24*time.Hour)
	if r.Batch < 1 || r.Batch > store.MaxPruneLimit {
		errs = append(errs, fmt.Errorf("out of range: Config.PruneBatch is %d, want 1 to %d", r.Batch, store.MaxPruneLimit))
	}
	if e.MaxRunners < 1 || e.MaxRunners > MaxMaxRunners {
		errs = append(errs, fmt.Errorf("out of range: Config.MaxRunners is %d, want 1 to %d", e.MaxRunners, MaxMaxRunners))
	}
	if e.StepConcurrency < 1 || e.StepConcurrency > MaxMaxRunners {
		errs = append(errs, fmt.Errorf("out of range: Config.StepConcurrency is %d, want 1 to %d", e.StepConcurrency, MaxMaxRunners))
	}
	if e.ClaimBatch < 1 || e.ClaimBatch > store.MaxListLimit {
		errs = append(errs, fmt.Errorf("out of range: Config.ClaimBatch is %d, want 1 to %d", e.ClaimBatch, store.MaxListLimit))
	}
	if err := c.Triggers.Validate(); err != nil {
		errs = append(errs, err)
	}
	for i, a := range c.Agents {
		if a == nil {
			errs = append(errs, fmt.Errorf("no agent: Config.Agents[%d] is nil", i))
		}
	}
	return errors.Join(errs...)
}

// onError reports a background service's error, named by op, to OnEvent;
// nil without one.
func (n *Node) onError(op string) func(error) {
	f := n.cfg.OnEvent
	if f == nil {
		return nil
	}
	return func(err error) { f(Event{Err: fmt.Errorf("%s: %w", op, err)}) }
}

// register registers a and the agents below it; parent declared a.
func (n *Node) register(a, parent *Agent) error {
	k := key(a.Eng.Name, a.Eng.Version)
	if have, dup := n.agents[k]; dup {
		if have == a {
			return nil // the same sub-agent under two parents
		}
		return fmt.Errorf("open runtime: agent %s version %d is registered twice", a.Eng.Name, a.Eng.Version)
	}
	n.agents[k] = a
	if parent != nil {
		n.parents[k] = parent
	}
	for _, c := range a.Subs {
		if err := n.register(c, a); err != nil {
			return err
		}
	}
	return nil
}

func key(name string, version int) string { return fmt.Sprintf("%s@%d", name, version) }

// Registered reports whether the node drives a.
func (n *Node) Registered(a *engine.Agent) bool {
	_, ok := n.agents[key(a.Name, a.Version)]
	return ok
}

// Named returns the registered agent of that name and version, or its
// highest version for version 0.
func (n *Node) Named(name string, version int) (*Agent, error) {
	if version > 0 {
		if a, ok := n.agents[key(name, version)]; ok {
			return a, nil
		}
		return nil, fmt.Errorf("%w: %s version %d", engine.ErrUnknownAgent, name, version)
	}
	var best *Agent
	for _, a := range n.agents {
		if a.Eng.Name == name && (best == nil || a.Eng.Version > best.Eng.Version) {
			best = a
		}
	}
	if best == nil {
		return nil, fmt.Errorf("%w: %s", engine.ErrUnknownAgent, name)
	}
	return best, nil
}

// openSessions sets the session service up: a session moves on when a run
// of its ends.
func (n *Node) openSessions(ecfg *engine.Config) error {
	scfg := session.Config{Sessions: n.cfg.Sessions.WithDefaults(), Agent: ecfg.Agents}
	if err := scfg.Sessions.Validate(); err != nil {
		return err
	}
	if ss, ok := ecfg.Store.(session.Store); ok {
		scfg.Store = ss
	}
	n.Sess = session.New(scfg)
	if next := ecfg.OnCommit; next != nil {
		ecfg.OnCommit = func(runID string, es []store.Entry) { next(runID, es); n.Sess.OnCommit(runID, es) }
	} else {
		ecfg.OnCommit = n.Sess.OnCommit
	}
	return nil
}

// triggerWatch is what watches a binding's dispatch: the hooks of the
// agent it starts, or of the agent of the session it sends to.
func (n *Node) triggerWatch(ctx context.Context, spec hitchtype.TriggerSpec) (trigger.Watch, error) {
	name, version := spec.Agent, spec.Version
	if spec.Session != "" {
		ses, err := n.Sess.Get(ctx, spec.Session)
		if err != nil {
			return trigger.Watch{}, err
		}
		name, version = ses.Agent, ses.Version
	}
	a, err := n.Named(name, version)
	if err != nil {
		return trigger.Watch{}, err
	}
	w := trigger.Watch{Agent: a.Eng.Name, Timeout: a.Eng.Limits.HookTimeout}
	w.Hooks, _ = a.Eng.Hooks.(hook.TriggerHooks)
	return w, nil
}

// openTriggers sets the trigger service up: a run target's occurrence
// starts a detached run, a session target's sends a message, and a store
// that keeps bindings gives runs the schedule tools.
func (n *Node) openTriggers(ecfg *engine.Config) {
	tcfg := trigger.Config{Node: ecfg.Owner, Triggers: n.cfg.Triggers, MaxBackoff: n.cfg.SweepMaxBackoff,
		Agent: func(name string, version int) error { _, err := n.Named(name, version); return err },
		StartRun: func(ctx context.Context, spec hitchtype.TriggerSpec, id string) error {
			a, err := n.Named(spec.Agent, spec.Version)
			if err != nil {
				return err
			}
			if err := hitchtype.CheckRunID(id); err != nil {
				return fmt.Errorf("start: %w", err)
			}
			_, err = n.Start(ctx, a.Eng, Start{ID: id, Input: spec.Input, Detached: true})
			return err
		},
		Redact: func(b []byte) []byte { return n.Eng.Redact(b) },
		Send: func(ctx context.Context, sessionID, text, key string) (string, error) {
			res, err := n.Sess.Send(ctx, sessionID, text, hitchtype.SendOptions{IdempotencyKey: key})
			return res.MessageID, err
		},
		Hooks:   n.triggerWatch,
		OnError: n.onError("triggers"),
	}
	if ts, ok := ecfg.Store.(trigger.Store); ok {
		tcfg.Store = ts
		ecfg.RunContext = func(ctx context.Context) context.Context {
			return builtin.WithScheduler(ctx, n.Trig.Scheduler())
		}
	}
	n.Trig = trigger.New(tcfg)
}

// Start are a run's start options, checked but for the tenant and the
// metadata.
type Start struct {
	ID, Tenant, Input, Instructions string
	Detached                        bool
	Metadata                        map[string]any
}

// Start starts a run of agent a.
func (n *Node) Start(ctx context.Context, a *engine.Agent, o Start) (hitchtype.StartResult, error) {
	if a == nil {
		return hitchtype.StartResult{}, errors.New("start: agent is nil")
	}
	if !n.Registered(a) {
		return hitchtype.StartResult{}, fmt.Errorf("start: %w: %s version %d (add it to Config.Agents)", engine.ErrUnknownAgent, a.Name, a.Version)
	}
	if o.Tenant != "" {
		if err := hitchtype.CheckTenant(o.Tenant); err != nil {
			return hitchtype.StartResult{}, fmt.Errorf("start: WithTenant: %w", err)
		}
	}
	p := engine.StartParams{ID: o.ID, Tenant: o.Tenant, Input: o.Input, Instructions: o.Instructions, Detached: o.Detached}
	if len(o.Metadata) > 0 {
		meta, err := json.Marshal(o.Metadata)
		if err != nil {
			return hitchtype.StartResult{}, fmt.Errorf("start: WithMetadata: %w", err)
		}
		if len(meta) > hitchtype.MaxMetadataBytes {
			return hitchtype.StartResult{}, fmt.Errorf("start: WithMetadata: %d bytes as JSON, more than %d", len(meta), hitchtype.MaxMetadataBytes)
		}
		p.Metadata = meta
	}
	res, err := n.Eng.Start(ctx, a, p)
	if err != nil {
		return hitchtype.StartResult{}, n.cfg.Engine.Secrets.Error(fmt.Errorf("start: %w", err))
	}
	return Result(res)
}

// Result turns what the engine started or forked into a StartResult.
func Result(res engine.StartResult) (hitchtype.StartResult, error) {
	run, err := store.RunOf(res.Run)
	if err != nil {
		return hitchtype.StartResult{}, err
	}
	return hitchtype.StartResult{Run: run, Created: res.Created, SameInput: res.SameInput}, nil
}

// Answer approves or rejects an approval request with proof.
func (n *Node) Answer(ctx context.Context, runID, call string, approve bool, proof approval.Proof, reason string) error {
	op := "approve"
	if !approve {
		op = "reject"
	}
	a, err := n.agentOf(ctx, runID)
	if err != nil {
		return fmt.Errorf("%s %s %s: %w", op, runID, call, err)
	}
	approvers := n.approversOf(a)
	err = n.Eng.AnswerApproval(ctx, runID, engine.ApprovalAnswerParams{
		Call: call, Approve: approve, By: proof.Approver, Reason: reason,
		Verify: func(requirement string, now time.Time) error {
			if approvers == nil {
				return approval.ErrNoApprovers
			}
			return approvers.Verify(proof, requirement, now)
		},
	}, a.Eng.Limits.CommandWait)
	if err != nil {
		return fmt.Errorf("%s %s %s: %w", op, runID, call, err)
	}
	return nil
}

// agentOf returns the registered agent a run was started with.
func (n *Node) agentOf(ctx context.Context, runID string) (*Agent, error) {
	r, err := n.cfg.Engine.Store.RunGet(ctx, runID)
	if err != nil {
		return nil, err
	}
	a, ok := n.agents[key(r.Agent, r.Version)]
	if !ok {
		return nil, fmt.Errorf("%w: %s version %d", engine.ErrUnknownAgent, r.Agent, r.Version)
	}
	return a, nil
}

// Approvers returns the approvers of the agent a run was started with.
func (n *Node) Approvers(ctx context.Context, runID string) (approval.Approvers, error) {
	a, err := n.agentOf(ctx, runID)
	if err != nil {
		return nil, err
	}
	if ap := n.approversOf(a); ap != nil {
		return ap, nil
	}
	return nil, approval.ErrNoApprovers
}

// approversOf returns an agent's approvers; a sub-agent without its own
// takes its parent's.
func (n *Node) approversOf(a *Agent) approval.Approvers {
	for i := 0; a != nil && i < 17; i++ {
		if a.Approvers != nil {
			return a.Approvers
		}
		a = n.parents[key(a.Eng.Name, a.Eng.Version)]
	}
	return nil
}

// CommandWait is how long a command waits for a run's live runner: its
// agent's Limits.CommandWait.
func (n *Node) CommandWait(ctx context.Context, runID string) time.Duration {
	if r, err := n.cfg.Engine.Store.RunGet(ctx, runID); err == nil {
		if a, ok := n.agents[key(r.Agent, r.Version)]; ok {
			return a.Eng.Limits.CommandWait
		}
	}
	return hitchtype.DefaultCommandWait
}

// Sweep runs the run sweeper and the session sweeper until ctx ends or
// the engine closes.
func (n *Node) Sweep(ctx context.Context, every time.Duration) error {
	if every <= 0 {
		return fmt.Errorf("sweep: interval %s: want more than 0", every)
	}
	s := n.Eng.NewSweeper(every, n.cfg.SweepMaxBackoff, n.onError("sweep"))
	if err := s.Start(ctx); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	sessions := n.Sess.NewSweeper(every)
	_ = sessions.Start(ctx) // a new sweeper: cannot be running
	n.wait(ctx)
	s.Stop()
	_ = sessions.Stop(context.Background()) // a pass ends with its context
	return nil
}

// Lead runs the leader elector and the pruner until ctx ends or the
// engine closes.
func (n *Node) Lead(ctx context.Context) error {
	if err := n.Leader.Start(ctx); err != nil {
		return fmt.Errorf("lead: %w", err)
	}
	if err := n.Pruner.Start(ctx); err != nil {
		n.Leader.Stop()
		return fmt.Errorf("lead: %w", err)
	}
	n.wait(ctx)
	_ = n.Pruner.Stop(context.Background()) // a pass ends with its context
	n.Leader.Stop()
	return nil
}

// RunTriggers runs the trigger dispatcher until ctx ends or the engine
// closes.
func (n *Node) RunTriggers(ctx context.Context) error {
	if err := n.Trig.Start(ctx); err != nil {
		return err
	}
	n.wait(ctx)
	_ = n.Trig.Stop(context.Background()) // a pass ends with its context
	return nil
}

// wait waits until ctx ends or the engine closes.
func (n *Node) wait(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-n.Eng.Closing():
	}
}

// Close stops the engine gracefully, then the services New started.
func (n *Node) Close(ctx context.Context) error {
	return errors.Join(n.Eng.Close(ctx), n.Sess.Stop(ctx), n.Follow.Stop(ctx))
}

// Runs lists a page of runs; next is the cursor of the following page
// when the page is full (limit 0: DefaultPageLimit).
func (n *Node) Runs(ctx context.Context, p hitchtype.RunsParams) (page []hitchtype.Run, next string, err error) {
	list, err := n.cfg.Engine.Store.RunList(ctx, ListParams(p))
	if err != nil {
		return nil, "", fmt.Errorf("runs: %w", err)
	}
	page = make([]hitchtype.Run, 0, len(list))
	for _, r := range list {
		run, err := store.RunOf(r)
		if err != nil {
			return nil, "", fmt.Errorf("runs: %w", err)
		}
		page = append(page, run)
	}
	if limit := cmp.Or(p.Limit, engine.DefaultPageLimit); len(list) == limit {
		next = store.RunCursor(list[len(list)-1])
	}
	return page, next, nil
}

// ListParams are the store's parameters of a runs listing.
func ListParams(p hitchtype.RunsParams) store.RunListParams {
	return store.RunListParams{Tenant: p.Tenant, Statuses: p.Statuses, Agent: p.Agent, ParentID: p.ParentID, RootID: p.RootID,
		After: p.After, Limit: p.Limit, CreatedAfter: p.CreatedAfter, CreatedBefore: p.CreatedBefore, Text: p.Text, Reasons: p.Reasons}
}

// redactEvents wraps an event hook so that it sees no secret value: deltas
// pass through one stream per run (a value split across deltas is held
// back until it can be judged, and what is held is let out before the
// run's next entries), and background errors are redacted. Entries are
// already redacted when staged.
func redactEvents(r *secret.Redactor, f func(Event)) func(Event) {
	var mu sync.Mutex
	streams := map[string]*secret.Stream{}
	return func(ev Event) {
		ev.Err = r.Error(ev.Err)
		if ev.RunID == "" {
			f(ev)
			return
		}
		mu.Lock()
		s := streams[ev.RunID]
		if ev.Delta != "" {
			if s == nil {
				s = r.NewStream()
				streams[ev.RunID] = s
			}
			ev.Delta = s.Write(ev.Delta)
			mu.Unlock()
			if ev.Delta != "" || len(ev.Entries) > 0 {
				f(ev)
			}
			return
		}
		held := ""
		if s != nil {
			held = s.Flush()
			delete(streams, ev.RunID)
		}
		mu.Unlock()
		if held != "" {
			f(Event{RunID: ev.RunID, Delta: held})
		}
		f(ev)
	}
}
