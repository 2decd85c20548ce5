package server

import (
	"context"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/hitchtype"
)

// MaxContextRequests bounds the model requests GET /v1/runs/{id}/context
// answers with (its limit); the latest are kept.
const MaxContextRequests = 100

func (s *Server) runContext(ctx context.Context, in *struct {
	ID    string `path:"id" maxLength:"128" doc:"The run's id."`
	Limit int    `query:"limit" minimum:"1" maximum:"100" default:"100" doc:"How many of the latest requests to list. The journal is read backwards from its end until they are found, so a small limit is cheap on a long journal."`
}) (*body[api.RunContext], error) {
	sc := s.scope(ctx)
	run, err := sc.Get(ctx, in.ID)
	if err != nil {
		return nil, s.fail("read context", err)
	}
	reqs, more, err := sc.LatestContextRequests(ctx, run.ID, min(max(in.Limit, 1), MaxContextRequests))
	if err != nil {
		return nil, s.fail("read context", err)
	}
	cost, err := sc.FamilyCost(ctx, run.RootID)
	if err != nil {
		return nil, s.fail("read family cost", err)
	}
	out := api.RunContext{Run: run.ID, Requests: []api.ContextRequest{}, More: more, FamilyCost: wireCost(cost)}
	for _, r := range reqs {
		out.Requests = append(out.Requests, wireContextRequest(r))
	}
	return &body[api.RunContext]{out}, nil
}

func (s *Server) sessionCost(ctx context.Context, in *sessionIn) (*body[api.RunningCost], error) {
	c, err := s.scope(ctx).Sessions().Cost(ctx, in.ID)
	return reply(s, "read session cost", c, err, wireCost)
}

func wireCost(c hitch.RunningCost) api.RunningCost {
	return api.RunningCost{USD: c.USD, Runs: c.Runs, Live: c.Live}
}

func wireContextRequest(r hitchtype.ContextRequest) api.ContextRequest {
	out := api.ContextRequest{Attempt: r.Attempt, Turn: r.Turn, Purpose: r.Purpose, Model: r.Model, Result: r.Result, CostUSD: r.CostUSD}
	if a := r.Context; a != nil {
		wa := wireContextAccount(*a)
		out.Context = &wa
	}
	if u := r.Usage; u != nil {
		out.Usage = &api.ReplyUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CachedInputTokens: u.CachedInputTokens}
	}
	return out
}

// wireContextAccount speaks a request's context account on the wire.
func wireContextAccount(a hitchtype.ContextAccount) api.ContextAccount {
	c := a.Categories
	return api.ContextAccount{Estimator: a.Estimator, Window: a.Window, Estimate: a.Estimate, Categories: api.ContextCategories{
		System: c.System, Agent: c.Agent, Run: c.Run, Hook: c.Hook, Tools: c.Tools, User: c.User, Assistant: c.Assistant,
		ToolResults: c.ToolResults, Summary: c.Summary, AnswerSchema: c.AnswerSchema}}
}
