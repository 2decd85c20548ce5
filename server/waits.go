package server

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/hitch-dev/hitch/api"
)

func (s *Server) registerWaits() {
	huma.Register(s.api, huma.Operation{
		OperationID: "get-run-waits", Method: http.MethodGet, Path: "/v1/runs/{id}/waits", Tags: []string{"runs"},
		Summary: "List what a parked run waits on, and until when",
		Description: "Each thing the run waits on: an awaited event, an external call, a call held by a hook, an approval, its " +
			"sub-agents or an uncertain call, with the call, its tool and the deadline by the store's clock. Empty for a run " +
			"that does not wait.",
		Errors: []int{http.StatusNotFound},
	}, func(ctx context.Context, in *struct {
		ID string `path:"id" maxLength:"128" doc:"The run's id."`
	}) (*struct{ Body api.RunWaits }, error) {
		ws, err := s.scope(ctx).Waits(ctx, in.ID)
		if err != nil {
			return nil, s.fail("waits", err)
		}
		out := api.RunWaits{RunID: in.ID, Waits: []api.Wait{}}
		for _, w := range ws {
			out.Waits = append(out.Waits, api.Wait{Kind: w.Kind, Call: w.Call, Tool: w.Tool, Event: w.Event, Until: w.Until})
		}
		return &struct{ Body api.RunWaits }{out}, nil
	})
}
