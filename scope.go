package hitch

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/hitch-dev/hitch/approval"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

// Role is what a principal may do through a Scope. Each role may do what
// the roles below it may.
type Role string

// Roles, from least to most.
const (
	// RoleViewer reads: runs, journals, approvals, workspaces, sessions.
	RoleViewer Role = "viewer"
	// RoleOperator also answers approvals, reconciles and completes
	// calls, delivers wakes, cancels runs, interrupts sessions, and grants
	// or revokes workspace roots.
	RoleOperator Role = "operator"
	// RoleAdmin also starts runs, opens sessions and sends, edits or
	// removes their messages.
	RoleAdmin Role = "admin"
)

func (r Role) rank() int {
	switch r {
	case RoleViewer:
		return 1
	case RoleOperator:
		return 2
	case RoleAdmin:
		return 3
	}
	return 0
}

// Valid reports whether r is one of the three roles.
func (r Role) Valid() bool { return r.rank() > 0 }

// AllTenants, as a Principal's tenant, reaches every tenant's runs and
// sessions by their stored ids: the principal of the local CLI, which owns
// the store. What it creates belongs to hitchtype.DefaultTenant.
const AllTenants = "*"

// Principal is who a face of the runtime acts for: a bearer token's holder
// on the HTTP API, the console and /mcp; the local user of the CLI and of
// `hitch mcp` on standard input and output.
type Principal struct {
	// Name names the principal in journals: who cancelled, reconciled,
	// granted a root or delivered a wake, unless the command names
	// someone.
	Name string
	// Tenant is the tenant whose runs and sessions the principal reaches
	// (hitchtype.CheckTenant), or AllTenants. Empty means
	// hitchtype.DefaultTenant.
	Tenant string
	// Role is what the principal may do.
	Role Role
}

// ErrForbidden: the principal's role does not reach what it asked for, or
// the principal cannot be served at all (an unknown role, a bad tenant).
// The error is a *ForbiddenError.
var ErrForbidden = errors.New("forbidden")

// ForbiddenError refuses a Scope's method to a principal.
type ForbiddenError struct {
	// Op is the refused method; Principal and Role who asked; Need the
	// role the method needs ("" when the principal itself is refused).
	Op, Principal string
	Role, Need    Role
	// Reason says why a principal is refused.
	Reason string
}

func (e *ForbiddenError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("%s: %s: %s", ErrForbidden, e.Op, e.Reason)
	}
	return fmt.Sprintf("%s: %s has role %s; %s needs %s", ErrForbidden, e.Principal, e.Role, e.Op, e.Need)
}

// Is makes errors.Is(err, ErrForbidden) hold.
func (e *ForbiddenError) Is(target error) bool { return target == ErrForbidden }

// scopeRoles is the role each method of Scope needs, in the spirit of one
// table of read-only calls: a method that is not listed needs RoleAdmin, so
// a method added without its row fails closed. A test holds the table and
// the methods to each other.
var scopeRoles = map[string]Role{
	// Reads.
	"Get": RoleViewer, "Await": RoleViewer, "Call": RoleViewer, "Runs": RoleViewer, "RunCounts": RoleViewer, "RunCountsFor": RoleViewer,
	"Journal": RoleViewer, "Follow": RoleViewer, "Waits": RoleViewer, "PendingApprovals": RoleViewer, "ApprovalRequest": RoleViewer,
	"Roots": RoleViewer, "Budget": RoleViewer, "ContextRequests": RoleViewer, "LatestContextRequests": RoleViewer,
	"FamilyCost": RoleViewer, "FamilyUsage": RoleViewer, "Preview": RoleViewer,
	"GetSession": RoleViewer, "Sessions": RoleViewer, "Queue": RoleViewer, "SessionJournal": RoleViewer,
	"SessionStatus": RoleViewer, "SessionCost": RoleViewer, "AwaitSession": RoleViewer,
	// Commands to what exists.
	"Cancel": RoleOperator, "Reconcile": RoleOperator, "AnswerApproval": RoleOperator, "GrantRoot": RoleOperator,
	"RevokeRoot": RoleOperator, "Wake": RoleOperator, "CompleteCall": RoleOperator, "Interrupt": RoleOperator,
	// What creates work or changes what a model will read.
	"Start": RoleAdmin, "Fork": RoleAdmin, "OpenSession": RoleAdmin, "Send": RoleAdmin, "Edit": RoleAdmin, "Remove": RoleAdmin,
	// What reports on the whole deployment: its operator's.
	"Doctor": RoleAdmin,
}

