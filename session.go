package hitch

import (
	"context"

	"github.com/hitch-dev/hitch/sessions"
	"github.com/hitch-dev/hitch/triggers"
)

// Sessions returns the client of the runtime's sessions (see package
// sessions); it acts for the library, on stored ids.
func (rt *Runtime) Sessions() sessions.Client { return rt.n.Sessions() }

// Triggers returns the client of the runtime's trigger bindings.
func (rt *Runtime) Triggers() triggers.Client { return rt.n.Triggers() }

// Sessions returns the sessions client of the scope's principal, in its
// tenant's ids; each method needs the role of the Scope method it was
// (RoleFor: OpenSession, Send …).
func (s *Scope) Sessions() sessions.Client { return s.s.Sessions() }

// Triggers returns the trigger bindings client of the scope's principal.
// Bindings are not spoken in a tenant's ids, so only a principal of
// AllTenants reaches them; reads need RoleViewer, the rest RoleAdmin.
func (s *Scope) Triggers() triggers.Client { return s.s.Triggers() }

// RecoverSessions moves on every session that needs it: a submission whose
// run ended but whose end is not recorded (its node died), or an idle
// session with a queued message. It returns how many it looked at. A
// sweeper calls it; so may anyone, at any time.
func (rt *Runtime) RecoverSessions(ctx context.Context) (int, error) { return rt.n.Sess.Recover(ctx) }
