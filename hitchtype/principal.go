package hitchtype

import (
	"errors"
	"fmt"
)

// Role is what a principal may do through a scope of the runtime. Each
// role may do what the roles below it may.
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

// Rank orders the roles: 1 for RoleViewer up to 3 for RoleAdmin, and 0 for
// anything else.
func (r Role) Rank() int {
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
func (r Role) Valid() bool { return r.Rank() > 0 }

// AllTenants, as a Principal's tenant, reaches every tenant's runs and
// sessions by their stored ids: the principal of the local CLI, which owns
// the store. What it creates belongs to DefaultTenant.
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
	// (CheckTenant), or AllTenants. Empty means DefaultTenant.
	Tenant string
	// Role is what the principal may do.
	Role Role
}

// ErrForbidden: the principal's role does not reach what it asked for, or
// the principal cannot be served at all (an unknown role, a bad tenant).
// The error is a *ForbiddenError.
var ErrForbidden = errors.New("forbidden")

// ForbiddenError refuses a scope's method to a principal.
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
