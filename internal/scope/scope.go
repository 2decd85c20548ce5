// Package scope is the work of the runtime's one gate (hitch.Scope): the
// role each of its methods needs, and a tenant's ids in the store — the
// stored ids a tenant's id may have, the lookup of a row inside the tenant,
// and a new row's stored id.
package scope

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

// Roles is the role each method of the gate needs, in the spirit of one
// table of read-only calls: a method that is not listed needs RoleAdmin, so
// a method added without its row fails closed. A test holds the table and
// the methods to each other.
var Roles = map[string]hitchtype.Role{
	// Reads.
	"Get": hitchtype.RoleViewer, "Await": hitchtype.RoleViewer, "Call": hitchtype.RoleViewer, "Runs": hitchtype.RoleViewer,
	"RunCounts": hitchtype.RoleViewer, "RunCountsFor": hitchtype.RoleViewer, "Journal": hitchtype.RoleViewer,
	"Follow": hitchtype.RoleViewer, "Waits": hitchtype.RoleViewer, "PendingApprovals": hitchtype.RoleViewer,
	"ApprovalRequest": hitchtype.RoleViewer, "Roots": hitchtype.RoleViewer, "Budget": hitchtype.RoleViewer,
	"ContextRequests": hitchtype.RoleViewer, "LatestContextRequests": hitchtype.RoleViewer,
	"FamilyCost": hitchtype.RoleViewer, "FamilyUsage": hitchtype.RoleViewer, "Preview": hitchtype.RoleViewer,
	"GetSession": hitchtype.RoleViewer, "Sessions": hitchtype.RoleViewer, "Queue": hitchtype.RoleViewer,
	"SessionJournal": hitchtype.RoleViewer, "SessionStatus": hitchtype.RoleViewer, "SessionCost": hitchtype.RoleViewer,
	"AwaitSession": hitchtype.RoleViewer, "GetTrigger": hitchtype.RoleViewer, "ListTriggers": hitchtype.RoleViewer,
	// Commands to what exists.
	"Cancel": hitchtype.RoleOperator, "Reconcile": hitchtype.RoleOperator, "AnswerApproval": hitchtype.RoleOperator,
	"GrantRoot": hitchtype.RoleOperator, "RevokeRoot": hitchtype.RoleOperator, "Wake": hitchtype.RoleOperator,
	"CompleteCall": hitchtype.RoleOperator, "Interrupt": hitchtype.RoleOperator,
	// What creates work or changes what a model will read.
	"Start": hitchtype.RoleAdmin, "Fork": hitchtype.RoleAdmin, "OpenSession": hitchtype.RoleAdmin, "Send": hitchtype.RoleAdmin,
	"Edit": hitchtype.RoleAdmin, "Remove": hitchtype.RoleAdmin, "CreateTrigger": hitchtype.RoleAdmin,
	"PauseTrigger": hitchtype.RoleAdmin, "ResumeTrigger": hitchtype.RoleAdmin, "RemoveTrigger": hitchtype.RoleAdmin,
	// What reports on the whole deployment: its operator's.
	"Doctor": hitchtype.RoleAdmin,
}

// RoleFor returns the role a method needs (RoleAdmin for a name that is
// not in Roles).
func RoleFor(method string) hitchtype.Role {
	if r, ok := Roles[method]; ok {
		return r
	}
	return hitchtype.RoleAdmin
}

// Sep joins a tenant and its own id into a stored id. Run and session ids
// cannot hold it (CheckRunID), so a stored id with it was made by a gate.
const Sep = "~"

// LocalID returns the id a tenant knows a stored id by: the stored id
// without its tenant's prefix.
func LocalID(stored string) string {
	if i := strings.LastIndex(stored, Sep); i >= 0 {
		return stored[i+len(Sep):]
	}
	return stored
}

