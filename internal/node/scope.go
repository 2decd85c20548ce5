package node

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"iter"

	"github.com/hitch-dev/hitch/approval"
	"github.com/hitch-dev/hitch/doctor"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/engine"
	"github.com/hitch-dev/hitch/internal/scope"
	"github.com/hitch-dev/hitch/internal/session"
	"github.com/hitch-dev/hitch/store"
)

// Scope is one principal's view of a node: the bodies of hitch.Scope's
// methods. Each checks the principal's role, looks ids up inside its
// tenant (the embedded gate), calls the node's command with the stored id
// and speaks the answer in the tenant's ids.
type Scope struct {
	*scope.Gate
	n *Node
}

// As returns the view of the node that p may use.
func (n *Node) As(p hitchtype.Principal) *Scope {
	return &Scope{Gate: scope.New(p, n.Get, n.Sess.Get), n: n}
}

// create makes a new run of the tenant named id with f, under the stored id
// id already names or the first free one, and speaks it in the tenant's ids.
func (s *Scope) create(ctx context.Context, op, id string, f func(stored string) (hitchtype.StartResult, error)) (hitchtype.StartResult, error) {
	res, err := scope.Create(ctx, s.Gate, op, id, f, func(r hitchtype.StartResult) string { return r.Run.Tenant })
	res.Run = s.OutRun(res.Run)
	return res, err
}

// Start starts a run of a for the tenant; o.ID is the tenant's own.
func (s *Scope) Start(ctx context.Context, a *engine.Agent, o Start) (hitchtype.StartResult, error) {
	if err := s.Allow("Start"); err != nil {
		return hitchtype.StartResult{}, err
	}
	if err := s.Tenant("Start", "WithTenant", &o.Tenant); err != nil {
		return hitchtype.StartResult{}, err
	}
	if err := NewID(&o.ID, "start"); err != nil {
		return hitchtype.StartResult{}, err
	}
	return s.create(ctx, "start", o.ID, func(stored string) (hitchtype.StartResult, error) {
		o.ID = stored
		return s.n.Start(ctx, a, o)
	})
}

// Fork forks a run of the tenant; the fork's id is the tenant's own.
func (s *Scope) Fork(ctx context.Context, runID string, at int64, o hitchtype.ForkOptions) (hitchtype.StartResult, error) {
	if err := s.Allow("Fork"); err != nil {
		return hitchtype.StartResult{}, err
	}
	src, _, err := s.FindRun(ctx, runID)
	if err != nil {
		return hitchtype.StartResult{}, err
	}
	if err := NewID(&o.ID, "fork "+runID); err != nil {
		return hitchtype.StartResult{}, err
	}
	return s.create(ctx, "fork", o.ID, func(stored string) (hitchtype.StartResult, error) {
		return s.n.Fork(ctx, src.ID, at, Fork{ForkOptions: o, Stored: stored})
	})
}

// Get returns a run of the tenant.
func (s *Scope) Get(ctx context.Context, runID string) (hitchtype.Run, error) {
	if err := s.Allow("Get"); err != nil {
		return hitchtype.Run{}, err
	}
	r, _, err := s.FindRun(ctx, runID)
	return s.OutRun(r), err
}

// Await waits for a run of the tenant.
func (s *Scope) Await(ctx context.Context, runID string) (hitchtype.Run, error) {
	return scope.On(ctx, s.Gate, "Await", runID, func(stored string) (hitchtype.Run, error) {
		r, err := s.n.Await(ctx, stored)
		return s.OutRun(r), err
	})
}

// Cancel cancels a run of the tenant in the principal's name, unless
// apply names someone else.
func (s *Scope) Cancel(ctx context.Context, runID string, apply func(*store.RunRequestCancelParams)) (hitchtype.Run, error) {
	return scope.On(ctx, s.Gate, "Cancel", runID, func(stored string) (hitchtype.Run, error) {
		req := store.RunRequestCancelParams{ID: stored, By: s.P.Name}
		apply(&req)
		r, err := s.n.Cancel(ctx, req)
		return s.OutRun(r), err
	})
}

