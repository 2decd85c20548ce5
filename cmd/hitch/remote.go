package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"os"
	"strings"
	"sync"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/approval"
	"github.com/hitch-dev/hitch/client"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/sessions"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/triggers"
)

// With --server URL (or HITCH_SERVER), commands talk to a hitch serve
// through package client instead of opening the store. The server's
// problem types map to exit codes by the one table, api.Problems
// (docs/cli.md).

const (
	serverEnv = "HITCH_SERVER"
	tokenEnv  = "HITCH_TOKEN"
)

// remoteBackend carries out commands on a hitch serve.
type remoteBackend struct {
	g   *globals
	c   *client.Client
	out *printer
}

var _ backend = (*remoteBackend)(nil)

func openRemote(g *globals) (*remoteBackend, error) {
	c, err := client.New(g.server, client.WithToken(os.Getenv(tokenEnv)))
	if err != nil {
		return nil, usageError{fmt.Errorf("--server: %w", err)}
	}
	return &remoteBackend{g: g, c: c, out: newPrinter(g.stdout, g.json)}, nil
}

func (r *remoteBackend) Close() {}

// noRoute refuses what the server offers no route for.
func noRoute(what string) error {
	return usageError{fmt.Errorf("%s cannot work with --server (the server has no route for it): run it where the store is, without --server and %s",
		what, serverEnv)}
}

// oneAgent is the server's only agent, for a command that names none.
func (r *remoteBackend) oneAgent(ctx context.Context, why string) (string, error) {
	list, err := r.c.Agents(ctx)
	if err != nil {
		return "", err
	}
	if len(list.Agents) != 1 {
		names := make([]string, 0, len(list.Agents))
		for _, ag := range list.Agents {
			names = append(names, ag.Name)
		}
		return "", usageError{fmt.Errorf("--agent: %sthe server has %d agents (%s): name one", why, len(names), strings.Join(names, ", "))}
	}
	return list.Agents[0].Name, nil
}

func (r *remoteBackend) Start(ctx context.Context, p startParams) (hitch.StartResult, error) {
	if p.Tenant != "" {
		return hitch.StartResult{}, usageError{errors.New("--tenant: with --server the run is filed under the token's tenant")}
	}
	if p.Agent == "" {
		var err error
		if p.Agent, err = r.oneAgent(ctx, ""); err != nil {
			return hitch.StartResult{}, err
		}
	}
	res, err := r.c.StartRun(ctx, api.StartRun{Agent: p.Agent, Input: p.Input, ID: p.ID, Instructions: p.Instructions})
	return r.started(ctx, p.ID, res, err)
}

// started is what a start or a fork of the run id answered. A conflict
// (the id is taken with another input, or by another run) says by which
// run, as the runtime does.
func (r *remoteBackend) started(ctx context.Context, id string, res api.StartedRun, err error) (hitch.StartResult, error) {
	if errors.Is(err, client.ErrConflict) && id != "" {
		if run, gerr := r.c.Run(ctx, id); gerr == nil {
			return hitch.StartResult{Run: runOf(run)}, nil
		}
	}
	if err != nil {
		return hitch.StartResult{}, err
	}
	return hitch.StartResult{Run: runOf(res.Run), Created: res.Created, SameInput: res.SameInput}, nil
}

func (r *remoteBackend) Run(ctx context.Context, id string) (hitch.Run, error) {
	run, err := r.c.Run(ctx, id)
	return runOf(run), err
}

func (r *remoteBackend) Runs(ctx context.Context, p hitch.RunsParams) ([]hitch.Run, string, error) {
	if p.Tenant != "" {
		return nil, "", usageError{errors.New("--tenant: with --server the token's tenant is the one listed")}
	}
	f := client.RunFilter{Agent: p.Agent, ParentID: p.ParentID, RootID: p.RootID, After: p.After, Limit: p.Limit,
		CreatedAfter: p.CreatedAfter, CreatedBefore: p.CreatedBefore, Text: p.Text}
	for _, s := range p.Statuses {
		f.Status = append(f.Status, string(s))
	}
	page, err := r.c.Runs(ctx, f)
	if err != nil {
		return nil, "", err
	}
	runs := make([]hitch.Run, 0, len(page.Runs))
	for _, run := range page.Runs {
		runs = append(runs, runOf(run))
	}
	return runs, page.Next, nil
}

