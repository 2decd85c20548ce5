package hitch

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"

	"github.com/hitch-dev/hitch/approval"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/scope"
	"github.com/hitch-dev/hitch/store"
)

// The gate's types are hitchtype's.
type (
	// Role is what a principal may do through a Scope. Each role may do
	// what the roles below it may.
	Role = hitchtype.Role
	// Principal is who a face of the runtime acts for: a bearer token's
	// holder on the HTTP API, the console and /mcp; the local user of the
	// CLI and of `hitch mcp` on standard input and output.
	Principal = hitchtype.Principal
	// ForbiddenError refuses a Scope's method to a principal.
	ForbiddenError = hitchtype.ForbiddenError
)

// Roles, from least to most.
const (
	// RoleViewer reads: runs, journals, approvals, workspaces, sessions.
	RoleViewer = hitchtype.RoleViewer
	// RoleOperator also answers approvals, reconciles and completes
	// calls, delivers wakes, cancels runs, interrupts sessions, and grants
	// or revokes workspace roots.
	RoleOperator = hitchtype.RoleOperator
	// RoleAdmin also starts runs, opens sessions and sends, edits or
	// removes their messages.
	RoleAdmin = hitchtype.RoleAdmin
)

// AllTenants, as a Principal's tenant, reaches every tenant's runs and
// sessions by their stored ids: the principal of the local CLI, which owns
// the store. What it creates belongs to hitchtype.DefaultTenant.
const AllTenants = hitchtype.AllTenants

// ErrForbidden: the principal's role does not reach what it asked for, or
// the principal cannot be served at all (an unknown role, a bad tenant).
// The error is a *ForbiddenError.
var ErrForbidden = hitchtype.ErrForbidden

// RoleFor returns the role a method of Scope needs (RoleAdmin for a name
// that is not a method).
func RoleFor(method string) Role { return scope.RoleFor(method) }

// Scope is one principal's view of a runtime: the one way the faces of
// hitch — the HTTP API and its event streams, the console, the MCP tools —
// reach runs, sessions, approvals, workspaces and journals. Each method
// checks the principal's role (RoleFor) and looks ids up inside the
// principal's tenant: another tenant's run or session is ErrNotFound or
// ErrSessionNotFound, exactly as an id that does not exist, and a list
// holds the tenant's own only.
//
// Ids are the tenant's own. A run or session a tenant creates with id x is
// stored as "TENANT~x" (the default tenant's as plain x, or as
// "default~x" when x is taken by another tenant), so two tenants may use
// the same id and neither learns of the other. Rows stored with plain ids
// by the library (Runtime.Start WithTenant) or before tenants had
// namespaces stay reachable by their plain ids. Ids derived from a run's —
// its sub-agents' parent.call — follow it. A Scope of AllTenants names
// everything by its stored id.
//
// A Scope is cheap: make one per request. It is safe for concurrent use.
type Scope struct {
	rt *Runtime
	g  *scope.Gate
}

// As returns the view of the runtime that p may use. A principal with an
// unknown role or a malformed tenant is served nothing: every method
// answers a *ForbiddenError.
func (rt *Runtime) As(p Principal) *Scope {
	return &Scope{rt: rt, g: scope.New(p, rt.Get, rt.GetSession)}
}

// Principal returns who the scope acts for.
func (s *Scope) Principal() Principal { return s.g.P }

// Can reports, with nil, that the principal may call the named method of
// Scope, and otherwise why not (a *ForbiddenError): a face refuses a
// command before it reads the command's input, and shows only the
// controls its user may use.
func (s *Scope) Can(method string) error { return s.g.Allow(method) }

// LocalID returns the id a tenant knows a stored run or session id by: the
// stored id without its tenant's prefix. Two tenants' runs may share a
// local id.
func LocalID(stored string) string { return scope.LocalID(stored) }

func (s *Scope) allow(method string) error { return s.g.Allow(method) }

func (s *Scope) find(ctx context.Context, id string) (Run, string, error) {
	return s.g.FindRun(ctx, id)
}

func (s *Scope) local(stored string) string { return s.g.Local(stored) }

// create makes a new run of the tenant named id with f, under the stored id
// id already names or the first free one, and speaks it in the tenant's ids.
func (s *Scope) create(ctx context.Context, op, id string, f func(stored string) (StartResult, error)) (StartResult, error) {
	res, err := scope.Create(ctx, s.g, op, id, f, func(r StartResult) string { return r.Run.Tenant })
	res.Run = s.g.OutRun(res.Run)
	return res, err
}