// Call returns the record of one tool call of a run of the tenant.
func (s *Scope) Call(ctx context.Context, runID, key string) (hitchtype.CallRecord, error) {
	return scope.On(ctx, s.Gate, "Call", runID, func(stored string) (hitchtype.CallRecord, error) { return s.n.Call(ctx, stored, key) })
}

// Reconcile settles an uncertain call of a run of the tenant; rec.By
// defaults to the principal's name.
func (s *Scope) Reconcile(ctx context.Context, runID string, rec hitchtype.Reconciliation) error {
	return scope.Do(ctx, s.Gate, "Reconcile", runID, func(stored string) error {
		rec.By = cmp.Or(rec.By, s.P.Name)
		return s.n.Reconcile(ctx, stored, rec)
	})
}

// Wake delivers an event to a run of the tenant; by defaults to the
// principal's name.
func (s *Scope) Wake(ctx context.Context, runID, event string, data json.RawMessage, by string) error {
	return scope.Do(ctx, s.Gate, "Wake", runID, func(stored string) error {
		return s.n.Wake(ctx, stored, event, data, cmp.Or(by, s.P.Name))
	})
}

// CompleteCall completes a call of a run of the tenant; c.By defaults to
// the principal's name.
func (s *Scope) CompleteCall(ctx context.Context, runID string, c hitchtype.Completion) error {
	return scope.Do(ctx, s.Gate, "CompleteCall", runID, func(stored string) error {
		c.By = cmp.Or(c.By, s.P.Name)
		return s.n.CompleteCall(ctx, stored, c)
	})
}

// Waits lists what a run of the tenant waits on.
func (s *Scope) Waits(ctx context.Context, runID string) ([]hitchtype.Wait, error) {
	return scope.On(ctx, s.Gate, "Waits", runID, func(stored string) ([]hitchtype.Wait, error) { return s.n.Waits(ctx, stored) })
}

// Journal returns entries of a run of the tenant, each naming its run by
// the tenant's id.
func (s *Scope) Journal(ctx context.Context, runID string, after int64, limit int) ([]store.Entry, error) {
	return scope.On(ctx, s.Gate, "Journal", runID, func(stored string) ([]store.Entry, error) {
		es, err := s.n.Journal(ctx, stored, after, limit)
		for i := range es {
			es[i].RunID = s.Local(es[i].RunID)
		}
		return es, err
	})
}

// Follow follows a run of the tenant.
func (s *Scope) Follow(ctx context.Context, runID string, after int64) iter.Seq2[store.Entry, error] {
	return func(yield func(store.Entry, error) bool) {
		if err := s.Allow("Follow"); err != nil {
			yield(store.Entry{}, err)
			return
		}
		run, _, err := s.FindRun(ctx, runID)
		if err != nil {
			yield(store.Entry{}, err)
			return
		}
		s.n.Follows(ctx, run.ID, run.Position, run.Status.Terminal(), after, yield, s.Local)
	}
}

// Runs lists the tenant's runs; a ParentID or RootID that is not the
// tenant's lists nothing.
func (s *Scope) Runs(ctx context.Context, p hitchtype.RunsParams) (page []hitchtype.Run, next string, err error) {
	if err := s.Allow("Runs"); err != nil {
		return nil, "", err
	}
	none, err := s.FilterRuns(ctx, &p.Tenant, &p.ParentID, &p.RootID)
	if err != nil || none {
		return []hitchtype.Run{}, "", err
	}
	page, next, err = s.n.Runs(ctx, p)
	for i := range page {
		page[i] = s.OutRun(page[i])
	}
	return page, next, err
}

// RunCounts counts the tenant's runs by status.
func (s *Scope) RunCounts(ctx context.Context) (map[hitchtype.Status]int, error) {
	if err := s.Allow("RunCounts"); err != nil {
		return nil, err
	}
	return s.n.RunCounts(ctx, s.Filter())
}