func (r *remoteBackend) Journal(ctx context.Context, id string, after int64, limit int) ([]store.Entry, bool, error) {
	page, err := r.c.Journal(ctx, id, after, limit)
	if err != nil {
		return nil, false, err
	}
	es := make([]store.Entry, len(page.Entries))
	for i, e := range page.Entries {
		es[i] = entryOf(e)
	}
	return es, page.Next != nil, nil
}

func (r *remoteBackend) Follow(ctx context.Context, id string, after int64) iter.Seq2[store.Entry, error] {
	return func(yield func(store.Entry, error) bool) {
		for e, err := range r.c.Follow(ctx, id, after) {
			if !yield(entryOf(e), err) || err != nil {
				return
			}
		}
	}
}

// Settle follows the run's event stream, printing each entry, until the
// run has ended, or has parked with a run.waiting entry after after and
// nothing since.
func (r *remoteBackend) Settle(ctx context.Context, id string, after int64) (hitch.Run, error) {
	for e, err := range r.c.Follow(ctx, id, after) {
		if err != nil {
			return hitch.Run{}, err
		}
		r.out.mu.Lock()
		r.out.entry(entryOf(e))
		r.out.mu.Unlock()
		if e.Kind == hitchtype.KindRunWaiting {
			run, err := r.c.Run(ctx, id)
			if err != nil {
				return hitch.Run{}, err
			}
			if run.Status == string(hitchtype.StatusWaiting) && run.Position == e.Pos {
				return runOf(run), nil
			}
		}
	}
	return r.Run(ctx, id)
}

// await is Settle without printing: it returns once the run has ended or
// parked.
func (r *remoteBackend) await(ctx context.Context, id string) (hitch.Run, error) {
	run, err := r.c.Run(ctx, id)
	if err != nil || run.Status == string(hitchtype.StatusWaiting) || hitchtype.Status(run.Status).Terminal() {
		return runOf(run), err
	}
	for e, err := range r.c.Follow(ctx, id, run.Position) {
		if err != nil {
			return hitch.Run{}, err
		}
		if e.Kind == hitchtype.KindRunWaiting {
			if run, err = r.c.Run(ctx, id); err != nil || (run.Status == string(hitchtype.StatusWaiting) && run.Position == e.Pos) {
				return runOf(run), err
			}
		}
	}
	return r.Run(ctx, id)
}

func (r *remoteBackend) Fork(ctx context.Context, id string, at int64, o hitch.ForkOptions) (hitch.StartResult, error) {
	in := api.ForkRun{At: at, ID: o.ID, Version: o.Version, Instructions: o.Instructions, Model: o.Model, Message: o.Message}
	if o.Reply != nil {
		in.Reply = o.Reply.Text
	}
	res, err := r.c.ForkRun(ctx, id, in)
	return r.started(ctx, o.ID, res, err)
}

func (r *remoteBackend) Cancel(ctx context.Context, id string) (hitch.Run, error) {
	run, err := r.c.Cancel(ctx, id)
	return runOf(run), err
}

func (r *remoteBackend) Reconcile(ctx context.Context, id string, rec hitch.Reconciliation) error {
	_, err := r.c.Reconcile(ctx, id, api.Reconcile{Call: rec.Call, Output: rec.Output, Unconfirmed: rec.Unconfirmed, By: rec.By})
	return err
}

func (r *remoteBackend) Wake(ctx context.Context, id string, w wakeParams) error {
	_, err := r.c.Wake(ctx, id, api.Wake{Event: w.Event, Data: w.Data, By: w.By})
	return err
}

func (r *remoteBackend) CompleteCall(ctx context.Context, id string, c hitch.Completion) error {
	_, err := r.c.CompleteCall(ctx, id, c.Call, api.CompleteCall{Output: c.Output, Error: c.Error, Execute: c.Execute, By: c.By})
	return err
}

// FamilyUsage asks the server for a family's usage, which it sums as
// Runtime.FamilyUsage does.
func (r *remoteBackend) FamilyUsage(ctx context.Context, rootID string) (hitch.FamilyUsage, error) {
	f, err := r.c.FamilyUsage(ctx, rootID)
	if err != nil {
		return hitch.FamilyUsage{}, err
	}
	return hitch.FamilyUsage{Runs: f.Runs, Usage: usageOf(f.Usage), CostUSD: f.CostUSD}, nil
}

