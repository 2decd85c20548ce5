package hitch

import (
	"context"

	"github.com/hitch-dev/hitch/sessions"
	"github.com/hitch-dev/hitch/triggers"
)

// Sessions returns the client of the runtime's sessions, acting for the
// library on stored ids (see package sessions).
func (rt *Runtime) Sessions() sessions.Client { return rt.n.Sessions() }

// Sessions returns the client of the sessions of the scope's tenant: each
// method checks the principal's role (RoleFor, by the names of the former
// Scope methods: OpenSession, Send …) and speaks the tenant's ids. Open's
// o.ID is the tenant's own, and an id another tenant uses is as free as
// any; o.Tenant may only name the scope's tenant (any, for AllTenants).
func (s *Scope) Sessions() sessions.Client { return s.s.Sessions() }

// RecoverSessions moves on every session that needs it: a submission whose
// run ended but whose end is not recorded (its node died), or an idle
// session with a queued message. It returns how many it looked at. A
// sweeper calls it; so may anyone, at any time.
func (rt *Runtime) RecoverSessions(ctx context.Context) (int, error) { return rt.n.Sess.Recover(ctx) }

// Triggers returns the client of the runtime's trigger bindings (see
// package triggers).
func (rt *Runtime) Triggers() triggers.Client { return rt.n.Triggers() }
