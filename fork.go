package hitch

import (
	"cmp"
	"context"
	"fmt"
	"reflect"

	"github.com/hitch-dev/hitch/internal/engine"
	"github.com/hitch-dev/hitch/model"
)

// ErrBadFork refuses a fork whose position or options do not fit the run
// forked: a position outside its journal or at its end, an edited reply at
// a position that holds no model reply.
var ErrBadFork = engine.ErrBadFork

// ErrUnknownModel refuses a fork told to go on with a model the runtime
// does not know (ForkOptions.Model); it comes with ErrBadFork.
var ErrUnknownModel = engine.ErrUnknownModel

// ForkOptions adjust Fork. The zero value forks the run as it was, on the
// agent version it ran.
type ForkOptions struct {
	// ID names the fork (see CheckRunID); forking with the same id again
	// creates nothing. Empty means a fresh id.
	ID string
	// Version, when set, is another registered version of the run's
	// agent that the fork runs from the fork position on: another model,
	// tools or instructions. 0 keeps the version the run ran.
	Version int
	// Model, when set, names a model (its Name) that answers the fork's
	// turns from the fork position on in place of its agent's, on the
	// same version: the model of any agent this runtime drives (a route
	// too). A name two different models share is refused.
	Model string
	// Instructions, when set, replace the run's caller layer of
	// instructions (WithInstructions) from the fork position on.
	Instructions string
	// Reply, when set, replaces the model reply at the fork position,
	// which must hold one: its text, and its tool calls, which the fork
	// then decides and runs.
	Reply *model.Reply
	// Message, when set, is a user message the model sees after the
	// history, at its next request.
	Message string
	// Detached leaves the fork queued for a worker instead of driving it
	// here.
	Detached bool

	// replay, runReplayable: see Replay.
	replay, runReplayable bool
	// stored, set by a Scope, is the id the fork is stored under.
	stored string
}

// Fork creates a new run whose history is runID's journal up to position
// at (1 copies only its start), and drives it from there. The history is
// copied, never acted on again: a call settled before at is not run again,
// and a call started and not settled at at is an uncertain effect in the
// fork, exactly as recovery after a crash would see it (run again only
// when its tool is replayable). The fork's run.started names its source
// (ForkedFrom); it is a root run with its own family and budget, in the
// source's tenant. Files are not in the journal: the fork works on the
// workspace as it is now, not as it was at at.
func (rt *Runtime) Fork(ctx context.Context, runID string, at int64, opts ForkOptions) (StartResult, error) {
	if opts.ID == "" {
		opts.ID = NewRunID()
	}
	if err := CheckRunID(opts.ID); err != nil {
		return StartResult{}, fmt.Errorf("fork %s: %w", runID, err)
	}
	return rt.fork(ctx, runID, at, opts)
}

// fork forks the stored run runID with checked options.
func (rt *Runtime) fork(ctx context.Context, runID string, at int64, o ForkOptions) (StartResult, error) {
	src, err := rt.Get(ctx, runID)
	if err != nil {
		return StartResult{}, fmt.Errorf("fork: %w", err)
	}
	agent, err := rt.agentNamed(src.Agent, cmp.Or(o.Version, src.Version))
	if err != nil {
		return StartResult{}, fmt.Errorf("fork %s: %w", runID, err)
	}
	id := o.ID
	if o.stored != "" {
		id = o.stored
	}
	res, err := rt.eng.Fork(ctx, agent.eng, engine.ForkParams{ID: id, Source: src.ID, At: at,
		Instructions: o.Instructions, Model: o.Model, Reply: o.Reply, Message: o.Message, Detached: o.Detached,
		Replay: o.replay, RunReplayable: o.runReplayable})
	if err != nil {
		return StartResult{}, rt.cfg.Secrets.Error(fmt.Errorf("fork %s: %w", runID, err))
	}
	run, err := RunOf(res.Run)
	if err != nil {
		return StartResult{}, err
	}
	return StartResult{Run: run, Created: res.Created, SameInput: res.SameInput}, nil
}

// Fork forks a run of the tenant, as Runtime.Fork does; the fork's id is
// the tenant's own, and it belongs to the tenant.
func (s *Scope) Fork(ctx context.Context, runID string, at int64, opts ForkOptions) (StartResult, error) {
	if err := s.allow("Fork"); err != nil {
		return StartResult{}, err
	}
	src, _, err := s.find(ctx, runID)
	if err != nil {
		return StartResult{}, err
	}
	if opts.ID == "" {
		opts.ID = NewRunID()
	}
	if err := CheckRunID(opts.ID); err != nil {
		return StartResult{}, fmt.Errorf("fork %s: %w", runID, err)
	}
	return s.create(ctx, "fork", opts.ID, func(stored string) (StartResult, error) {
		opts.stored = stored
		return s.rt.fork(ctx, src.ID, at, opts)
	})
}

// modelNamed finds the model named name among agents and their
// sub-agents, for a fork told to go on with it. Two different models under
// one name make it unknown: a run must find the same model on every node.
func modelNamed(agents []*Agent, name string) (model.Model, bool) {
	var found model.Model
	var walk func(as []*Agent) bool
	walk = func(as []*Agent) bool {
		for _, a := range as {
			if a == nil {
				continue
			}
			if m := a.spec.Model; m != nil && m.Name() == name {
				if found != nil && !sameModel(found, m) {
					return false
				}
				found = m
			}
			if !walk(a.spec.SubAgents) {
				return false
			}
		}
		return true
	}
	if !walk(agents) {
		return nil, false
	}
	return found, found != nil
}

// sameModel reports whether a and b are one model value.
func sameModel(a, b model.Model) bool {
	t := reflect.TypeOf(a)
	return t == reflect.TypeOf(b) && t.Comparable() && a == b
}