// RunCountsFor counts the tenant's runs by status among those p's filters
// keep.
func (s *Scope) RunCountsFor(ctx context.Context, p hitchtype.RunsParams) (map[hitchtype.Status]int, error) {
	if err := s.Allow("RunCountsFor"); err != nil {
		return nil, err
	}
	none, err := s.FilterRuns(ctx, &p.Tenant, &p.ParentID, &p.RootID)
	if err != nil || none {
		return map[hitchtype.Status]int{}, err
	}
	return s.n.RunCountsFor(ctx, p)
}

// PendingApprovals lists the tenant's approval requests waiting for an
// answer; a RootID that is not the tenant's is ErrNotFound.
func (s *Scope) PendingApprovals(ctx context.Context, p hitchtype.PendingApprovalsParams) (page []hitchtype.PendingApproval, next string, err error) {
	if err := s.Allow("PendingApprovals"); err != nil {
		return nil, "", err
	}
	p.Tenant = s.Filter()
	if p.RootID != "" {
		if p.RootID, err = s.RunID(ctx, p.RootID); err != nil {
			return nil, "", err
		}
	}
	page, next, err = s.n.PendingApprovals(ctx, p)
	for i := range page {
		page[i] = s.OutApproval(page[i])
	}
	return page, next, err
}

// ApprovalRequest returns one approval request of a run of the tenant.
func (s *Scope) ApprovalRequest(ctx context.Context, runID, call string) (hitchtype.PendingApproval, error) {
	return scope.On(ctx, s.Gate, "ApprovalRequest", runID, func(stored string) (hitchtype.PendingApproval, error) {
		a, err := s.n.ApprovalRequest(ctx, stored, call)
		return s.OutApproval(a), err
	})
}

// AnswerApproval checks an approver's credential for a request of a run of
// the tenant and approves or rejects it.
func (s *Scope) AnswerApproval(ctx context.Context, runID, call string, approve bool, cred approval.Credential, reason string) error {
	return scope.Do(ctx, s.Gate, "AnswerApproval", runID, func(stored string) error {
		req, err := s.n.ApprovalRequest(ctx, stored, call)
		if err != nil {
			return err
		}
		approvers, err := s.n.Approvers(ctx, stored)
		if err != nil {
			return err
		}
		proof, err := approvers.Check(ctx, cred, req.Requirement)
		if err != nil {
			return err
		}
		if approve {
			return s.n.Answer(ctx, stored, call, true, proof, "")
		}
		return s.n.Answer(ctx, stored, call, false, proof, reason)
	})
}

// Roots lists the roots granted to a run of the tenant.
func (s *Scope) Roots(ctx context.Context, runID string) ([]string, error) {
	return scope.On(ctx, s.Gate, "Roots", runID, func(stored string) ([]string, error) { return s.n.Eng.Roots(ctx, stored) })
}

// ChangeRoot grants a directory to a run of the tenant, or revokes it, in
// the principal's name.
func (s *Scope) ChangeRoot(ctx context.Context, runID, path string, revoke bool) error {
	method := "GrantRoot"
	if revoke {
		method = "RevokeRoot"
	}
	return scope.Do(ctx, s.Gate, method, runID, func(stored string) error { return s.n.ChangeRoot(ctx, stored, path, s.P.Name, revoke) })
}

// Budget returns what bounds a run of the tenant and what is left of it.
func (s *Scope) Budget(ctx context.Context, runID string) (hitchtype.RunBudget, error) {
	return scope.On(ctx, s.Gate, "Budget", runID, func(stored string) (hitchtype.RunBudget, error) {
		b, err := s.n.Usage.Budget(ctx, stored)
		b.RunID, b.RootID = s.Local(b.RunID), s.Local(b.RootID)
		return b, err
	})
}

// ContextRequests returns the model requests of a run of the tenant.
func (s *Scope) ContextRequests(ctx context.Context, runID string) ([]hitchtype.ContextRequest, error) {
	return scope.On(ctx, s.Gate, "ContextRequests", runID, func(stored string) ([]hitchtype.ContextRequest, error) {
		return s.n.Usage.ContextRequests(ctx, stored)
	})
}