func (r *remoteBackend) Budget(ctx context.Context, id string) (hitch.RunBudget, error) {
	b, err := r.c.Budget(ctx, id)
	if err != nil {
		return hitch.RunBudget{}, err
	}
	out := hitch.RunBudget{RunID: b.RunID, RootID: b.RootID, Counters: []hitch.BudgetCounter{}}
	for _, c := range b.Counters {
		out.Counters = append(out.Counters, hitch.BudgetCounter{Scope: c.Scope, Name: c.Name, Unit: c.Unit, Limit: c.Limit, Used: c.Used, Left: c.Left})
	}
	return out, nil
}

func (r *remoteBackend) RunContext(ctx context.Context, id string, n int) (runContext, error) {
	rc, err := r.c.RunContext(ctx, id, n)
	if err != nil {
		return runContext{}, err
	}
	out := runContext{More: rc.More, FamilyCost: hitch.RunningCost{USD: rc.FamilyCost.USD, Runs: rc.FamilyCost.Runs, Live: rc.FamilyCost.Live}}
	for _, q := range rc.Requests {
		out.Requests = append(out.Requests, contextRequestOf(q))
	}
	return out, nil
}

func (r *remoteBackend) Waits(ctx context.Context, id string) ([]hitch.Wait, error) {
	ws, err := r.c.Waits(ctx, id)
	if err != nil {
		return nil, err
	}
	out := make([]hitch.Wait, 0, len(ws.Waits))
	for _, w := range ws.Waits {
		out = append(out, hitch.Wait{Kind: w.Kind, Call: w.Call, Tool: w.Tool, Event: w.Event, Until: w.Until})
	}
	return out, nil
}

func (r *remoteBackend) Approvals(ctx context.Context, rootID, after string, limit int) ([]hitch.PendingApproval, string, error) {
	page, err := r.c.Approvals(ctx, rootID, after, limit)
	if err != nil {
		return nil, "", err
	}
	out := make([]hitch.PendingApproval, 0, len(page.Approvals))
	for _, p := range page.Approvals {
		out = append(out, approvalOf(p))
	}
	return out, page.Next, nil
}

func (r *remoteBackend) Approval(ctx context.Context, runID, call string) (hitch.PendingApproval, error) {
	p, err := r.c.Approval(ctx, runID, call)
	return approvalOf(p), err
}

// Answer sends the credential to the server, which checks it against the
// agent's approvers.
func (r *remoteBackend) Answer(ctx context.Context, runID, call string, cred approval.Credential, approve bool, reason string) error {
	wire := api.Credential{Name: cred.Name, Secret: cred.Secret}
	var err error
	if approve {
		_, err = r.c.Approve(ctx, runID, call, wire)
	} else {
		_, err = r.c.Reject(ctx, runID, call, wire, reason)
	}
	return err
}

func (r *remoteBackend) Roots(ctx context.Context, id string) ([]string, error) {
	roots, err := r.c.Workspace(ctx, id)
	return roots.Roots, err
}

// Grant and Revoke are recorded under the token's name.
func (r *remoteBackend) Grant(ctx context.Context, id, path, _ string) error {
	_, err := r.c.Grant(ctx, id, path)
	return err
}

func (r *remoteBackend) Revoke(ctx context.Context, id, path, _ string) error {
	_, err := r.c.Revoke(ctx, id, path)
	return err
}

func (r *remoteBackend) Sessions(ctx context.Context, p sessions.ListParams) ([]sessions.Session, error) {
	if p.Tenant != "" {
		return nil, usageError{errors.New("--tenant: with --server the token's tenant is the one listed")}
	}
	page, err := r.c.Sessions(ctx, p.After, p.Limit)
	if err != nil {
		return nil, err
	}
	out := make([]sessions.Session, 0, len(page.Sessions))
	for _, s := range page.Sessions {
		out = append(out, sessionOf(s))
	}
	return out, nil
}

func (r *remoteBackend) Session(ctx context.Context, id string) (sessions.Session, error) {
	s, err := r.c.Session(ctx, id)
	return sessionOf(s), err
}

func (r *remoteBackend) CreateSession(ctx context.Context, id, agent string) error {
	if agent == "" {
		var err error
		if agent, err = r.oneAgent(ctx, "session "+id+" is new and "); err != nil {
			return err
		}
	}
	_, err := r.c.CreateSession(ctx, api.CreateSession{Agent: agent, ID: id})
	return err
}

