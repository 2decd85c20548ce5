package main

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/approval"
	"github.com/hitch-dev/hitch/doctor"
	"github.com/hitch-dev/hitch/server"
	"github.com/hitch-dev/hitch/sessions"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/triggers"
)

// localBackend carries out commands with the runtime in this process, on
// the store it opens.
type localBackend struct {
	e *env

	mu   sync.Mutex
	sink func(hitch.Event) // where the runtime's events go: the printer, or a chat

	// doctor is what hitch doctor checks, set by openDoctor.
	doctor *doctor.Config
}

var _ backend = (*localBackend)(nil)

// openLocal opens the store and a runtime as a command needs them. A read
// (needStore) works on the store alone when --db is given without
// --config; otherwise the config is loaded, so the runtime knows the
// agents (runs show lists a run's own limits).
func openLocal(ctx context.Context, g *globals, n need) (*localBackend, error) {
	b := &localBackend{}
	var err error
	switch {
	case n == needStore && g.db != "" && !g.configSet:
		b.e, err = openStore(ctx, g)
		if err == nil {
			b.e.rt, err = hitch.Open(hitch.Config{Store: b.e.store, FollowPoll: followPoll})
			if err != nil {
				b.e.close()
			}
		}
	default:
		b.e, err = openRuntimeConfig(ctx, g, runtimeOpts{create: n == needNew, readOnly: n == needStore || n == needConfig,
			storeOptional: n == needConfig, onEvent: b.event, set: func(c *hitch.Config) { c.FollowPoll = followPoll }})
	}
	if err != nil {
		return nil, err
	}
	b.sink = b.progress
	return b, nil
}

func (b *localBackend) event(ev hitch.Event) {
	b.mu.Lock()
	sink := b.sink
	b.mu.Unlock()
	if sink != nil {
		sink(ev)
	}
}

// progress prints the steps of the runs this process drives while a
// command follows a run, as a remote command prints the steps it follows;
// the steps of a command that follows none (a grant, a cancel, a session's
// work) are not printed.
func (b *localBackend) progress(ev hitch.Event) {
	if b.e.out.followed() != "" {
		b.e.out.event(ev)
	}
}

func (b *localBackend) Close() { b.e.close() }

func (b *localBackend) Start(ctx context.Context, p startParams) (hitch.StartResult, error) {
	if b.e.cfg == nil {
		return hitch.StartResult{}, usageError{errors.New("no agents: pass --config")}
	}
	ag, err := b.e.cfg.Agent(p.Agent)
	if err != nil {
		return hitch.StartResult{}, usageError{err}
	}
	warnMissingKey(b.e, ag.Name())
	opts := []hitch.StartOption{hitch.WithID(p.ID)}
	if p.Detach {
		opts = append(opts, hitch.Detached())
	}
	if p.Instructions != "" {
		opts = append(opts, hitch.WithInstructions(p.Instructions))
	}
	if p.Tenant != "" {
		opts = append(opts, hitch.WithTenant(p.Tenant))
	}
	return b.e.rt.Start(ctx, ag, p.Input, opts...)
}

func (b *localBackend) Run(ctx context.Context, id string) (hitch.Run, error) {
	return b.e.rt.Get(ctx, id)
}

func (b *localBackend) Runs(ctx context.Context, p hitch.RunsParams) ([]hitch.Run, string, error) {
	return b.e.rt.Runs(ctx, p)
}

func (b *localBackend) Journal(ctx context.Context, id string, after int64, limit int) ([]store.Entry, bool, error) {
	es, err := b.e.rt.Journal(ctx, id, after, limit)
	if err != nil {
		return nil, false, err
	}
	if limit == 0 {
		limit = store.DefaultReadLimit
	}
	return es, len(es) == limit, nil
}

// followPoll is how often a local follower reads a journal that another
// process may be appending to (the runtime's Config.FollowPoll); commits of
// this process reach it at once.
const followPoll = 200 * time.Millisecond

// Follow follows through the runtime's shared reader: woken by this
// process's commits, and every followPoll for another process's.
func (b *localBackend) Follow(ctx context.Context, id string, after int64) iter.Seq2[store.Entry, error] {
	return b.e.rt.Follow(ctx, id, after)
}

// Settle drives the run here: its entries are printed by the runtime's
// events as they are journaled.
func (b *localBackend) Settle(ctx context.Context, id string, _ int64) (hitch.Run, error) {
	return b.e.rt.Await(ctx, id)
}