// LatestContextRequests returns up to n of the latest model requests of a
// run of the tenant.
func (s *Scope) LatestContextRequests(ctx context.Context, runID string, n int) ([]hitchtype.ContextRequest, bool, error) {
	if err := s.Allow("LatestContextRequests"); err != nil {
		return nil, false, err
	}
	stored, err := s.RunID(ctx, runID)
	if err != nil {
		return nil, false, err
	}
	return s.n.Usage.LatestContextRequests(ctx, stored, n)
}

// FamilyCost sums what the family of a root run of the tenant has cost.
func (s *Scope) FamilyCost(ctx context.Context, rootID string) (hitchtype.RunningCost, error) {
	return scope.On(ctx, s.Gate, "FamilyCost", rootID, func(stored string) (hitchtype.RunningCost, error) { return s.n.Usage.FamilyCost(ctx, stored) })
}

// FamilyUsage sums the usage of the family of a root run of the tenant.
func (s *Scope) FamilyUsage(ctx context.Context, rootID string) (hitchtype.FamilyUsage, error) {
	return scope.On(ctx, s.Gate, "FamilyUsage", rootID, func(stored string) (hitchtype.FamilyUsage, error) { return s.n.Usage.FamilyUsage(ctx, stored) })
}

// Preview previews a run of a; a session o names is looked up inside the
// tenant.
func (s *Scope) Preview(ctx context.Context, a *engine.Agent, o hitchtype.PreviewOptions) (hitchtype.RequestPreview, error) {
	if err := s.Allow("Preview"); err != nil {
		return hitchtype.RequestPreview{}, err
	}
	stored := ""
	if o.Session != "" {
		ses, _, err := s.FindSession(ctx, o.Session)
		if err != nil {
			return hitchtype.RequestPreview{}, err
		}
		stored = ses.ID
	}
	return s.n.Preview(ctx, a, o, stored)
}

// OpenSession opens a session of a for the tenant; o.ID is the tenant's
// own. created is false when the tenant's session with the id existed.
func (s *Scope) OpenSession(ctx context.Context, a *engine.Agent, o hitchtype.SessionOptions) (ses hitchtype.Session, created bool, err error) {
	if err := s.Allow("OpenSession"); err != nil {
		return hitchtype.Session{}, false, err
	}
	if err := s.Tenant("OpenSession", "SessionOptions.Tenant", &o.Tenant); err != nil {
		return hitchtype.Session{}, false, err
	}
	if o.ID == "" {
		o.ID = hitchtype.NewID("ses_", 10)
	}
	if err := hitchtype.CheckSessionID(o.ID); err != nil {
		return hitchtype.Session{}, false, fmt.Errorf("open session: SessionOptions.ID: %w", err)
	}
	return scope.CreateSession(ctx, s.Gate, o.ID, func(stored string) (hitchtype.Session, error) {
		ses, _, err := s.n.OpenSession(ctx, a, o, stored)
		return ses, err
	}, session.ErrSessionTenant)
}

// GetSession returns a session of the tenant.
func (s *Scope) GetSession(ctx context.Context, sessionID string) (hitchtype.Session, error) {
	if err := s.Allow("GetSession"); err != nil {
		return hitchtype.Session{}, err
	}
	ses, _, err := s.FindSession(ctx, sessionID)
	return s.OutSession(ses), err
}

// ListSessions lists a page of the tenant's sessions.
func (s *Scope) ListSessions(ctx context.Context, p hitchtype.SessionsParams) (page []hitchtype.Session, next string, err error) {
	if err := s.Allow("Sessions"); err != nil {
		return nil, "", err
	}
	p.Tenant = s.Filter()
	list, err := s.n.Sess.List(ctx, p)
	if err != nil {
		return nil, "", err
	}
	return list, s.Page(list, cmp.Or(p.Limit, engine.DefaultPageLimit)), nil
}

// Send admits a message to a session of the tenant.
func (s *Scope) Send(ctx context.Context, sessionID, text string, o hitchtype.SendOptions) (hitchtype.SendResult, error) {
	return scope.OnSession(ctx, s.Gate, "Send", sessionID, func(stored string) (hitchtype.SendResult, error) { return s.n.Sess.Send(ctx, stored, text, o) })
}