// Start starts a run of agent on input for the scope's tenant, as
// Runtime.Start does; WithID names it in the tenant's own ids, and an id
// another tenant uses is as free as any. WithTenant may only name the
// scope's tenant (any, for AllTenants).
func (s *Scope) Start(ctx context.Context, agent *Agent, input string, opts ...StartOption) (StartResult, error) {
	if err := s.g.Allow("Start"); err != nil {
		return StartResult{}, err
	}
	var o startOptions
	for _, f := range opts {
		f(&o)
	}
	if err := s.g.Tenant("Start", "WithTenant", &o.tenant); err != nil {
		return StartResult{}, err
	}
	if o.id == "" {
		o.id = NewRunID()
	}
	if err := CheckRunID(o.id); err != nil {
		return StartResult{}, fmt.Errorf("start: %w", err)
	}
	return s.create(ctx, "start", o.id, func(stored string) (StartResult, error) {
		o.stored = stored
		return s.rt.start(ctx, agent, input, o)
	})
}

// Get returns a run of the tenant as it stands.
func (s *Scope) Get(ctx context.Context, runID string) (Run, error) {
	if err := s.g.Allow("Get"); err != nil {
		return Run{}, err
	}
	r, _, err := s.g.FindRun(ctx, runID)
	return s.g.OutRun(r), err
}

// Await waits as Runtime.Await does, for a run of the tenant.
func (s *Scope) Await(ctx context.Context, runID string) (Run, error) {
	return scope.On(ctx, s.g, "Await", runID, func(stored string) (Run, error) {
		r, err := s.rt.Await(ctx, stored)
		return s.g.OutRun(r), err
	})
}

// Cancel cancels a run of the tenant, as Runtime.Cancel does; who asked
// is the principal's name unless CancelBy names someone.
func (s *Scope) Cancel(ctx context.Context, runID string, opts ...CancelOption) (Run, error) {
	return scope.On(ctx, s.g, "Cancel", runID, func(stored string) (Run, error) {
		r, err := s.rt.Cancel(ctx, stored, append([]CancelOption{CancelBy(s.g.P.Name)}, opts...)...)
		return s.g.OutRun(r), err
	})
}

// Call returns the record of one tool call of a run of the tenant, as
// Runtime.Call does.
func (s *Scope) Call(ctx context.Context, runID, key string) (CallRecord, error) {
	return scope.On(ctx, s.g, "Call", runID, func(stored string) (CallRecord, error) { return s.rt.Call(ctx, stored, key) })
}

// Reconcile settles an uncertain call of a run of the tenant, as
// Runtime.Reconcile does; rec.By defaults to the principal's name.
func (s *Scope) Reconcile(ctx context.Context, runID string, rec Reconciliation) error {
	return scope.Do(ctx, s.g, "Reconcile", runID, func(stored string) error {
		rec.By = cmp.Or(rec.By, s.g.P.Name)
		return s.rt.Reconcile(ctx, stored, rec)
	})
}

// Wake delivers an event to a run of the tenant, as Runtime.Wake does; by
// defaults to the principal's name.
func (s *Scope) Wake(ctx context.Context, runID, event string, data json.RawMessage, by string) error {
	return scope.Do(ctx, s.g, "Wake", runID, func(stored string) error {
		return s.rt.Wake(ctx, stored, event, data, cmp.Or(by, s.g.P.Name))
	})
}

// CompleteCall completes a call of a run of the tenant, as
// Runtime.CompleteCall does; c.By defaults to the principal's name.
func (s *Scope) CompleteCall(ctx context.Context, runID string, c Completion) error {
	return scope.Do(ctx, s.g, "CompleteCall", runID, func(stored string) error {
		c.By = cmp.Or(c.By, s.g.P.Name)
		return s.rt.CompleteCall(ctx, stored, c)
	})
}

// Waits lists what a run of the tenant waits on.
func (s *Scope) Waits(ctx context.Context, runID string) ([]Wait, error) {
	return scope.On(ctx, s.g, "Waits", runID, func(stored string) ([]Wait, error) { return s.rt.Waits(ctx, stored) })
}

