package node

import (
	"context"
	"errors"
	"fmt"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/engine"
	"github.com/hitch-dev/hitch/internal/follow"
	"github.com/hitch-dev/hitch/internal/session"
	"github.com/hitch-dev/hitch/store"
)

// Preview returns the first model request a run of a would send; the
// session stored as sessionID, when set, comes before the input.
func (n *Node) Preview(ctx context.Context, a *engine.Agent, o hitchtype.PreviewOptions, sessionID string) (hitchtype.RequestPreview, error) {
	if a == nil {
		return hitchtype.RequestPreview{}, errors.New("preview: agent is nil")
	}
	if !n.Registered(a) {
		return hitchtype.RequestPreview{}, fmt.Errorf("preview: %w: %s version %d (add it to Config.Agents)", engine.ErrUnknownAgent, a.Name, a.Version)
	}
	p := engine.PreviewParams{Input: o.Input, Instructions: o.Instructions}
	if sessionID != "" {
		ses, history, err := n.Sess.Transcript(ctx, sessionID)
		if err != nil {
			return hitchtype.RequestPreview{}, n.cfg.Engine.Secrets.Error(fmt.Errorf("preview: %w", err))
		}
		if ses.Agent != a.Name || ses.Version != a.Version {
			return hitchtype.RequestPreview{}, fmt.Errorf("preview: session %s: %w: it belongs to %s version %d", o.Session, session.ErrSessionAgent, ses.Agent, ses.Version)
		}
		p.History = history
	}
	pv, err := n.Eng.Preview(ctx, a, p)
	if err != nil {
		return hitchtype.RequestPreview{}, n.cfg.Engine.Secrets.Error(err)
	}
	return pv, nil
}

// ErrFollowerBehind ends a follower that left its buffer full.
var ErrFollowerBehind = errors.New("follower fell behind")

// Follows yields from the shared reader of the run stored as id, whose
// journal had length entries (its last, when ended), naming each entry's
// run with local.
func (n *Node) Follows(ctx context.Context, id string, length int64, ended bool, after int64, yield func(store.Entry, error) bool, local func(string) string) {
	if ended && after >= length {
		return // nothing will follow what the caller has
	}
	for e, err := range n.Follow.Follow(ctx, id, after, length) {
		if errors.Is(err, follow.ErrBehind) {
			err = fmt.Errorf("%w: %w", ErrFollowerBehind, err)
		}
		e.RunID = local(e.RunID)
		if !yield(e, err) || err != nil {
			return
		}
	}
}

// OpenSession opens a session of a; stored, when set, is the id it is
// stored under.
func (n *Node) OpenSession(ctx context.Context, a *engine.Agent, o hitchtype.SessionOptions, stored string) (hitchtype.Session, bool, error) {
	if a == nil {
		return hitchtype.Session{}, false, errors.New("open session: agent is nil")
	}
	if !n.Registered(a) {
		return hitchtype.Session{}, false, fmt.Errorf("open session: %w: %s version %d (add it to Config.Agents)", engine.ErrUnknownAgent, a.Name, a.Version)
	}
	return n.Sess.Open(ctx, a, o, stored)
}
