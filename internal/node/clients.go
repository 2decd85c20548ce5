package node

import (
	"cmp"
	"context"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/engine"
	"github.com/hitch-dev/hitch/sessions"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/triggers"
)

// engineAgent returns the registered agent a names, or, when none is, an
// agent of its name and version that the commands refuse as unregistered;
// nil for no agent (a nil *hitch.Agent names none).
func (n *Node) engineAgent(a sessions.Agent) *engine.Agent {
	if a == nil || a.Name() == "" {
		return nil
	}
	if r, ok := n.agents[key(a.Name(), a.Version())]; ok {
		return r.Eng
	}
	return &engine.Agent{Name: a.Name(), Version: a.Version()}
}

// Sessions returns the node's sessions client: the bodies of
// hitch.Runtime.Sessions.
func (n *Node) Sessions() sessions.Client { return nodeSessions{n} }

// nodeSessions acts for the library, on stored ids.
type nodeSessions struct{ n *Node }

func (c nodeSessions) Open(ctx context.Context, a sessions.Agent, o sessions.Options) (sessions.Session, bool, error) {
	return c.n.OpenSession(ctx, c.n.engineAgent(a), o, "")
}

func (c nodeSessions) Get(ctx context.Context, id string) (sessions.Session, error) {
	return c.n.Sess.Get(ctx, id)
}

func (c nodeSessions) List(ctx context.Context, p sessions.ListParams) ([]sessions.Session, string, error) {
	list, err := c.n.Sess.List(ctx, p)
	if err != nil {
		return nil, "", err
	}
	var next string
	if len(list) > 0 && len(list) == cmp.Or(p.Limit, engine.DefaultPageLimit) {
		next = list[len(list)-1].ID
	}
	return list, next, nil
}

func (c nodeSessions) Send(ctx context.Context, id, text string, o sessions.SendOptions) (sessions.SendResult, error) {
	return c.n.Sess.Send(ctx, id, text, o)
}

func (c nodeSessions) Interrupt(ctx context.Context, id string) error {
	return c.n.Sess.Interrupt(ctx, id)
}

func (c nodeSessions) Queue(ctx context.Context, id string, limit int) ([]sessions.QueuedMessage, error) {
	return c.n.Sess.Queue(ctx, id, limit)
}

func (c nodeSessions) Edit(ctx context.Context, id, messageID, text string) error {
	return c.n.Sess.Edit(ctx, id, messageID, text)
}

func (c nodeSessions) Remove(ctx context.Context, id, messageID string) error {
	return c.n.Sess.Remove(ctx, id, messageID)
}

func (c nodeSessions) Journal(ctx context.Context, id string, after int64, limit int) ([]store.SessionEntry, error) {
	return c.n.Sess.Journal(ctx, id, after, limit)
}

func (c nodeSessions) Status(ctx context.Context, id string) (sessions.Status, error) {
	return c.n.Sess.Status(ctx, id)
}

func (c nodeSessions) Await(ctx context.Context, id string) (sessions.Status, error) {
	return c.n.Sess.Await(ctx, id)
}

func (c nodeSessions) Cost(ctx context.Context, id string) (hitchtype.RunningCost, error) {
	return c.n.SessionCost(ctx, id)
}

// Sessions returns the scope's sessions client: the node's, under the
// scope's principal, with its role checked and its tenant's ids.
func (s *Scope) Sessions() sessions.Client { return scopeSessions{s} }

// scopeSessions acts for the scope's principal.
type scopeSessions struct{ s *Scope }

func (c scopeSessions) Open(ctx context.Context, a sessions.Agent, o sessions.Options) (sessions.Session, bool, error) {
	return c.s.OpenSession(ctx, c.s.n.engineAgent(a), o)
}

func (c scopeSessions) Get(ctx context.Context, id string) (sessions.Session, error) {
	return c.s.GetSession(ctx, id)
}

func (c scopeSessions) List(ctx context.Context, p sessions.ListParams) ([]sessions.Session, string, error) {
	return c.s.ListSessions(ctx, p)
}