// Journal returns a run's entries after position after, at most limit;
// each entry names its run by the tenant's id.
func (s *Scope) Journal(ctx context.Context, runID string, after int64, limit int) ([]store.Entry, error) {
	return scope.On(ctx, s.g, "Journal", runID, func(stored string) ([]store.Entry, error) {
		es, err := s.rt.Journal(ctx, stored, after, limit)
		for i := range es {
			es[i].RunID = s.g.Local(es[i].RunID)
		}
		return es, err
	})
}

// Runs lists the tenant's runs as Runtime.Runs does. p.Tenant is the
// scope's (AllTenants honours it); a ParentID or RootID that is not the
// tenant's lists nothing.
func (s *Scope) Runs(ctx context.Context, p RunsParams) (page []Run, next string, err error) {
	if err := s.g.Allow("Runs"); err != nil {
		return nil, "", err
	}
	none, err := s.g.FilterRuns(ctx, &p.Tenant, &p.ParentID, &p.RootID)
	if err != nil || none {
		return []Run{}, "", err
	}
	page, next, err = s.rt.Runs(ctx, p)
	for i := range page {
		page[i] = s.g.OutRun(page[i])
	}
	return page, next, err
}

// RunCounts counts the tenant's runs by status.
func (s *Scope) RunCounts(ctx context.Context) (map[hitchtype.Status]int, error) {
	if err := s.g.Allow("RunCounts"); err != nil {
		return nil, err
	}
	return s.rt.RunCounts(ctx, s.g.Filter())
}

// RunCountsFor counts the tenant's runs by status among those p's filters
// keep, as Runtime.RunCountsFor does.
func (s *Scope) RunCountsFor(ctx context.Context, p RunsParams) (map[hitchtype.Status]int, error) {
	if err := s.g.Allow("RunCountsFor"); err != nil {
		return nil, err
	}
	none, err := s.g.FilterRuns(ctx, &p.Tenant, &p.ParentID, &p.RootID)
	if err != nil || none {
		return map[hitchtype.Status]int{}, err
	}
	return s.rt.RunCountsFor(ctx, p)
}

// PendingApprovals lists the tenant's approval requests waiting for an
// answer, as Runtime.PendingApprovals does; a RootID that is not the
// tenant's is ErrNotFound.
func (s *Scope) PendingApprovals(ctx context.Context, p PendingApprovalsParams) (page []PendingApproval, next string, err error) {
	if err := s.g.Allow("PendingApprovals"); err != nil {
		return nil, "", err
	}
	p.Tenant = s.g.Filter()
	if p.RootID != "" {
		if p.RootID, err = s.g.RunID(ctx, p.RootID); err != nil {
			return nil, "", err
		}
	}
	page, next, err = s.rt.PendingApprovals(ctx, p)
	for i := range page {
		page[i] = s.g.OutApproval(page[i])
	}
	return page, next, err
}

// ApprovalRequest returns one approval request of a run of the tenant.
func (s *Scope) ApprovalRequest(ctx context.Context, runID, call string) (PendingApproval, error) {
	return scope.On(ctx, s.g, "ApprovalRequest", runID, func(stored string) (PendingApproval, error) {
		a, err := s.rt.ApprovalRequest(ctx, stored, call)
		return s.g.OutApproval(a), err
	})
}

// ApprovalAnswer answers an approval request.
type ApprovalAnswer struct {
	// Approve grants the request; false rejects it.
	Approve bool
	// Credential is the approver's, checked against the run's agent's
	// approvers for the request's requirement.
	Credential approval.Credential
	// Reason, for a rejection, is shown to the model.
	Reason string
}

// AnswerApproval checks an approver's credential for a request of a run of
// the tenant and approves or rejects it, as Runtime.Approve and
// Runtime.Reject do. A credential refused is one of the approval
// package's errors (approval.ErrBadCredential …).
func (s *Scope) AnswerApproval(ctx context.Context, runID, call string, a ApprovalAnswer) error {
	return scope.Do(ctx, s.g, "AnswerApproval", runID, func(stored string) error {
		req, err := s.rt.ApprovalRequest(ctx, stored, call)
		if err != nil {
			return err
		}
		approvers, err := s.rt.Approvers(ctx, stored)
		if err != nil {
			return err
		}
		proof, err := approvers.Check(ctx, a.Credential, req.Requirement)
		if err != nil {
			return err
		}
		if a.Approve {
			return s.rt.Approve(ctx, stored, call, proof)
		}
		return s.rt.Reject(ctx, stored, call, proof, a.Reason)
	})
}

