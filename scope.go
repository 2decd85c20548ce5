package hitch

import (
	"context"
	"encoding/json"
	"iter"

	"github.com/hitch-dev/hitch/approval"
	"github.com/hitch-dev/hitch/doctor"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/node"
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

// Roles, from least to most; hitchtype.RoleViewer and the roles after it
// say what each may do.
const (
	RoleViewer   = hitchtype.RoleViewer
	RoleOperator = hitchtype.RoleOperator
	RoleAdmin    = hitchtype.RoleAdmin
)

// AllTenants, as a Principal's tenant, reaches every tenant's runs and
// sessions by their stored ids: the principal of the local CLI, which owns
// the store. What it creates belongs to hitchtype.DefaultTenant.
const AllTenants = hitchtype.AllTenants

// ErrForbidden: the principal's role does not reach what it asked for, or
// the principal cannot be served at all (an unknown role, a bad tenant).
// The error is a *ForbiddenError.
var ErrForbidden = hitchtype.ErrForbidden

// RoleFor returns the role a method of Scope needs, a client's method by
// the name it had (OpenSession, CreateTrigger …); RoleAdmin for any other.
func RoleFor(method string) Role { return scope.RoleFor(method) }

// Scope is one principal's view of a runtime: the one way the faces of
// hitch — the HTTP API and its event streams, the console, the MCP tools —
// reach runs, sessions, approvals, workspaces and journals. Each method
// checks the principal's role (RoleFor) and looks ids up inside the
// principal's tenant: another tenant's run or session is ErrNotFound or
// sessions.ErrNotFound, exactly as an id that does not exist, and a list
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
type Scope struct{ s *node.Scope }

// As returns the view of the runtime that p may use. A principal with an
// unknown role or a malformed tenant is served nothing: every method
// answers a *ForbiddenError.
func (rt *Runtime) As(p Principal) *Scope { return &Scope{s: rt.n.As(p)} }

// Principal returns who the scope acts for.
func (s *Scope) Principal() Principal { return s.s.P }

// Can reports, with nil, that the principal may call the named method of
// Scope, and otherwise why not (a *ForbiddenError): a face refuses a
// command before it reads the command's input, and shows only the
// controls its user may use.
func (s *Scope) Can(method string) error { return s.s.Allow(method) }

// LocalID returns the id a tenant knows a stored run or session id by: the
// stored id without its tenant's prefix. Two tenants' runs may share a
// local id.
func LocalID(stored string) string { return scope.LocalID(stored) }

// The methods below do what the Runtime's methods of the same names do,
// for a run or session of the tenant, unless their comments say more.

// Start starts a run; WithID names it in the tenant's own ids, and an id
// another tenant uses is as free as any. WithTenant may only name the
// scope's tenant (any, for AllTenants).
func (s *Scope) Start(ctx context.Context, agent *Agent, input string, opts ...StartOption) (StartResult, error) {
	return s.s.Start(ctx, agent.engine(), startOf(input, opts))
}

// Fork forks a run; the fork's id is the tenant's own, and it belongs to
// the tenant.
func (s *Scope) Fork(ctx context.Context, runID string, at int64, opts ForkOptions) (StartResult, error) {
	return s.s.Fork(ctx, runID, at, opts)
}

// Get returns a run as it stands.
func (s *Scope) Get(ctx context.Context, runID string) (Run, error) { return s.s.Get(ctx, runID) }

// Await waits until a run ends or parks.
func (s *Scope) Await(ctx context.Context, runID string) (Run, error) { return s.s.Await(ctx, runID) }

// Cancel cancels a run; who asked is the principal's name unless CancelBy
// names someone.
func (s *Scope) Cancel(ctx context.Context, runID string, opts ...CancelOption) (Run, error) {
	return s.s.Cancel(ctx, runID, cancelOf(opts))
}

// Call returns the record of one tool call of a run.
func (s *Scope) Call(ctx context.Context, runID, key string) (CallRecord, error) {
	return s.s.Call(ctx, runID, key)
}

// Reconcile settles an uncertain call; rec.By defaults to the principal's
// name.
func (s *Scope) Reconcile(ctx context.Context, runID string, rec Reconciliation) error {
	return s.s.Reconcile(ctx, runID, rec)
}

// Wake delivers an event to a run; by defaults to the principal's name.
func (s *Scope) Wake(ctx context.Context, runID, event string, data json.RawMessage, by string) error {
	return s.s.Wake(ctx, runID, event, data, by)
}

// CompleteCall completes a call; c.By defaults to the principal's name.
func (s *Scope) CompleteCall(ctx context.Context, runID string, c Completion) error {
	return s.s.CompleteCall(ctx, runID, c)
}

// Waits lists what a run waits on.
func (s *Scope) Waits(ctx context.Context, runID string) ([]Wait, error) {
	return s.s.Waits(ctx, runID)
}

// Journal returns a run's entries after position after, at most limit;
// each entry names its run by the tenant's id.
func (s *Scope) Journal(ctx context.Context, runID string, after int64, limit int) ([]store.Entry, error) {
	return s.s.Journal(ctx, runID, after, limit)
}

// Follow follows a run's journal.
func (s *Scope) Follow(ctx context.Context, runID string, after int64) iter.Seq2[store.Entry, error] {
	return s.s.Follow(ctx, runID, after)
}

// Runs lists the tenant's runs. p.Tenant is the scope's (AllTenants
// honours it); a ParentID or RootID that is not the tenant's lists
// nothing.
func (s *Scope) Runs(ctx context.Context, p RunsParams) (page []Run, next string, err error) {
	return s.s.Runs(ctx, p)
}

// RunCounts counts the tenant's runs by status.
func (s *Scope) RunCounts(ctx context.Context) (map[hitchtype.Status]int, error) {
	return s.s.RunCounts(ctx)
}

// RunCountsFor counts the tenant's runs by status among those p's filters
// keep.
func (s *Scope) RunCountsFor(ctx context.Context, p RunsParams) (map[hitchtype.Status]int, error) {
	return s.s.RunCountsFor(ctx, p)
}

// PendingApprovals lists the tenant's approval requests waiting for an
// answer; a RootID that is not the tenant's is ErrNotFound.
func (s *Scope) PendingApprovals(ctx context.Context, p PendingApprovalsParams) (page []PendingApproval, next string, err error) {
	return s.s.PendingApprovals(ctx, p)
}

// ApprovalRequest returns one approval request of a run.
func (s *Scope) ApprovalRequest(ctx context.Context, runID, call string) (PendingApproval, error) {
	return s.s.ApprovalRequest(ctx, runID, call)
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

// AnswerApproval checks an approver's credential for a request and
// approves or rejects it, as Runtime.Approve and Runtime.Reject do. A
// credential refused is one of the approval package's errors
// (approval.ErrBadCredential …).
func (s *Scope) AnswerApproval(ctx context.Context, runID, call string, a ApprovalAnswer) error {
	return s.s.AnswerApproval(ctx, runID, call, a.Approve, a.Credential, a.Reason)
}

// Roots lists the roots granted to a run.
func (s *Scope) Roots(ctx context.Context, runID string) ([]string, error) {
	return s.s.Roots(ctx, runID)
}

// GrantRoot grants a directory to a run, in the principal's name.
func (s *Scope) GrantRoot(ctx context.Context, runID, path string) error {
	return s.s.ChangeRoot(ctx, runID, path, false)
}

// RevokeRoot takes a granted directory back from a run, in the
// principal's name.
func (s *Scope) RevokeRoot(ctx context.Context, runID, path string) error {
	return s.s.ChangeRoot(ctx, runID, path, true)
}

// Budget returns what bounds a run and what is left of it.
func (s *Scope) Budget(ctx context.Context, runID string) (RunBudget, error) {
	return s.s.Budget(ctx, runID)
}

// ContextRequests returns the model requests of a run.
func (s *Scope) ContextRequests(ctx context.Context, runID string) ([]hitchtype.ContextRequest, error) {
	return s.s.ContextRequests(ctx, runID)
}

// LatestContextRequests returns up to n of the latest model requests of a
// run.
func (s *Scope) LatestContextRequests(ctx context.Context, runID string, n int) ([]hitchtype.ContextRequest, bool, error) {
	return s.s.LatestContextRequests(ctx, runID, n)
}

// FamilyCost sums what the family of a root run has cost.
func (s *Scope) FamilyCost(ctx context.Context, rootID string) (RunningCost, error) {
	return s.s.FamilyCost(ctx, rootID)
}

// FamilyUsage sums the usage of the family of a root run.
func (s *Scope) FamilyUsage(ctx context.Context, rootID string) (FamilyUsage, error) {
	return s.s.FamilyUsage(ctx, rootID)
}

// Preview previews a run's first request; a session o names is looked up
// inside the tenant.
func (s *Scope) Preview(ctx context.Context, agent *Agent, o PreviewOptions) (RequestPreview, error) {
	return s.s.Preview(ctx, agent.engine(), o)
}

// Doctor runs package doctor's checks on the runtime's deployment, with
// cfg saying what else to check (its Store, when nil, is the runtime's).
// The report covers the store, the sandbox and the secrets that every
// tenant shares, so it is served to admins of the default tenant (or of
// AllTenants) only.
func (s *Scope) Doctor(ctx context.Context, cfg doctor.Config) (doctor.Report, error) {
	return s.s.Doctor(ctx, cfg)
}
