package server

import (
	"context"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/api"
)

func (s *Server) runWaits(ctx context.Context, in *runPath) (*body[api.RunWaits], error) {
	ws, err := s.scope(ctx).Waits(ctx, in.ID)
	return reply(s, "waits", ws, err, func(ws []hitch.Wait) api.RunWaits {
		out := api.RunWaits{RunID: in.ID, Waits: []api.Wait{}}
		for _, w := range ws {
			out.Waits = append(out.Waits, api.Wait{Kind: w.Kind, Call: w.Call, Tool: w.Tool, Event: w.Event, Until: w.Until})
		}
		return out
	})
}
