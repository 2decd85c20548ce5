package hitch

import (
	"context"
	"errors"
	"fmt"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/engine"
	"github.com/hitch-dev/hitch/model"
)

// PreviewOptions say which run Preview shows the first request of.
type PreviewOptions struct {
	// Input is the user message the run would answer.
	Input string
	// Instructions are the caller's layer of instructions, as
	// WithInstructions gives a run.
	Instructions string
	// Session, when set, previews the session's next submission: the
	// session's transcript comes before Input. The session must be of
	// the agent (ErrSessionAgent otherwise).
	Session string
}

// RequestPreview is the first model request a run would send, in parts
// labelled with their layers, and its token estimate against the window.
type RequestPreview = hitchtype.RequestPreview

// Preview returns the first model request a run of agent would send — its
// instructions, messages, tools and answer schema, each part labelled with
// the layer it comes from and its estimated tokens against the model's
// window — built by the code a run builds it with. Nothing is written, no
// model is called and no hook runs: the pre-generate hooks that may add
// instructions are named in parts of their own.
func (rt *Runtime) Preview(ctx context.Context, agent *Agent, o PreviewOptions) (RequestPreview, error) {
	return rt.preview(ctx, agent, o, o.Session)
}

// preview previews with the session stored under sessionID.
func (rt *Runtime) preview(ctx context.Context, agent *Agent, o PreviewOptions, sessionID string) (RequestPreview, error) {
	if agent == nil {
		return RequestPreview{}, errors.New("preview: agent is nil")
	}
	if !rt.n.Registered(agent.eng) {
		return RequestPreview{}, fmt.Errorf("preview: %w: %s version %d (add it to Config.Agents)", ErrUnknownAgent, agent.Name(), agent.Version())
	}
	p := engine.PreviewParams{Input: o.Input, Instructions: o.Instructions}
	if sessionID != "" {
		var (
			ses     Session
			history []model.Message
			err     error
		)
		if ses, history, err = rt.sess.Transcript(ctx, sessionID); err != nil {
			return RequestPreview{}, rt.cfg.Secrets.Error(fmt.Errorf("preview: %w", err))
		}
		if ses.Agent != agent.Name() || ses.Version != agent.Version() {
			return RequestPreview{}, fmt.Errorf("preview: session %s: %w: it belongs to %s version %d", o.Session, ErrSessionAgent, ses.Agent, ses.Version)
		}
		p.History = history
	}
	pv, err := rt.eng.Preview(ctx, agent.eng, p)
	if err != nil {
		return RequestPreview{}, rt.cfg.Secrets.Error(err)
	}
	return pv, nil
}