// Gate is one principal's gate: it checks the principal's role and finds
// rows inside the principal's tenant, through Run and Session.
type Gate struct {
	// P is the principal, its tenant set.
	P hitchtype.Principal
	// Err, when set, refuses the principal every method.
	Err error
	// Run and Session read a row by its stored id.
	Run     func(ctx context.Context, id string) (hitchtype.Run, error)
	Session func(ctx context.Context, id string) (hitchtype.Session, error)

	mu       sync.Mutex
	resolved map[string]string // what and the tenant's id → stored id, found already
}

// New returns the gate of p. A principal with an unknown role or a
// malformed tenant is served nothing: Err refuses every method.
func New(p hitchtype.Principal, run func(context.Context, string) (hitchtype.Run, error),
	session func(context.Context, string) (hitchtype.Session, error)) *Gate {
	if p.Tenant == "" {
		p.Tenant = hitchtype.DefaultTenant
	}
	g := &Gate{P: p, Run: run, Session: session}
	switch {
	case !p.Role.Valid():
		g.Err = g.Forbid("scope", fmt.Sprintf("role %q: want viewer, operator or admin", p.Role))
	case p.Tenant != hitchtype.AllTenants && hitchtype.CheckTenant(p.Tenant) != nil:
		g.Err = g.Forbid("scope", "the principal's tenant is malformed")
	}
	return g
}

// Forbid refuses op to the principal for reason.
func (g *Gate) Forbid(op, reason string) error {
	return &hitchtype.ForbiddenError{Op: op, Principal: g.P.Name, Role: g.P.Role, Reason: reason}
}

// Allow refuses a method the principal's role does not reach.
func (g *Gate) Allow(method string) error {
	if g.Err != nil {
		return g.Err
	}
	if need := RoleFor(method); g.P.Role.Rank() < need.Rank() {
		return &hitchtype.ForbiddenError{Op: method, Principal: g.P.Name, Role: g.P.Role, Need: need}
	}
	return nil
}

// Tenant sets *t to the principal's tenant, refusing op when *t names
// another (field names it); a principal of AllTenants may name any.
func (g *Gate) Tenant(op, field string, t *string) error {
	if g.P.Tenant == hitchtype.AllTenants {
		return nil
	}
	if *t != "" && *t != g.P.Tenant {
		return g.Forbid(op, field+" names another tenant")
	}
	*t = g.P.Tenant
	return nil
}

// Filter is the tenant a listing keeps: "" (every tenant) for AllTenants.
func (g *Gate) Filter() string {
	if g.P.Tenant == hitchtype.AllTenants {
		return ""
	}
	return g.P.Tenant
}

// Candidates are the stored ids a tenant's id may have, in the order they
// are looked up; the first one free is where a new run or session goes.
func (g *Gate) Candidates(id string) []string {
	switch t := g.P.Tenant; t {
	case hitchtype.AllTenants:
		return []string{id}
	case hitchtype.DefaultTenant:
		return []string{id, t + Sep + id}
	default:
		return []string{t + Sep + id, id}
	}
}

// Local is the id the tenant knows a stored id by.
func (g *Gate) Local(stored string) string {
	if g.P.Tenant == hitchtype.AllTenants || stored == "" {
		return stored
	}
	return strings.TrimPrefix(stored, g.P.Tenant+Sep)
}

// nameable reports whether id can name something the gate may reach: a
// tenant's ids never hold the separator (only stored ids do).
func (g *Gate) nameable(id string) bool {
	if id == "" || len(id) > store.MaxNameBytes {
		return false
	}
	return g.P.Tenant == hitchtype.AllTenants || !strings.Contains(id, Sep)
}

// Owns reports whether a row of tenant is the principal's.
func (g *Gate) Owns(tenant string) bool {
	return g.P.Tenant == hitchtype.AllTenants || tenant == g.P.Tenant
}

// FindRun looks a run up inside the tenant. It returns the run as stored
// and the first stored id that was free, for a start.
func (g *Gate) FindRun(ctx context.Context, id string) (hitchtype.Run, string, error) {
	return lookup(ctx, g, "run", id, g.Run, func(r hitchtype.Run) (string, string) { return r.ID, r.Tenant }, store.ErrNotFound)
}

