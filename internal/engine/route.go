package engine

import (
	"context"
	"iter"

	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/route"
)

// pick is the model one attempt goes to: the agent's own, or the model of
// its route that the route chose.
type pick struct {
	model  model.Model
	choice *route.Choice // nil when the agent's model is not a route
}

// route returns the agent's route, or nil when its model is a plain one.
func (r *runner) route() *route.Route {
	rt, _ := r.agent.Model.(*route.Route)
	return rt
}

// choose picks the model for an attempt at req, given the turn's attempts
// so far (none for a compaction, which starts at the top of the route).
func (r *runner) choose(req *model.Request, tries []route.Try) (pick, error) {
	rt := r.route()
	if rt == nil {
		return pick{model: r.agent.Model}, nil
	}
	c, err := rt.Next(req, tries)
	if err != nil {
		return pick{}, err
	}
	return pick{model: c.Member.Model, choice: &c}, nil
}

// fallsBack reports whether the next attempt goes on to another model of
// the route, which it does at once, without the backoff that a retry of
// the same model waits.
func (r *runner) fallsBack() bool {
	rt := r.route()
	if rt == nil {
		return false
	}
	c, err := rt.Next(nil, r.st.tries)
	return err == nil && c.Why == route.WhyFallback
}

// window is the context window a request to the picked model is fitted
// into: the agent's, or the route member's when that is smaller.
func (p pick) window(agent int64) int64 {
	if p.choice == nil {
		return agent
	}
	if w := p.choice.Member.Window; w > 0 && (agent <= 0 || w < agent) {
		return w
	}
	return agent
}

// stamp records the choice on an attempt's entry.
func (p pick) stamp(a ModelAttempt, routeName string) ModelAttempt {
	if p.choice == nil {
		return a
	}
	a.Route, a.Model, a.Why, a.After, a.Skipped = routeName, p.model.Name(), p.choice.Why, p.choice.After, p.choice.Skipped
	return a
}

// generate sends req to the picked model, bounded by the route member's
// own timeout when it has one.
func (p pick) generate(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	if p.choice != nil {
		return p.choice.Member.Generate(ctx, req)
	}
	return p.model.Generate(ctx, req)
}

// report tells the route's breaker how an attempt ended.
func (r *runner) report(p pick, err error) {
	if rt := r.route(); rt != nil && p.choice != nil {
		rt.Report(p.model.Name(), err)
	}
}
