package server

import (
	"context"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/api"
)

func (s *Server) runBudget(ctx context.Context, in *runPath) (*body[api.RunBudget], error) {
	b, err := s.scope(ctx).Budget(ctx, in.ID)
	return reply(s, "budget", b, err, wireBudget)
}

func wireBudget(b hitch.RunBudget) api.RunBudget {
	out := api.RunBudget{RunID: b.RunID, RootID: b.RootID, Counters: []api.BudgetCounter{}}
	for _, c := range b.Counters {
		out.Counters = append(out.Counters, api.BudgetCounter{Scope: c.Scope, Name: c.Name, Unit: c.Unit, Limit: c.Limit, Used: c.Used, Left: c.Left})
	}
	return out
}

func (s *Server) familyUsage(ctx context.Context, in *struct {
	ID string `path:"id" maxLength:"128" doc:"The family's root run."`
}) (*body[api.FamilyUsage], error) {
	sc := s.scope(ctx)
	root, err := sc.Get(ctx, in.ID)
	if err != nil {
		return nil, s.fail("family usage", err)
	}
	if root.RootID != root.ID {
		return nil, invalid("path.id", "is not a root run: ask for the family of its root_id")
	}
	f, err := sc.FamilyUsage(ctx, root.ID)
	if err != nil {
		return nil, s.fail("family usage", err)
	}
	return &body[api.FamilyUsage]{api.FamilyUsage{RootID: root.ID, Runs: f.Runs, CostUSD: f.CostUSD, Usage: wireUsage(f.Usage)}}, nil
}