// RoleFor returns the role a method of Scope needs (RoleAdmin for a name
// that is not a method).
func RoleFor(method string) Role {
	if r, ok := scopeRoles[method]; ok {
		return r
	}
	return RoleAdmin
}

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
	rt  *Runtime
	p   Principal
	err error // the principal cannot be served: every method answers it

	mu       sync.Mutex
	resolved map[string]string // the tenant's run id → stored id, found already
}

// As returns the view of the runtime that p may use. A principal with an
// unknown role or a malformed tenant is served nothing: every method
// answers a *ForbiddenError.
func (rt *Runtime) As(p Principal) *Scope {
	if p.Tenant == "" {
		p.Tenant = hitchtype.DefaultTenant
	}
	s := &Scope{rt: rt, p: p}
	switch {
	case !p.Role.Valid():
		s.err = &ForbiddenError{Op: "scope", Principal: p.Name, Role: p.Role, Reason: fmt.Sprintf("role %q: want viewer, operator or admin", p.Role)}
	case p.Tenant != AllTenants && hitchtype.CheckTenant(p.Tenant) != nil:
		s.err = &ForbiddenError{Op: "scope", Principal: p.Name, Role: p.Role, Reason: "the principal's tenant is malformed"}
	}
	return s
}

// Principal returns who the scope acts for.
func (s *Scope) Principal() Principal { return s.p }

// Can reports, with nil, that the principal may call the named method of
// Scope, and otherwise why not (a *ForbiddenError): a face refuses a
// command before it reads the command's input, and shows only the
// controls its user may use.
func (s *Scope) Can(method string) error { return s.allow(method) }

// allow refuses a method the principal's role does not reach.
func (s *Scope) allow(method string) error {
	if s.err != nil {
		return s.err
	}
	need := RoleFor(method)
	if s.p.Role.rank() < need.rank() {
		return &ForbiddenError{Op: method, Principal: s.p.Name, Role: s.p.Role, Need: need}
	}
	return nil
}

// tenantSep joins a tenant and its own id into a stored id. Run and
// session ids cannot hold it (CheckRunID), so a stored id with it was
// made by a Scope.
const tenantSep = "~"

// LocalID returns the id a tenant knows a stored run or session id by: the
// stored id without its tenant's prefix. Two tenants' runs may share a
// local id.
func LocalID(stored string) string {
	if i := strings.LastIndex(stored, tenantSep); i >= 0 {
		return stored[i+len(tenantSep):]
	}
	return stored
}

// candidates are the stored ids a tenant's id may have, in the order they
// are looked up; the first one free is where a new run or session goes.
func (s *Scope) candidates(id string) []string {
	switch t := s.p.Tenant; t {
	case AllTenants:
		return []string{id}
	case hitchtype.DefaultTenant:
		return []string{id, t + tenantSep + id}
	default:
		return []string{t + tenantSep + id, id}
	}
}

// local is the id the scope's tenant knows a stored id by.
func (s *Scope) local(stored string) string {
	if s.p.Tenant == AllTenants || stored == "" {
		return stored
	}
	return strings.TrimPrefix(stored, s.p.Tenant+tenantSep)
}

// nameable reports whether id can name something the scope may reach: a
// tenant's ids never hold the separator (only stored ids do).
func (s *Scope) nameable(id string) bool {
	if id == "" || len(id) > store.MaxNameBytes {
		return false
	}
	return s.p.Tenant == AllTenants || !strings.Contains(id, tenantSep)
}