// Interrupt interrupts the running submission of a session of the tenant.
func (s *Scope) Interrupt(ctx context.Context, sessionID string) error {
	return scope.DoSession(ctx, s.Gate, "Interrupt", sessionID, func(stored string) error { return s.n.Sess.Interrupt(ctx, stored) })
}

// Queue lists the queued messages of a session of the tenant.
func (s *Scope) Queue(ctx context.Context, sessionID string, limit int) ([]hitchtype.QueuedMessage, error) {
	return scope.OnSession(ctx, s.Gate, "Queue", sessionID, func(stored string) ([]hitchtype.QueuedMessage, error) { return s.n.Sess.Queue(ctx, stored, limit) })
}

// Edit replaces the text of a queued message of a session of the tenant.
func (s *Scope) Edit(ctx context.Context, sessionID, messageID, text string) error {
	return scope.DoSession(ctx, s.Gate, "Edit", sessionID, func(stored string) error { return s.n.Sess.Edit(ctx, stored, messageID, text) })
}

// Remove takes a queued message out of a session of the tenant.
func (s *Scope) Remove(ctx context.Context, sessionID, messageID string) error {
	return scope.DoSession(ctx, s.Gate, "Remove", sessionID, func(stored string) error { return s.n.Sess.Remove(ctx, stored, messageID) })
}

// SessionJournal returns entries of a session of the tenant, each naming
// its session by the tenant's id.
func (s *Scope) SessionJournal(ctx context.Context, sessionID string, after int64, limit int) ([]store.SessionEntry, error) {
	return scope.OnSession(ctx, s.Gate, "SessionJournal", sessionID, func(stored string) ([]store.SessionEntry, error) {
		es, err := s.n.Sess.Journal(ctx, stored, after, limit)
		for i := range es {
			es[i].SessionID = s.Local(es[i].SessionID)
		}
		return es, err
	})
}

// SessionStatus returns the state of a session of the tenant.
func (s *Scope) SessionStatus(ctx context.Context, sessionID string) (hitchtype.SessionStatus, error) {
	return scope.OnSession(ctx, s.Gate, "SessionStatus", sessionID, func(stored string) (hitchtype.SessionStatus, error) {
		st, err := s.n.Sess.Status(ctx, stored)
		return s.OutStatus(st), err
	})
}

// AwaitSession waits until a session of the tenant is at rest.
func (s *Scope) AwaitSession(ctx context.Context, sessionID string) (hitchtype.SessionStatus, error) {
	return scope.OnSession(ctx, s.Gate, "AwaitSession", sessionID, func(stored string) (hitchtype.SessionStatus, error) {
		st, err := s.n.Sess.Await(ctx, stored)
		return s.OutStatus(st), err
	})
}

// SessionCost sums what a session of the tenant has cost so far.
func (s *Scope) SessionCost(ctx context.Context, sessionID string) (hitchtype.RunningCost, error) {
	return scope.OnSession(ctx, s.Gate, "SessionCost", sessionID, func(stored string) (hitchtype.RunningCost, error) { return s.n.SessionCost(ctx, stored) })
}

// Doctor runs package doctor's checks, for admins of the default tenant
// (or of AllTenants) only: the report covers what every tenant shares.
func (s *Scope) Doctor(ctx context.Context, cfg doctor.Config) (doctor.Report, error) {
	if err := s.Allow("Doctor"); err != nil {
		return doctor.Report{}, err
	}
	if t := s.P.Tenant; t != hitchtype.DefaultTenant && t != hitchtype.AllTenants {
		return doctor.Report{}, s.Forbid("Doctor", fmt.Sprintf("the report covers every tenant's deployment; it is served to tenant %s", hitchtype.DefaultTenant))
	}
	if cfg.Store == nil && cfg.StoreErr == nil {
		cfg.Store = s.n.cfg.Engine.Store
	}
	return doctor.Run(ctx, cfg)
}

// NewID sets an empty run id to a fresh one and checks it, naming op in
// its error.
func NewID(id *string, op string) error {
	if *id == "" {
		*id = hitchtype.NewID("run_", 10)
	}
	if err := hitchtype.CheckRunID(*id); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}