func (c scopeSessions) Send(ctx context.Context, id, text string, o sessions.SendOptions) (sessions.SendResult, error) {
	return c.s.Send(ctx, id, text, o)
}

func (c scopeSessions) Interrupt(ctx context.Context, id string) error {
	return c.s.Interrupt(ctx, id)
}

func (c scopeSessions) Queue(ctx context.Context, id string, limit int) ([]sessions.QueuedMessage, error) {
	return c.s.Queue(ctx, id, limit)
}

func (c scopeSessions) Edit(ctx context.Context, id, messageID, text string) error {
	return c.s.Edit(ctx, id, messageID, text)
}

func (c scopeSessions) Remove(ctx context.Context, id, messageID string) error {
	return c.s.Remove(ctx, id, messageID)
}

func (c scopeSessions) Journal(ctx context.Context, id string, after int64, limit int) ([]store.SessionEntry, error) {
	return c.s.SessionJournal(ctx, id, after, limit)
}

func (c scopeSessions) Status(ctx context.Context, id string) (sessions.Status, error) {
	return c.s.SessionStatus(ctx, id)
}

func (c scopeSessions) Await(ctx context.Context, id string) (sessions.Status, error) {
	return c.s.AwaitSession(ctx, id)
}

func (c scopeSessions) Cost(ctx context.Context, id string) (hitchtype.RunningCost, error) {
	return c.s.SessionCost(ctx, id)
}

// Triggers returns the node's trigger bindings client: the bodies of
// hitch.Runtime.Triggers.
func (n *Node) Triggers() triggers.Client { return n.Trig }

// Triggers returns the scope's trigger bindings client. A binding is not
// spoken in a tenant's ids (its id, its session target and the ids of the
// runs it starts are stored ids), so only a principal of AllTenants
// reaches bindings; reads need RoleViewer, the rest RoleAdmin.
func (s *Scope) Triggers() triggers.Client { return scopeTriggers{s} }

// scopeTriggers acts for the scope's principal.
type scopeTriggers struct{ s *Scope }

// allow checks the principal's role for method and that it reaches every
// tenant.
func (c scopeTriggers) allow(method string) error {
	if err := c.s.Allow(method); err != nil {
		return err
	}
	if c.s.P.Tenant != hitchtype.AllTenants {
		return c.s.Forbid(method, "trigger bindings are served to principals of every tenant only")
	}
	return nil
}

func (c scopeTriggers) Create(ctx context.Context, spec triggers.Spec, o triggers.Options) (triggers.Trigger, bool, error) {
	if err := c.allow("CreateTrigger"); err != nil {
		return triggers.Trigger{}, false, err
	}
	return c.s.n.Trig.Create(ctx, spec, o)
}

func (c scopeTriggers) Get(ctx context.Context, id string) (triggers.Trigger, error) {
	if err := c.allow("GetTrigger"); err != nil {
		return triggers.Trigger{}, err
	}
	return c.s.n.Trig.Get(ctx, id)
}

func (c scopeTriggers) List(ctx context.Context, o triggers.ListOptions) ([]triggers.Trigger, error) {
	if err := c.allow("ListTriggers"); err != nil {
		return nil, err
	}
	return c.s.n.Trig.List(ctx, o)
}

func (c scopeTriggers) Pause(ctx context.Context, id string) (triggers.Trigger, error) {
	if err := c.allow("PauseTrigger"); err != nil {
		return triggers.Trigger{}, err
	}
	return c.s.n.Trig.Pause(ctx, id)
}

func (c scopeTriggers) Resume(ctx context.Context, id string) (triggers.Trigger, error) {
	if err := c.allow("ResumeTrigger"); err != nil {
		return triggers.Trigger{}, err
	}
	return c.s.n.Trig.Resume(ctx, id)
}

func (c scopeTriggers) Remove(ctx context.Context, id string) (bool, error) {
	if err := c.allow("RemoveTrigger"); err != nil {
		return false, err
	}
	return c.s.n.Trig.Remove(ctx, id)
}