func (s *Scope) owns(tenant string) bool { return s.p.Tenant == AllTenants || tenant == s.p.Tenant }

// find looks a run up inside the tenant. It returns the run as stored and
// the first stored id that was free, for a start.
func (s *Scope) find(ctx context.Context, id string) (Run, string, error) {
	return lookup(ctx, s, "run", id, s.rt.Get, func(r Run) (string, string) { return r.ID, r.Tenant }, ErrNotFound)
}

// findSession is find for a session.
func (s *Scope) findSession(ctx context.Context, id string) (Session, string, error) {
	return lookup(ctx, s, "session", id, s.rt.GetSession, func(ses Session) (string, string) { return ses.ID, ses.Tenant }, ErrSessionNotFound)
}

// lookup finds the stored row a tenant's id names: the first of its
// candidates that exists and is the tenant's. It also returns the first
// candidate that was free. A row of another tenant, like one that does not
// exist, is missing. What it finds is remembered for the scope's next
// lookups, which still read the row.
func lookup[T any](ctx context.Context, s *Scope, what, id string, get func(context.Context, string) (T, error),
	key func(T) (stored, tenant string), missing error) (found T, free string, err error) {
	var zero T
	if !s.nameable(id) {
		return zero, "", fmt.Errorf("%s %.60q: %w", what, id, missing)
	}
	s.mu.Lock()
	stored, ok := s.resolved[what+" "+id]
	s.mu.Unlock()
	if ok {
		if found, err = get(ctx, stored); err == nil {
			return found, "", nil
		}
	}
	for _, c := range s.candidates(id) {
		got, err := get(ctx, c)
		switch {
		case errors.Is(err, missing):
			if free == "" {
				free = c
			}
			continue
		case err != nil:
			return zero, "", err
		}
		stored, tenant := key(got)
		if !s.owns(tenant) {
			continue
		}
		s.mu.Lock()
		if s.resolved == nil || len(s.resolved) >= 256 {
			s.resolved = map[string]string{}
		}
		s.resolved[what+" "+id] = stored
		s.mu.Unlock()
		return got, "", nil
	}
	return zero, free, fmt.Errorf("%s %.60q: %w", what, id, missing)
}

// onRun checks the method's role, looks a run up inside the tenant and
// calls f with its stored id.
func onRun[T any](ctx context.Context, s *Scope, method, id string, f func(stored string) (T, error)) (T, error) {
	var zero T
	if err := s.allow(method); err != nil {
		return zero, err
	}
	stored, err := s.run(ctx, id)
	if err != nil {
		return zero, err
	}
	return f(stored)
}

// onSession is onRun for a session.
func onSession[T any](ctx context.Context, s *Scope, method, id string, f func(stored string) (T, error)) (T, error) {
	var zero T
	if err := s.allow(method); err != nil {
		return zero, err
	}
	stored, err := s.session(ctx, id)
	if err != nil {
		return zero, err
	}
	return f(stored)
}

// onRunDo is onRun for a command that returns only an error.
func onRunDo(ctx context.Context, s *Scope, method, id string, f func(stored string) error) error {
	_, err := onRun(ctx, s, method, id, func(stored string) (struct{}, error) { return struct{}{}, f(stored) })
	return err
}

// onSessionDo is onSession for a command that returns only an error.
func onSessionDo(ctx context.Context, s *Scope, method, id string, f func(stored string) error) error {
	_, err := onSession(ctx, s, method, id, func(stored string) (struct{}, error) { return struct{}{}, f(stored) })
	return err
}

// run looks a run up inside the tenant and returns its stored id.
func (s *Scope) run(ctx context.Context, id string) (string, error) {
	r, _, err := s.find(ctx, id)
	return r.ID, err
}

