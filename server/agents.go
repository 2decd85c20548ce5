package server

import (
	"context"
	"net/http"
	"sort"

	"github.com/danielgtaylor/huma/v2"

	"github.com/hitch-dev/hitch/api"
)

func (s *Server) registerAgents() {
	huma.Register(s.api, huma.Operation{
		OperationID: "list-agents", Method: http.MethodGet, Path: "/v1/agents", Tags: []string{"agents"},
		Summary: "List the agents this server can start",
	}, func(ctx context.Context, _ *struct{}) (*struct{ Body api.Agents }, error) {
		out := api.Agents{Agents: []api.Agent{}}
		for _, a := range s.agents {
			out.Agents = append(out.Agents, api.Agent{Name: a.Name(), Version: a.Version()})
		}
		sort.Slice(out.Agents, func(i, j int) bool { return out.Agents[i].Name < out.Agents[j].Name })
		return &struct{ Body api.Agents }{out}, nil
	})
	huma.Register(s.api, huma.Operation{
		OperationID: "get-agent", Method: http.MethodGet, Path: "/v1/agents/{name}", Tags: []string{"agents"},
		Summary: "Show one agent", Errors: []int{http.StatusNotFound},
	}, func(ctx context.Context, in *struct {
		Name string `path:"name" maxLength:"64"`
	}) (*struct{ Body api.Agent }, error) {
		a, ok := s.agents[in.Name]
		if !ok {
			return nil, api.NewProblem(api.TypeNotFound, "no agent "+in.Name)
		}
		return &struct{ Body api.Agent }{api.Agent{Name: a.Name(), Version: a.Version()}}, nil
	})
}