// Roots lists the roots granted to a run of the tenant.
func (s *Scope) Roots(ctx context.Context, runID string) ([]string, error) {
	return scope.On(ctx, s.g, "Roots", runID, func(stored string) ([]string, error) { return s.rt.Roots(ctx, stored) })
}

// GrantRoot grants a directory to a run of the tenant, in the principal's
// name, as Runtime.GrantRoot does.
func (s *Scope) GrantRoot(ctx context.Context, runID, path string) error {
	return scope.Do(ctx, s.g, "GrantRoot", runID, func(stored string) error { return s.rt.GrantRoot(ctx, stored, path, s.g.P.Name) })
}

// RevokeRoot takes a granted directory back from a run of the tenant.
func (s *Scope) RevokeRoot(ctx context.Context, runID, path string) error {
	return scope.Do(ctx, s.g, "RevokeRoot", runID, func(stored string) error { return s.rt.RevokeRoot(ctx, stored, path, s.g.P.Name) })
}

// Budget returns what bounds a run of the tenant and what is left of it.
func (s *Scope) Budget(ctx context.Context, runID string) (RunBudget, error) {
	return scope.On(ctx, s.g, "Budget", runID, func(stored string) (RunBudget, error) {
		b, err := s.rt.Budget(ctx, stored)
		b.RunID, b.RootID = s.g.Local(b.RunID), s.g.Local(b.RootID)
		return b, err
	})
}

// ContextRequests returns the model requests of a run of the tenant.
func (s *Scope) ContextRequests(ctx context.Context, runID string) ([]hitchtype.ContextRequest, error) {
	return scope.On(ctx, s.g, "ContextRequests", runID, func(stored string) ([]hitchtype.ContextRequest, error) { return s.rt.ContextRequests(ctx, stored) })
}

// LatestContextRequests returns up to n of the latest model requests of a
// run of the tenant.
func (s *Scope) LatestContextRequests(ctx context.Context, runID string, n int) ([]hitchtype.ContextRequest, bool, error) {
	if err := s.g.Allow("LatestContextRequests"); err != nil {
		return nil, false, err
	}
	stored, err := s.g.RunID(ctx, runID)
	if err != nil {
		return nil, false, err
	}
	return s.rt.LatestContextRequests(ctx, stored, n)
}

// FamilyCost sums what the family of a root run of the tenant has cost.
func (s *Scope) FamilyCost(ctx context.Context, rootID string) (RunningCost, error) {
	return scope.On(ctx, s.g, "FamilyCost", rootID, func(stored string) (RunningCost, error) { return s.rt.FamilyCost(ctx, stored) })
}

// FamilyUsage sums the usage of the family of a root run of the tenant.
func (s *Scope) FamilyUsage(ctx context.Context, rootID string) (FamilyUsage, error) {
	return scope.On(ctx, s.g, "FamilyUsage", rootID, func(stored string) (FamilyUsage, error) { return s.rt.FamilyUsage(ctx, stored) })
}

// Preview is Runtime.Preview; a session it names is looked up inside the
// tenant.
func (s *Scope) Preview(ctx context.Context, agent *Agent, o PreviewOptions) (RequestPreview, error) {
	if err := s.g.Allow("Preview"); err != nil {
		return RequestPreview{}, err
	}
	stored := ""
	if o.Session != "" {
		ses, _, err := s.g.FindSession(ctx, o.Session)
		if err != nil {
			return RequestPreview{}, err
		}
		stored = ses.ID
	}
	return s.rt.preview(ctx, agent, o, stored)
}

// OpenSession opens a session of agent for the scope's tenant, as
// Runtime.OpenSession does; o.ID names it in the tenant's own ids, and an
// id another tenant uses is as free as any. created is false when the
// tenant's session with the id existed. o.Tenant may only name the scope's
// tenant (any, for AllTenants).
func (s *Scope) OpenSession(ctx context.Context, agent *Agent, o SessionOptions) (ses Session, created bool, err error) {
	if err := s.g.Allow("OpenSession"); err != nil {
		return Session{}, false, err
	}
	if err := s.g.Tenant("OpenSession", "SessionOptions.Tenant", &o.Tenant); err != nil {
		return Session{}, false, err
	}
	if o.ID == "" {
		o.ID = hitchtype.NewID("ses_", 10)
	}
	if err := hitchtype.CheckSessionID(o.ID); err != nil {
		return Session{}, false, fmt.Errorf("open session: SessionOptions.ID: %w", err)
	}
	return scope.CreateSession(ctx, s.g, o.ID, func(stored string) (Session, error) {
		return s.rt.openSession(ctx, agent, o, stored)
	}, ErrSessionTenant)
}