// out speaks a run in the tenant's ids.
func (s *Scope) out(r Run) Run {
	r.ID, r.RootID, r.ParentID = s.local(r.ID), s.local(r.RootID), s.local(r.ParentID)
	return r
}

// Start starts a run of agent on input for the scope's tenant, as
// Runtime.Start does; WithID names it in the tenant's own ids, and an id
// another tenant uses is as free as any. WithTenant may only name the
// scope's tenant (any, for AllTenants).
func (s *Scope) Start(ctx context.Context, agent *Agent, input string, opts ...StartOption) (StartResult, error) {
	if err := s.allow("Start"); err != nil {
		return StartResult{}, err
	}
	var o startOptions
	for _, f := range opts {
		f(&o)
	}
	if s.p.Tenant != AllTenants {
		if o.tenant != "" && o.tenant != s.p.Tenant {
			return StartResult{}, &ForbiddenError{Op: "Start", Principal: s.p.Name, Role: s.p.Role, Reason: "WithTenant names another tenant"}
		}
		o.tenant = s.p.Tenant
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

// create makes a new run of the tenant named id with f, which creates it
// under a stored id: the one id already names, or the first free one. A
// stored id another tenant took meanwhile is passed over for the next.
func (s *Scope) create(ctx context.Context, op, id string, f func(stored string) (StartResult, error)) (StartResult, error) {
	found, free, err := s.find(ctx, id)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return StartResult{}, err
	}
	tries := s.candidates(id)
	if err == nil {
		tries = []string{found.ID}
	} else if i := indexOf(tries, free); i >= 0 {
		tries = tries[i:]
	}
	for _, stored := range tries {
		res, err := f(stored)
		if err != nil {
			return StartResult{}, err
		}
		if !s.owns(res.Run.Tenant) {
			continue // taken by another tenant meanwhile: the next is as good
		}
		res.Run = s.out(res.Run)
		return res, nil
	}
	return StartResult{}, fmt.Errorf("%s %s: every stored id for it was taken meanwhile: try again", op, id)
}

func indexOf(list []string, v string) int {
	for i, x := range list {
		if x == v {
			return i
		}
	}
	return -1
}

// Get returns a run of the tenant as it stands.
func (s *Scope) Get(ctx context.Context, runID string) (Run, error) {
	if err := s.allow("Get"); err != nil {
		return Run{}, err
	}
	r, _, err := s.find(ctx, runID)
	if err != nil {
		return Run{}, err
	}
	return s.out(r), nil
}

// Await waits as Runtime.Await does, for a run of the tenant.
func (s *Scope) Await(ctx context.Context, runID string) (Run, error) {
	return onRun(ctx, s, "Await", runID, func(stored string) (Run, error) {
		r, err := s.rt.Await(ctx, stored)
		return s.out(r), err
	})
}

// Cancel cancels a run of the tenant, as Runtime.Cancel does; who asked
// is the principal's name unless CancelBy names someone.
func (s *Scope) Cancel(ctx context.Context, runID string, opts ...CancelOption) (Run, error) {
	return onRun(ctx, s, "Cancel", runID, func(stored string) (Run, error) {
		r, err := s.rt.Cancel(ctx, stored, append([]CancelOption{CancelBy(s.p.Name)}, opts...)...)
		return s.out(r), err
	})
}

// Call returns the record of one tool call of a run of the tenant, as
// Runtime.Call does.
func (s *Scope) Call(ctx context.Context, runID, key string) (CallRecord, error) {
	return onRun(ctx, s, "Call", runID, func(stored string) (CallRecord, error) { return s.rt.Call(ctx, stored, key) })
}

// Reconcile settles an uncertain call of a run of the tenant, as
// Runtime.Reconcile does; rec.By defaults to the principal's name.
func (s *Scope) Reconcile(ctx context.Context, runID string, rec Reconciliation) error {
	return onRunDo(ctx, s, "Reconcile", runID, func(stored string) error {
		rec.By = cmp.Or(rec.By, s.p.Name)
		return s.rt.Reconcile(ctx, stored, rec)
	})
}

// Wake delivers an event to a run of the tenant, as Runtime.Wake does; by
// defaults to the principal's name.
func (s *Scope) Wake(ctx context.Context, runID, event string, data json.RawMessage, by string) error {
	return onRunDo(ctx, s, "Wake", runID, func(stored string) error {
		return s.rt.Wake(ctx, stored, event, data, cmp.Or(by, s.p.Name))
	})
}

// CompleteCall completes a call of a run of the tenant, as
// Runtime.CompleteCall does; c.By defaults to the principal's name.
func (s *Scope) CompleteCall(ctx context.Context, runID string, c Completion) error {
	return onRunDo(ctx, s, "CompleteCall", runID, func(stored string) error {
		c.By = cmp.Or(c.By, s.p.Name)
		return s.rt.CompleteCall(ctx, stored, c)
	})
}

// Waits lists what a run of the tenant waits on.
func (s *Scope) Waits(ctx context.Context, runID string) ([]Wait, error) {
	return onRun(ctx, s, "Waits", runID, func(stored string) ([]Wait, error) { return s.rt.Waits(ctx, stored) })
}

// Journal returns a run's entries after position after, at most limit;
// each entry names its run by the tenant's id.
func (s *Scope) Journal(ctx context.Context, runID string, after int64, limit int) ([]store.Entry, error) {
	return onRun(ctx, s, "Journal", runID, func(stored string) ([]store.Entry, error) {
		es, err := s.rt.Journal(ctx, stored, after, limit)
		for i := range es {
			es[i].RunID = s.local(es[i].RunID)
		}
		return es, err
	})
}

// Runs lists the tenant's runs as Runtime.Runs does. p.Tenant is the
// scope's (AllTenants honours it); a ParentID or RootID that is not the
// tenant's lists nothing.
func (s *Scope) Runs(ctx context.Context, p RunsParams) (page []Run, next string, err error) {
	if err := s.allow("Runs"); err != nil {
		return nil, "", err
	}
	none, err := s.filter(ctx, &p)
	if err != nil || none {
		return []Run{}, "", err
	}
	page, next, err = s.rt.Runs(ctx, p)
	for i := range page {
		page[i] = s.out(page[i])
	}
	return page, next, err
}

// filter keeps p to the scope's tenant and turns its ParentID and RootID
// into stored ids; none is true when one of them is not the tenant's, so
// the listing holds nothing.
func (s *Scope) filter(ctx context.Context, p *RunsParams) (none bool, err error) {
	if s.p.Tenant != AllTenants {
		p.Tenant = s.p.Tenant
	}
	for _, id := range []*string{&p.ParentID, &p.RootID} {
		if *id == "" {
			continue
		}
		stored, err := s.run(ctx, *id)
		if errors.Is(err, ErrNotFound) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		*id = stored
	}
	return false, nil
}

// tenantFilter is the tenant a listing of the scope keeps: "" (every
// tenant) for AllTenants.
func (s *Scope) tenantFilter() string {
	if s.p.Tenant == AllTenants {
		return ""
	}
	return s.p.Tenant
}

// RunCounts counts the tenant's runs by status.
func (s *Scope) RunCounts(ctx context.Context) (map[hitchtype.Status]int, error) {
	if err := s.allow("RunCounts"); err != nil {
		return nil, err
	}
	return s.rt.RunCounts(ctx, s.tenantFilter())
}

// RunCountsFor counts the tenant's runs by status among those p's filters
// keep, as Runtime.RunCountsFor does.
func (s *Scope) RunCountsFor(ctx context.Context, p RunsParams) (map[hitchtype.Status]int, error) {
	if err := s.allow("RunCountsFor"); err != nil {
		return nil, err
	}
	none, err := s.filter(ctx, &p)
	if err != nil || none {
		return map[hitchtype.Status]int{}, err
	}
	return s.rt.RunCountsFor(ctx, p)
}

// approvalOut speaks an approval request in the tenant's ids.
func (s *Scope) approvalOut(a PendingApproval) PendingApproval {
	a.RunID, a.RootID = s.local(a.RunID), s.local(a.RootID)
	return a
}

// PendingApprovals lists the tenant's approval requests waiting for an
// answer, as Runtime.PendingApprovals does; a RootID that is not the
// tenant's is ErrNotFound.
func (s *Scope) PendingApprovals(ctx context.Context, p PendingApprovalsParams) (page []PendingApproval, next string, err error) {
	if err := s.allow("PendingApprovals"); err != nil {
		return nil, "", err
	}
	p.Tenant = s.tenantFilter()
	if p.RootID != "" {
		if p.RootID, err = s.run(ctx, p.RootID); err != nil {
			return nil, "", err
		}
	}
	page, next, err = s.rt.PendingApprovals(ctx, p)
	for i := range page {
		page[i] = s.approvalOut(page[i])
	}
	return page, next, err
}

// ApprovalRequest returns one approval request of a run of the tenant.
func (s *Scope) ApprovalRequest(ctx context.Context, runID, call string) (PendingApproval, error) {
	return onRun(ctx, s, "ApprovalRequest", runID, func(stored string) (PendingApproval, error) {
		a, err := s.rt.ApprovalRequest(ctx, stored, call)
		return s.approvalOut(a), err
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
	return onRunDo(ctx, s, "AnswerApproval", runID, func(stored string) error {
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
	return onRun(ctx, s, "Roots", runID, func(stored string) ([]string, error) { return s.rt.Roots(ctx, stored) })
}

// GrantRoot grants a directory to a run of the tenant, in the principal's
// name, as Runtime.GrantRoot does.
func (s *Scope) GrantRoot(ctx context.Context, runID, path string) error {
	return onRunDo(ctx, s, "GrantRoot", runID, func(stored string) error { return s.rt.GrantRoot(ctx, stored, path, s.p.Name) })
}

// RevokeRoot takes a granted directory back from a run of the tenant.
func (s *Scope) RevokeRoot(ctx context.Context, runID, path string) error {
	return onRunDo(ctx, s, "RevokeRoot", runID, func(stored string) error { return s.rt.RevokeRoot(ctx, stored, path, s.p.Name) })
}

// Budget returns what bounds a run of the tenant and what is left of it.
func (s *Scope) Budget(ctx context.Context, runID string) (RunBudget, error) {
	return onRun(ctx, s, "Budget", runID, func(stored string) (RunBudget, error) {
		b, err := s.rt.Budget(ctx, stored)
		b.RunID, b.RootID = s.local(b.RunID), s.local(b.RootID)
		return b, err
	})
}

// ContextRequests returns the model requests of a run of the tenant.
func (s *Scope) ContextRequests(ctx context.Context, runID string) ([]hitchtype.ContextRequest, error) {
	return onRun(ctx, s, "ContextRequests", runID, func(stored string) ([]hitchtype.ContextRequest, error) { return s.rt.ContextRequests(ctx, stored) })
}

// LatestContextRequests returns up to n of the latest model requests of a
// run of the tenant.
func (s *Scope) LatestContextRequests(ctx context.Context, runID string, n int) ([]hitchtype.ContextRequest, bool, error) {
	if err := s.allow("LatestContextRequests"); err != nil {
		return nil, false, err
	}
	stored, err := s.run(ctx, runID)
	if err != nil {
		return nil, false, err
	}
	return s.rt.LatestContextRequests(ctx, stored, n)
}

// FamilyCost sums what the family of a root run of the tenant has cost.
func (s *Scope) FamilyCost(ctx context.Context, rootID string) (RunningCost, error) {
	return onRun(ctx, s, "FamilyCost", rootID, func(stored string) (RunningCost, error) { return s.rt.FamilyCost(ctx, stored) })
}

// FamilyUsage sums the usage of the family of a root run of the tenant.
func (s *Scope) FamilyUsage(ctx context.Context, rootID string) (FamilyUsage, error) {
	return onRun(ctx, s, "FamilyUsage", rootID, func(stored string) (FamilyUsage, error) { return s.rt.FamilyUsage(ctx, stored) })
}

// Preview is Runtime.Preview; a session it names is looked up inside the
// tenant.
func (s *Scope) Preview(ctx context.Context, agent *Agent, o PreviewOptions) (RequestPreview, error) {
	if err := s.allow("Preview"); err != nil {
		return RequestPreview{}, err
	}
	stored := ""
	if o.Session != "" {
		ses, _, err := s.findSession(ctx, o.Session)
		if err != nil {
			return RequestPreview{}, err
		}
		stored = ses.ID
	}
	return s.rt.preview(ctx, agent, o, stored)
}

func (s *Scope) session(ctx context.Context, id string) (string, error) {
	ses, _, err := s.findSession(ctx, id)
	return ses.ID, err
}

// sessionOut speaks a session in the tenant's ids.
func (s *Scope) sessionOut(ses Session) Session {
	ses.ID, ses.ActiveRun = s.local(ses.ID), s.local(ses.ActiveRun)
	return ses
}

// OpenSession opens a session of agent for the scope's tenant, as
// Runtime.OpenSession does; o.ID names it in the tenant's own ids, and an
// id another tenant uses is as free as any. created is false when the
// tenant's session with the id existed. o.Tenant may only name the scope's
// tenant (any, for AllTenants).
func (s *Scope) OpenSession(ctx context.Context, agent *Agent, o SessionOptions) (ses Session, created bool, err error) {
	if err := s.allow("OpenSession"); err != nil {
		return Session{}, false, err
	}
	if s.p.Tenant != AllTenants {
		if o.Tenant != "" && o.Tenant != s.p.Tenant {
			return Session{}, false, &ForbiddenError{Op: "OpenSession", Principal: s.p.Name, Role: s.p.Role, Reason: "SessionOptions.Tenant names another tenant"}
		}
		o.Tenant = s.p.Tenant
	}
	if o.ID == "" {
		o.ID = hitchtype.NewID("ses_", 10)
	}
	if err := hitchtype.CheckSessionID(o.ID); err != nil {
		return Session{}, false, fmt.Errorf("open session: SessionOptions.ID: %w", err)
	}
	found, free, err := s.findSession(ctx, o.ID)
	if err != nil && !errors.Is(err, ErrSessionNotFound) {
		return Session{}, false, err
	}
	tries := s.candidates(o.ID)
	if err == nil {
		tries = []string{found.ID}
	} else if i := indexOf(tries, free); i >= 0 {
		tries = tries[i:]
	}
	for _, stored := range tries {
		got, err := s.rt.openSession(ctx, agent, o, stored)
		if errors.Is(err, ErrSessionTenant) {
			continue // taken by another tenant meanwhile
		}
		if err != nil {
			return Session{}, false, err
		}
		return s.sessionOut(got), found.ID == "", nil
	}
	return Session{}, false, fmt.Errorf("open session %s: every stored id for it was taken meanwhile: try again", o.ID)
}

// GetSession returns a session of the tenant as it stands.
func (s *Scope) GetSession(ctx context.Context, sessionID string) (Session, error) {
	if err := s.allow("GetSession"); err != nil {
		return Session{}, err
	}
	ses, _, err := s.findSession(ctx, sessionID)
	if err != nil {
		return Session{}, err
	}
	return s.sessionOut(ses), nil
}

// Sessions lists the tenant's sessions in the order of their stored ids,
// after the cursor p.After (the next of the previous page); next is empty
// after a page that is not full.
func (s *Scope) Sessions(ctx context.Context, p SessionsParams) (page []Session, next string, err error) {
	if err := s.allow("Sessions"); err != nil {
		return nil, "", err
	}
	p.Tenant = s.tenantFilter()
	list, err := s.rt.Sessions(ctx, p)
	if err != nil {
		return nil, "", err
	}
	limit := p.Limit
	if limit == 0 {
		limit = DefaultPageLimit
	}
	if len(list) == limit {
		next = list[len(list)-1].ID
	}
	for i := range list {
		list[i] = s.sessionOut(list[i])
	}
	return list, next, nil
}

// Send admits a message to a session of the tenant, as Runtime.Send does.
func (s *Scope) Send(ctx context.Context, sessionID, text string, o SendOptions) (SendResult, error) {
	return onSession(ctx, s, "Send", sessionID, func(stored string) (SendResult, error) { return s.rt.Send(ctx, stored, text, o) })
}

// Interrupt interrupts the running submission of a session of the tenant.
func (s *Scope) Interrupt(ctx context.Context, sessionID string) error {
	return onSessionDo(ctx, s, "Interrupt", sessionID, func(stored string) error { return s.rt.Interrupt(ctx, stored) })
}

// Queue lists the queued messages of a session of the tenant.
func (s *Scope) Queue(ctx context.Context, sessionID string, limit int) ([]QueuedMessage, error) {
	return onSession(ctx, s, "Queue", sessionID, func(stored string) ([]QueuedMessage, error) { return s.rt.Queue(ctx, stored, limit) })
}

// Edit replaces the text of a queued message of a session of the tenant.
func (s *Scope) Edit(ctx context.Context, sessionID, messageID, text string) error {
	return onSessionDo(ctx, s, "Edit", sessionID, func(stored string) error { return s.rt.Edit(ctx, stored, messageID, text) })
}

// Remove takes a queued message out of a session of the tenant.
func (s *Scope) Remove(ctx context.Context, sessionID, messageID string) error {
	return onSessionDo(ctx, s, "Remove", sessionID, func(stored string) error { return s.rt.Remove(ctx, stored, messageID) })
}

// SessionJournal returns a session's journal entries after position
// after, at most limit; each names its session by the tenant's id.
func (s *Scope) SessionJournal(ctx context.Context, sessionID string, after int64, limit int) ([]SessionEntry, error) {
	return onSession(ctx, s, "SessionJournal", sessionID, func(stored string) ([]SessionEntry, error) {
		es, err := s.rt.SessionJournal(ctx, stored, after, limit)
		for i := range es {
			es[i].SessionID = s.local(es[i].SessionID)
		}
		return es, err
	})
}

// statusOut speaks a session's state in the tenant's ids.
func (s *Scope) statusOut(st SessionStatus) SessionStatus {
	st.Session = s.sessionOut(st.Session)
	for i := range st.Submissions {
		st.Submissions[i].RunID = s.local(st.Submissions[i].RunID)
	}
	return st
}

// SessionStatus returns the state of a session of the tenant.
func (s *Scope) SessionStatus(ctx context.Context, sessionID string) (SessionStatus, error) {
	return onSession(ctx, s, "SessionStatus", sessionID, func(stored string) (SessionStatus, error) {
		st, err := s.rt.SessionStatus(ctx, stored)
		return s.statusOut(st), err
	})
}

// AwaitSession waits until a session of the tenant is at rest, as
// Runtime.AwaitSession does.
func (s *Scope) AwaitSession(ctx context.Context, sessionID string) (SessionStatus, error) {
	return onSession(ctx, s, "AwaitSession", sessionID, func(stored string) (SessionStatus, error) {
		st, err := s.rt.AwaitSession(ctx, stored)
		return s.statusOut(st), err
	})
}

// SessionCost sums what a session of the tenant has cost so far.
func (s *Scope) SessionCost(ctx context.Context, sessionID string) (RunningCost, error) {
	return onSession(ctx, s, "SessionCost", sessionID, func(stored string) (RunningCost, error) { return s.rt.SessionCost(ctx, stored) })
}