// FindSession is FindRun for a session.
func (g *Gate) FindSession(ctx context.Context, id string) (hitchtype.Session, string, error) {
	return lookup(ctx, g, "session", id, g.Session, func(s hitchtype.Session) (string, string) { return s.ID, s.Tenant }, store.ErrSessionNotFound)
}

// RunID looks a run up inside the tenant and returns its stored id.
func (g *Gate) RunID(ctx context.Context, id string) (string, error) {
	r, _, err := g.FindRun(ctx, id)
	return r.ID, err
}

// SessionID looks a session up inside the tenant and returns its stored
// id.
func (g *Gate) SessionID(ctx context.Context, id string) (string, error) {
	s, _, err := g.FindSession(ctx, id)
	return s.ID, err
}

// lookup finds the stored row a tenant's id names: the first of its
// candidates that exists and is the tenant's. It also returns the first
// candidate that was free. A row of another tenant, like one that does not
// exist, is missing. What it finds is remembered for the gate's next
// lookups, which still read the row.
func lookup[T any](ctx context.Context, g *Gate, what, id string, get func(context.Context, string) (T, error),
	key func(T) (stored, tenant string), missing error) (found T, free string, err error) {
	var zero T
	if !g.nameable(id) {
		return zero, "", fmt.Errorf("%s %.60q: %w", what, id, missing)
	}
	g.mu.Lock()
	stored, ok := g.resolved[what+" "+id]
	g.mu.Unlock()
	if ok {
		if found, err = get(ctx, stored); err == nil {
			return found, "", nil
		}
	}
	for _, c := range g.Candidates(id) {
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
		if !g.Owns(tenant) {
			continue
		}
		g.mu.Lock()
		if g.resolved == nil || len(g.resolved) >= 256 {
			g.resolved = map[string]string{}
		}
		g.resolved[what+" "+id] = stored
		g.mu.Unlock()
		return got, "", nil
	}
	return zero, free, fmt.Errorf("%s %.60q: %w", what, id, missing)
}

// Tries are the stored ids a new row the tenant names id may take, in
// order, from a lookup's answer: the one id already names (found), or the
// candidates from the first one free on. An error other than missing is
// returned.
func (g *Gate) Tries(id, found, free string, err, missing error) ([]string, error) {
	if err != nil && !errors.Is(err, missing) {
		return nil, err
	}
	tries := g.Candidates(id)
	if err == nil {
		return []string{found}, nil
	}
	for i, c := range tries {
		if c == free {
			return tries[i:], nil
		}
	}
	return tries, nil
}

// Create makes a new run the tenant names id with f, which creates it under
// a stored id: the one id already names, or the first free one. A stored id
// another tenant took meanwhile is passed over for the next; tenant tells
// the tenant of what f made.
func Create[T any](ctx context.Context, g *Gate, op, id string, f func(stored string) (T, error), tenant func(T) string) (T, error) {
	var zero T
	found, free, err := g.FindRun(ctx, id)
	tries, err := g.Tries(id, found.ID, free, err, store.ErrNotFound)
	if err != nil {
		return zero, err
	}
	for _, stored := range tries {
		res, err := f(stored)
		if err != nil {
			return zero, err
		}
		if !g.Owns(tenant(res)) {
			continue // taken by another tenant meanwhile: the next is as good
		}
		return res, nil
	}
	return zero, fmt.Errorf("%s %s: every stored id for it was taken meanwhile: try again", op, id)
}

// On checks the method's role, looks a run up inside the tenant and calls
// f with its stored id.
func On[T any](ctx context.Context, g *Gate, method, id string, f func(stored string) (T, error)) (T, error) {
	return on(ctx, g, method, id, g.RunID, f)
}

// OnSession is On for a session.
func OnSession[T any](ctx context.Context, g *Gate, method, id string, f func(stored string) (T, error)) (T, error) {
	return on(ctx, g, method, id, g.SessionID, f)
}