func (b *localBackend) Fork(ctx context.Context, id string, at int64, o hitch.ForkOptions) (hitch.StartResult, error) {
	return b.e.rt.Fork(ctx, id, at, o)
}

func (b *localBackend) Cancel(ctx context.Context, id string) (hitch.Run, error) {
	return b.e.rt.Cancel(ctx, id)
}

func (b *localBackend) Reconcile(ctx context.Context, id string, r hitch.Reconciliation) error {
	return b.e.rt.Reconcile(ctx, id, r)
}

func (b *localBackend) Wake(ctx context.Context, id string, w wakeParams) error {
	return b.e.rt.Wake(ctx, id, w.Event, w.Data, w.By)
}

func (b *localBackend) CompleteCall(ctx context.Context, id string, c hitch.Completion) error {
	return b.e.rt.CompleteCall(ctx, id, c)
}

func (b *localBackend) FamilyUsage(ctx context.Context, rootID string) (hitch.FamilyUsage, error) {
	return b.e.rt.FamilyUsage(ctx, rootID)
}

func (b *localBackend) Budget(ctx context.Context, id string) (hitch.RunBudget, error) {
	return b.e.rt.Budget(ctx, id)
}

func (b *localBackend) RunContext(ctx context.Context, id string, n int) (runContext, error) {
	var rc runContext
	run, err := b.e.rt.Get(ctx, id)
	if err != nil {
		return rc, err
	}
	if rc.Requests, rc.More, err = b.e.rt.LatestContextRequests(ctx, id, n); err != nil {
		return rc, err
	}
	rc.FamilyCost, err = b.e.rt.FamilyCost(ctx, run.RootID)
	return rc, err
}

func (b *localBackend) Waits(ctx context.Context, id string) ([]hitch.Wait, error) {
	return b.e.rt.Waits(ctx, id)
}

func (b *localBackend) Approvals(ctx context.Context, rootID, after string, limit int) ([]hitch.PendingApproval, string, error) {
	return b.e.rt.PendingApprovals(ctx, hitch.PendingApprovalsParams{RootID: rootID, After: after, Limit: limit})
}

func (b *localBackend) Approval(ctx context.Context, runID, call string) (hitch.PendingApproval, error) {
	return b.e.rt.ApprovalRequest(ctx, runID, call)
}

// Answer checks the credential here, against the approvers of the
// request's agent, then answers with the proof.
func (b *localBackend) Answer(ctx context.Context, runID, call string, cred approval.Credential, approve bool, reason string) error {
	p, err := b.e.rt.ApprovalRequest(ctx, runID, call)
	if err != nil {
		return err
	}
	if v, ok := b.e.cfg.MissingSecrets[p.Agent+"/"+cred.Name]; ok {
		return withCode(exitRefused, fmt.Errorf("approver %s cannot answer: %s is not set for this process", cred.Name, v))
	}
	approvers, err := b.e.rt.Approvers(ctx, runID)
	if err != nil {
		return withCode(exitRefused, err)
	}
	proof, err := approvers.Check(ctx, cred, p.Requirement)
	if err != nil {
		return withCode(exitRefused, err)
	}
	if approve {
		return b.e.rt.Approve(ctx, runID, call, proof)
	}
	return b.e.rt.Reject(ctx, runID, call, proof, reason)
}

func (b *localBackend) Roots(ctx context.Context, id string) ([]string, error) {
	return b.e.rt.Roots(ctx, id)
}

func (b *localBackend) Grant(ctx context.Context, id, path, by string) error {
	return b.e.rt.GrantRoot(ctx, id, path, by)
}

func (b *localBackend) Revoke(ctx context.Context, id, path, by string) error {
	return b.e.rt.RevokeRoot(ctx, id, path, by)
}

func (b *localBackend) Sessions(ctx context.Context, p sessions.ListParams) ([]sessions.Session, error) {
	list, _, err := b.e.rt.Sessions().List(ctx, p)
	return list, err
}

func (b *localBackend) Session(ctx context.Context, id string) (sessions.Session, error) {
	return b.e.rt.Sessions().Get(ctx, id)
}

func (b *localBackend) CreateSession(ctx context.Context, id, agent string) error {
	a, err := b.e.cfg.Agent(agent)
	if err != nil {
		return usageError{err}
	}
	_, _, err = b.e.rt.Sessions().Open(ctx, a, sessions.Options{ID: id})
	return err
}