func (r *remoteBackend) Send(ctx context.Context, id, text string, o sessions.SendOptions) (sessions.SendResult, error) {
	res, err := r.c.Send(ctx, id, api.Send{Text: text, Mode: string(o.Mode)}, o.IdempotencyKey)
	if err != nil {
		return sessions.SendResult{}, err
	}
	return sessions.SendResult{MessageID: res.MessageID, Position: res.Position, Mode: sessions.Mode(res.Mode), Duplicate: res.Duplicate}, nil
}

func (r *remoteBackend) Interrupt(ctx context.Context, id string) error {
	_, err := r.c.Interrupt(ctx, id)
	return err
}

func (r *remoteBackend) Queue(ctx context.Context, id string) ([]sessions.QueuedMessage, error) {
	q, err := r.c.Queue(ctx, id)
	return queueOf(q.Messages), err
}

func (r *remoteBackend) Edit(ctx context.Context, id, message, text string) error {
	_, err := r.c.Edit(ctx, id, message, text)
	return err
}

func (r *remoteBackend) Remove(ctx context.Context, id, message string) error {
	_, err := r.c.Remove(ctx, id, message)
	return err
}

func (r *remoteBackend) SessionStatus(ctx context.Context, id string) (sessions.Status, error) {
	st, err := r.c.SessionStatus(ctx, id)
	if err != nil {
		return sessions.Status{}, err
	}
	return sessionStatusOf(st), nil
}

func (r *remoteBackend) SessionCost(ctx context.Context, id string) (hitch.RunningCost, error) {
	c, err := r.c.SessionCost(ctx, id)
	return hitch.RunningCost{USD: c.USD, Runs: c.Runs, Live: c.Live}, err
}

// AwaitSession returns, as sessions.Client.Await does, once the session's
// active submission has parked, or nothing is active or queued.
func (r *remoteBackend) AwaitSession(ctx context.Context, id string) error {
	for {
		s, err := r.c.Session(ctx, id)
		if err != nil {
			return err
		}
		switch {
		case s.ActiveRun != "":
			run, err := r.await(ctx, s.ActiveRun)
			if err != nil {
				return err
			}
			if run.Status == hitchtype.StatusWaiting {
				return nil
			}
		case s.Queued == 0:
			return nil
		default:
			// Queued with nothing active: the server starts the next
			// submission; wait for its session entry.
			for _, err := range r.c.FollowSession(ctx, id, s.Position) {
				if err != nil {
					return err
				}
				break
			}
		}
	}
}