// Do is On for a command that returns only an error.
func Do(ctx context.Context, g *Gate, method, id string, f func(stored string) error) error {
	_, err := On(ctx, g, method, id, func(stored string) (struct{}, error) { return struct{}{}, f(stored) })
	return err
}

// DoSession is OnSession for a command that returns only an error.
func DoSession(ctx context.Context, g *Gate, method, id string, f func(stored string) error) error {
	_, err := OnSession(ctx, g, method, id, func(stored string) (struct{}, error) { return struct{}{}, f(stored) })
	return err
}

func on[T any](ctx context.Context, g *Gate, method, id string, find func(context.Context, string) (string, error), f func(string) (T, error)) (T, error) {
	var zero T
	if err := g.Allow(method); err != nil {
		return zero, err
	}
	stored, err := find(ctx, id)
	if err != nil {
		return zero, err
	}
	return f(stored)
}

// FilterRuns keeps a listing of runs to the tenant: it sets *tenant to the
// tenant's and turns the parent and root ids given into stored ids; none is
// true when one of them is not the tenant's, so the listing holds nothing.
func (g *Gate) FilterRuns(ctx context.Context, tenant *string, ids ...*string) (none bool, err error) {
	if g.P.Tenant != hitchtype.AllTenants {
		*tenant = g.P.Tenant
	}
	for _, id := range ids {
		if *id == "" {
			continue
		}
		stored, err := g.RunID(ctx, *id)
		if errors.Is(err, store.ErrNotFound) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		*id = stored
	}
	return false, nil
}

// OutRun speaks a run in the tenant's ids.
func (g *Gate) OutRun(r hitchtype.Run) hitchtype.Run {
	r.ID, r.RootID, r.ParentID = g.Local(r.ID), g.Local(r.RootID), g.Local(r.ParentID)
	return r
}

// OutApproval speaks an approval request in the tenant's ids.
func (g *Gate) OutApproval(a hitchtype.PendingApproval) hitchtype.PendingApproval {
	a.RunID, a.RootID = g.Local(a.RunID), g.Local(a.RootID)
	return a
}

// OutSession speaks a session in the tenant's ids.
func (g *Gate) OutSession(s hitchtype.Session) hitchtype.Session {
	s.ID, s.ActiveRun = g.Local(s.ID), g.Local(s.ActiveRun)
	return s
}

// OutStatus speaks a session's state in the tenant's ids.
func (g *Gate) OutStatus(st hitchtype.SessionStatus) hitchtype.SessionStatus {
	st.Session = g.OutSession(st.Session)
	for i := range st.Submissions {
		st.Submissions[i].RunID = g.Local(st.Submissions[i].RunID)
	}
	return st
}

// CreateSession is Create for a session: f opens it under a stored id, and
// an error that is taken (the id is another tenant's) passes over to the
// next. created is false when the tenant's session with the id existed.
// The session is spoken in the tenant's ids.
func CreateSession(ctx context.Context, g *Gate, id string, f func(stored string) (hitchtype.Session, error), taken error) (s hitchtype.Session, created bool, err error) {
	found, free, err := g.FindSession(ctx, id)
	tries, err := g.Tries(id, found.ID, free, err, store.ErrSessionNotFound)
	if err != nil {
		return hitchtype.Session{}, false, err
	}
	for _, stored := range tries {
		got, err := f(stored)
		if errors.Is(err, taken) {
			continue // taken by another tenant meanwhile
		}
		if err != nil {
			return hitchtype.Session{}, false, err
		}
		return g.OutSession(got), found.ID == "", nil
	}
	return hitchtype.Session{}, false, fmt.Errorf("open session %s: every stored id for it was taken meanwhile: try again", id)
}

// Page speaks a page of sessions in the tenant's ids; next is the last
// stored id of a full page.
func (g *Gate) Page(list []hitchtype.Session, limit int) (next string) {
	if len(list) == limit {
		next = list[len(list)-1].ID
	}
	for i := range list {
		list[i] = g.OutSession(list[i])
	}
	return next
}