// GetSession returns a session of the tenant as it stands.
func (s *Scope) GetSession(ctx context.Context, sessionID string) (Session, error) {
	if err := s.g.Allow("GetSession"); err != nil {
		return Session{}, err
	}
	ses, _, err := s.g.FindSession(ctx, sessionID)
	return s.g.OutSession(ses), err
}

// Sessions lists the tenant's sessions in the order of their stored ids,
// after the cursor p.After (the next of the previous page); next is empty
// after a page that is not full.
func (s *Scope) Sessions(ctx context.Context, p SessionsParams) (page []Session, next string, err error) {
	if err := s.g.Allow("Sessions"); err != nil {
		return nil, "", err
	}
	p.Tenant = s.g.Filter()
	list, err := s.rt.Sessions(ctx, p)
	if err != nil {
		return nil, "", err
	}
	return list, s.g.Page(list, cmp.Or(p.Limit, DefaultPageLimit)), nil
}

// Send admits a message to a session of the tenant, as Runtime.Send does.
func (s *Scope) Send(ctx context.Context, sessionID, text string, o SendOptions) (SendResult, error) {
	return scope.OnSession(ctx, s.g, "Send", sessionID, func(stored string) (SendResult, error) { return s.rt.Send(ctx, stored, text, o) })
}

// Interrupt interrupts the running submission of a session of the tenant.
func (s *Scope) Interrupt(ctx context.Context, sessionID string) error {
	return scope.DoSession(ctx, s.g, "Interrupt", sessionID, func(stored string) error { return s.rt.Interrupt(ctx, stored) })
}

// Queue lists the queued messages of a session of the tenant.
func (s *Scope) Queue(ctx context.Context, sessionID string, limit int) ([]QueuedMessage, error) {
	return scope.OnSession(ctx, s.g, "Queue", sessionID, func(stored string) ([]QueuedMessage, error) { return s.rt.Queue(ctx, stored, limit) })
}

// Edit replaces the text of a queued message of a session of the tenant.
func (s *Scope) Edit(ctx context.Context, sessionID, messageID, text string) error {
	return scope.DoSession(ctx, s.g, "Edit", sessionID, func(stored string) error { return s.rt.Edit(ctx, stored, messageID, text) })
}

// Remove takes a queued message out of a session of the tenant.
func (s *Scope) Remove(ctx context.Context, sessionID, messageID string) error {
	return scope.DoSession(ctx, s.g, "Remove", sessionID, func(stored string) error { return s.rt.Remove(ctx, stored, messageID) })
}

// SessionJournal returns a session's journal entries after position
// after, at most limit; each names its session by the tenant's id.
func (s *Scope) SessionJournal(ctx context.Context, sessionID string, after int64, limit int) ([]SessionEntry, error) {
	return scope.OnSession(ctx, s.g, "SessionJournal", sessionID, func(stored string) ([]SessionEntry, error) {
		es, err := s.rt.SessionJournal(ctx, stored, after, limit)
		for i := range es {
			es[i].SessionID = s.g.Local(es[i].SessionID)
		}
		return es, err
	})
}

// SessionStatus returns the state of a session of the tenant.
func (s *Scope) SessionStatus(ctx context.Context, sessionID string) (SessionStatus, error) {
	return scope.OnSession(ctx, s.g, "SessionStatus", sessionID, func(stored string) (SessionStatus, error) {
		st, err := s.rt.SessionStatus(ctx, stored)
		return s.g.OutStatus(st), err
	})
}

// AwaitSession waits until a session of the tenant is at rest, as
// Runtime.AwaitSession does.
func (s *Scope) AwaitSession(ctx context.Context, sessionID string) (SessionStatus, error) {
	return scope.OnSession(ctx, s.g, "AwaitSession", sessionID, func(stored string) (SessionStatus, error) {
		st, err := s.rt.AwaitSession(ctx, stored)
		return s.g.OutStatus(st), err
	})
}

// SessionCost sums what a session of the tenant has cost so far.
func (s *Scope) SessionCost(ctx context.Context, sessionID string) (RunningCost, error) {
	return scope.OnSession(ctx, s.g, "SessionCost", sessionID, func(stored string) (RunningCost, error) { return s.rt.SessionCost(ctx, stored) })
}
