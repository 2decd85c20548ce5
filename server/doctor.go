package server

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/hitch-dev/hitch/api"
)

func (s *Server) registerDoctor() {
	huma.Register(s.api, huma.Operation{
		OperationID: "get-doctor", Method: http.MethodGet, Path: "/v1/doctor", Tags: []string{"operations"},
		Summary: "Check this deployment: store, durability, commits, clock, nodes, sandbox, secrets, MCP servers, models, disk",
		Description: "Runs hitch doctor's checks where the server runs, as the server is configured, and answers one check a " +
			"finding with its verdict and what to do. For admins of tenant default: the report covers what every tenant " +
			"shares. The commit probe writes a scratch table or file of its own and removes it. See docs/operations.md.",
		Errors: []int{http.StatusForbidden},
	}, func(ctx context.Context, in *struct {
		Network bool `query:"network" doc:"Also call each model once to prove its credentials work."`
	}) (*struct{ Body api.DoctorReport }, error) {
		cfg := s.cfg.Doctor
		cfg.Network = in.Network
		r, err := s.scope(ctx).Doctor(ctx, cfg)
		if err != nil {
			return nil, s.fail("doctor", err)
		}
		out := api.DoctorReport{Verdict: string(r.Verdict), Checks: make([]api.DoctorCheck, 0, len(r.Checks))}
		for _, c := range r.Checks {
			out.Checks = append(out.Checks, api.DoctorCheck{Name: c.Name, Verdict: string(c.Verdict), Detail: c.Detail, Fix: c.Fix})
		}
		return &struct{ Body api.DoctorReport }{out}, nil
	})
}
