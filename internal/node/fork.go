package node

import (
	"cmp"
	"context"
	"fmt"
	"reflect"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/engine"
	"github.com/hitch-dev/hitch/model"
)

// Fork are a fork's options, its id checked: Stored, when set by a gate,
// is the id it is stored under; Replay and RunReplayable make it a replay.
type Fork struct {
	hitchtype.ForkOptions
	Stored                string
	Replay, RunReplayable bool
}

// Fork forks the stored run runID at position at.
func (n *Node) Fork(ctx context.Context, runID string, at int64, o Fork) (hitchtype.StartResult, error) {
	src, err := n.Get(ctx, runID)
	if err != nil {
		return hitchtype.StartResult{}, fmt.Errorf("fork: %w", err)
	}
	a, err := n.Named(src.Agent, cmp.Or(o.Version, src.Version))
	if err != nil {
		return hitchtype.StartResult{}, fmt.Errorf("fork %s: %w", runID, err)
	}
	res, err := n.Eng.Fork(ctx, a.Eng, engine.ForkParams{ID: cmp.Or(o.Stored, o.ID), Source: src.ID, At: at,
		Instructions: o.Instructions, Model: o.Model, Reply: o.Reply, Message: o.Message, Detached: o.Detached,
		Replay: o.Replay, RunReplayable: o.RunReplayable})
	if err != nil {
		return hitchtype.StartResult{}, n.cfg.Engine.Secrets.Error(fmt.Errorf("fork %s: %w", runID, err))
	}
	return Result(res)
}

// Replay re-runs the recorded runs opts names (at most most of them), one
// after the other, and judges each.
func (n *Node) Replay(ctx context.Context, opts hitchtype.ReplayOptions, most int) ([]hitchtype.ReplayResult, error) {
	ids, err := n.ReplayRuns(ctx, opts, most)
	if err != nil {
		return nil, err
	}
	out := make([]hitchtype.ReplayResult, 0, len(ids))
	for _, id := range ids {
		res, err := n.replayOne(ctx, id, opts)
		if err != nil {
			return out, fmt.Errorf("replay %s: %w", id, err)
		}
		out = append(out, res)
	}
	return out, nil
}

func (n *Node) replayOne(ctx context.Context, id string, opts hitchtype.ReplayOptions) (hitchtype.ReplayResult, error) {
	src, err := n.Get(ctx, id)
	if err != nil {
		return hitchtype.ReplayResult{}, err
	}
	a, err := n.Named(src.Agent, opts.Version)
	if err != nil {
		return hitchtype.ReplayResult{}, err
	}
	res, err := n.Fork(ctx, src.ID, 1, Fork{ForkOptions: hitchtype.ForkOptions{ID: hitchtype.NewID(ReplayPrefix, 10), Version: a.Eng.Version},
		Replay: true, RunReplayable: opts.RunReplayable})
	if err != nil {
		return hitchtype.ReplayResult{}, err
	}
	run, err := n.Await(ctx, res.Run.ID)
	if err != nil {
		return hitchtype.ReplayResult{}, err
	}
	return n.Judge(ctx, a, src, run)
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
			if m := a.Eng.Model; m != nil && m.Name() == name {
				if found != nil && !sameModel(found, m) {
					return false
				}
				found = m
			}
			if !walk(a.Subs) {
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
