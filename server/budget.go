package server

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/hitch-dev/hitch/api"
)

func (s *Server) registerBudget() {
	huma.Register(s.api, huma.Operation{
		OperationID: "get-run-budget", Method: http.MethodGet, Path: "/v1/runs/{id}/budget", Tags: []string{"runs"},
		Summary: "Read what bounds a run and what is left",
		Description: "The family budget the run's root was started with (shared by every run of the family) and the run's own " +
			"limits (model attempts, tokens), each with its limit, what is used and what is left. A counter without a limit is " +
			"not listed; an amount that is not known is null, never 0.",
		Errors: []int{http.StatusNotFound},
	}, func(ctx context.Context, in *struct {
		ID string `path:"id" maxLength:"128" doc:"The run's id."`
	}) (*struct{ Body api.RunBudget }, error) {
		b, err := s.scope(ctx).Budget(ctx, in.ID)
		if err != nil {
			return nil, s.fail("budget", err)
		}
		out := api.RunBudget{RunID: b.RunID, RootID: b.RootID, Counters: []api.BudgetCounter{}}
		for _, c := range b.Counters {
			out.Counters = append(out.Counters, api.BudgetCounter{Scope: c.Scope, Name: c.Name, Unit: c.Unit, Limit: c.Limit, Used: c.Used, Left: c.Left})
		}
		return &struct{ Body api.RunBudget }{out}, nil
	})
	huma.Register(s.api, huma.Operation{
		OperationID: "get-family-usage", Method: http.MethodGet, Path: "/v1/runs/{id}/family/usage", Tags: []string{"runs"},
		Summary: "Read what a family of runs has used",
		Description: "The usage and cost of the root run {id} and every run below it, summed from their outcomes. A counter " +
			"is null when any run's is, or while a run of the family has not ended.",
		Errors: []int{http.StatusNotFound, http.StatusUnprocessableEntity},
	}, func(ctx context.Context, in *struct {
		ID string `path:"id" maxLength:"128" doc:"The family's root run."`
	}) (*struct{ Body api.FamilyUsage }, error) {
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
		u := f.Usage
		return &struct{ Body api.FamilyUsage }{api.FamilyUsage{RootID: root.ID, Runs: f.Runs, CostUSD: f.CostUSD,
			Usage: api.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CachedInputTokens: u.CachedInputTokens,
				Generations: u.Generations}}}, nil
	})
}