// WatchSession follows the session's stream for new submissions, and each
// submission's run in turn, handing their entries to see. stop(true)
// first lets the follower read on to the session's position as it is
// then, so the last submission's run is seen to its end.
func (r *remoteBackend) WatchSession(ctx context.Context, id string, see func(store.Entry)) (func(bool), error) {
	ses, err := r.c.Session(ctx, id)
	if err != nil {
		return nil, err
	}
	fctx, cancel := context.WithCancel(ctx)
	runs := make(chan string, 64)
	var mu sync.Mutex
	var last, target int64
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer close(runs)
		if ses.ActiveRun != "" {
			runs <- ses.ActiveRun
		}
		for e, err := range r.c.FollowSession(fctx, id, ses.Position) {
			if err != nil {
				if fctx.Err() == nil {
					fmt.Fprintf(r.g.stderr, "hitch: %v\n", err)
				}
				return
			}
			if e.Kind == hitchtype.KindSubmissionStarted {
				var d hitchtype.SubmissionStarted
				if json.Unmarshal(e.Data, &d) == nil && d.RunID != ses.ActiveRun {
					select {
					case runs <- d.RunID:
					case <-fctx.Done():
						return
					}
				}
			}
			mu.Lock()
			last = e.Pos
			reached := target > 0 && last >= target
			mu.Unlock()
			if reached {
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		for run := range runs {
			for e, err := range r.c.Follow(ctx, run, 0) {
				if err != nil {
					if ctx.Err() == nil {
						fmt.Fprintf(r.g.stderr, "hitch: %v\n", err)
					}
					break
				}
				see(entryOf(e))
			}
		}
	}()
	return func(rested bool) {
		end := int64(0)
		if s, err := r.c.Session(ctx, id); rested && err == nil {
			end = s.Position
		}
		mu.Lock()
		if end <= max(last, ses.Position) {
			cancel()
		} else {
			target = end
		}
		mu.Unlock()
		wg.Wait()
		cancel()
	}, nil
}

func (r *remoteBackend) Triggers(context.Context, triggers.ListOptions) ([]triggers.Trigger, error) {
	return nil, noRoute("hitch triggers list")
}

func (r *remoteBackend) Trigger(context.Context, string) (triggers.Trigger, error) {
	return triggers.Trigger{}, noRoute("hitch triggers show")
}

func (r *remoteBackend) PauseTrigger(context.Context, string) (triggers.Trigger, error) {
	return triggers.Trigger{}, noRoute("hitch triggers pause")
}

func (r *remoteBackend) ResumeTrigger(context.Context, string) (triggers.Trigger, error) {
	return triggers.Trigger{}, noRoute("hitch triggers resume")
}

func (r *remoteBackend) RemoveTrigger(context.Context, string) (bool, error) {
	return false, noRoute("hitch triggers remove")
}

// runOf turns the wire's run into the runtime's, for the printer.
func runOf(r api.Run) hitch.Run {
	out := hitch.Run{ID: r.ID, Tenant: r.Tenant, RootID: r.RootID, ParentID: r.ParentID, Agent: r.Agent, Version: r.Version,
		Status: hitchtype.Status(r.Status), Position: r.Position, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Title: r.Title}
	if f := r.ForkedFrom; f != nil {
		out.ForkedFrom = &hitchtype.ForkedFrom{Run: f.Run, Pos: f.Pos, Replay: f.Replay}
	}
	if o := r.Outcome; o != nil {
		out.Outcome = &hitch.Outcome{Status: hitchtype.Status(o.Status), Answer: o.Answer, Raw: o.Raw, Reason: o.Reason, Error: o.Error,
			Uncertain: o.Uncertain, Turns: o.Turns, Attempts: o.Attempts, CostUSD: o.CostUSD, Usage: usageOf(o.Usage)}
	}
	return out
}

func entryOf(e api.Entry) store.Entry {
	return store.Entry{RunID: e.RunID, Pos: e.Pos, Kind: e.Kind, At: e.At, Data: e.Data}
}

func approvalOf(p api.Approval) hitch.PendingApproval {
	return hitch.PendingApproval{RunID: p.RunID, RootID: p.RootID, Agent: p.Agent, Call: p.Call, Tool: p.Tool,
		Arguments: p.Arguments, Requirement: p.Requirement, Reason: p.Reason, Rule: p.Rule, ExpiresAt: p.ExpiresAt, Input: p.Input}
}

func sessionOf(s api.Session) sessions.Session {
	return sessions.Session{ID: s.ID, Tenant: s.Tenant, Agent: s.Agent, Version: s.Version, Metadata: s.Metadata, ActiveRun: s.ActiveRun,
		Position: s.Position, Queued: s.Queued, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
}

func usageOf(u api.Usage) hitch.Usage {
	return hitch.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CachedInputTokens: u.CachedInputTokens, Generations: u.Generations}
}

func queueOf(q []api.QueuedMessage) []sessions.QueuedMessage {
	out := make([]sessions.QueuedMessage, 0, len(q))
	for _, m := range q {
		out = append(out, sessions.QueuedMessage{ID: m.ID, Position: m.Position, Mode: sessions.Mode(m.Mode), Text: m.Text})
	}
	return out
}

func sessionStatusOf(st api.SessionStatus) sessions.Status {
	out := sessions.Status{Session: sessionOf(st.Session), Queue: queueOf(st.Queue), Usage: usageOf(st.Usage), CostUSD: st.CostUSD}
	for _, s := range st.Submissions {
		sub := sessions.Submission{MessageID: s.MessageID, RunID: s.RunID, Text: s.Text, Joined: s.Joined,
			Outcome: hitchtype.SubmissionOutcome(s.Outcome), Status: hitchtype.Status(s.Status), Reason: s.Reason,
			Answer: s.Answer, Error: s.Error, CostUSD: s.CostUSD}
		if s.Usage != nil {
			u := usageOf(*s.Usage)
			sub.Usage = &u
		}
		out.Submissions = append(out.Submissions, sub)
	}
	return out
}

func (r *remoteBackend) Agents(ctx context.Context) ([]api.Agent, error) {
	list, err := r.c.Agents(ctx)
	return list.Agents, err
}

func (r *remoteBackend) Agent(ctx context.Context, name string) (api.AgentDetail, error) {
	return r.c.Agent(ctx, name)
}

func (r *remoteBackend) Preview(ctx context.Context, name string, o hitch.PreviewOptions) (api.AgentPreview, error) {
	return r.c.Preview(ctx, name, client.PreviewParams{Input: o.Input, Instructions: o.Instructions, Session: o.Session})
}