func (b *localBackend) Send(ctx context.Context, id, text string, o sessions.SendOptions) (sessions.SendResult, error) {
	return b.e.rt.Sessions().Send(ctx, id, text, o)
}

func (b *localBackend) Interrupt(ctx context.Context, id string) error {
	return b.e.rt.Sessions().Interrupt(ctx, id)
}

func (b *localBackend) Queue(ctx context.Context, id string) ([]sessions.QueuedMessage, error) {
	return b.e.rt.Sessions().Queue(ctx, id, 0)
}

func (b *localBackend) Edit(ctx context.Context, id, message, text string) error {
	return b.e.rt.Sessions().Edit(ctx, id, message, text)
}

func (b *localBackend) Remove(ctx context.Context, id, message string) error {
	return b.e.rt.Sessions().Remove(ctx, id, message)
}

func (b *localBackend) SessionStatus(ctx context.Context, id string) (sessions.Status, error) {
	return b.e.rt.Sessions().Status(ctx, id)
}

func (b *localBackend) SessionCost(ctx context.Context, id string) (hitch.RunningCost, error) {
	return b.e.rt.Sessions().Cost(ctx, id)
}

func (b *localBackend) AwaitSession(ctx context.Context, id string) error {
	_, err := b.e.rt.Sessions().Await(ctx, id)
	return err
}

// WatchSession sends the runtime's events to see: this process drives the
// session's submissions, so every entry it journals is one of theirs.
func (b *localBackend) WatchSession(_ context.Context, _ string, see func(store.Entry)) (func(bool), error) {
	b.mu.Lock()
	b.sink = func(ev hitch.Event) {
		for _, e := range ev.Entries {
			see(e)
		}
	}
	b.mu.Unlock()
	return func(bool) {
		b.mu.Lock()
		b.sink = nil
		b.mu.Unlock()
	}, nil
}

func (b *localBackend) Triggers(ctx context.Context, o triggers.ListOptions) ([]triggers.Trigger, error) {
	return b.e.rt.Triggers().List(ctx, o)
}

func (b *localBackend) Trigger(ctx context.Context, id string) (triggers.Trigger, error) {
	return b.e.rt.Triggers().Get(ctx, id)
}

func (b *localBackend) PauseTrigger(ctx context.Context, id string) (triggers.Trigger, error) {
	return b.e.rt.Triggers().Pause(ctx, id)
}

func (b *localBackend) ResumeTrigger(ctx context.Context, id string) (triggers.Trigger, error) {
	return b.e.rt.Triggers().Resume(ctx, id)
}

func (b *localBackend) RemoveTrigger(ctx context.Context, id string) (bool, error) {
	return b.e.rt.Triggers().Remove(ctx, id)
}

func (b *localBackend) Agents(context.Context) ([]api.Agent, error) {
	if b.e.cfg == nil {
		return nil, usageError{errors.New("no agents: pass --config")}
	}
	out := make([]api.Agent, 0, len(b.e.cfg.Agents))
	for _, a := range b.e.cfg.Agents {
		d := a.Describe()
		out = append(out, api.Agent{Name: d.Name, Version: d.Version, Model: d.Model, Description: d.Description})
	}
	slices.SortFunc(out, func(x, y api.Agent) int { return strings.Compare(x.Name, y.Name) })
	return out, nil
}

// agent is the config's agent of that name; an unknown name is not found,
// as the server's 404 is.
func (b *localBackend) agent(name string) (*hitch.Agent, error) {
	if b.e.cfg == nil {
		return nil, usageError{errors.New("no agents: pass --config")}
	}
	for _, a := range b.e.cfg.Agents {
		if a.Name() == name {
			return a, nil
		}
	}
	return nil, withCode(exitNotFound, fmt.Errorf("agent %q: %s declares no agent of that name", name, b.e.cfg.Path))
}

func (b *localBackend) Agent(_ context.Context, name string) (api.AgentDetail, error) {
	a, err := b.agent(name)
	if err != nil {
		return api.AgentDetail{}, err
	}
	return server.AgentDetail(a.Describe()), nil
}

func (b *localBackend) Preview(ctx context.Context, name string, o hitch.PreviewOptions) (api.AgentPreview, error) {
	a, err := b.agent(name)
	if err != nil {
		return api.AgentPreview{}, err
	}
	pv, err := b.e.rt.Preview(ctx, a, o)
	if err != nil {
		return api.AgentPreview{}, err
	}
	return server.AgentPreview(pv), nil
}
