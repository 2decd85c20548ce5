package server

import (
	"context"
	"net/http"
	"path/filepath"

	"github.com/danielgtaylor/huma/v2"

	"github.com/hitch-dev/hitch/api"
)

func (s *Server) registerWorkspaces() {
	huma.Register(s.api, huma.Operation{
		OperationID: "list-roots", Method: http.MethodGet, Path: "/v1/runs/{id}/workspace", Tags: []string{"workspaces"},
		Summary: "List the roots granted to a run's workspace", Errors: []int{http.StatusNotFound},
	}, func(ctx context.Context, in *struct {
		ID string `path:"id" maxLength:"128" doc:"The run's id."`
	}) (*struct{ Body api.Roots }, error) {
		roots, err := s.scope(ctx).Roots(ctx, in.ID)
		if err != nil {
			return nil, s.fail("list roots", err)
		}
		return &struct{ Body api.Roots }{api.Roots{Roots: append([]string{}, roots...)}}, nil
	})
	for _, revoke := range []bool{false, true} {
		op, verb := "grant", "Grant a directory to"
		if revoke {
			op, verb = "revoke", "Take a granted directory back from"
		}
		huma.Register(s.api, huma.Operation{
			OperationID: op + "-root", Method: http.MethodPost, Path: "/v1/runs/{id}/workspace/" + op, Tags: []string{"workspaces"},
			Summary: verb + " a run's workspace (operator)",
			Errors:  []int{http.StatusNotFound, http.StatusForbidden, http.StatusConflict, http.StatusUnprocessableEntity},
		}, func(ctx context.Context, in *struct {
			ID   string `path:"id" maxLength:"128" doc:"The run's id."`
			Body api.Root
		}) (*struct{ Body api.Roots }, error) {
			sc := s.scope(ctx)
			method := "GrantRoot"
			if revoke {
				method = "RevokeRoot"
			}
			if err := s.can(ctx, method); err != nil {
				return nil, err
			}
			if !filepath.IsAbs(in.Body.Path) {
				return nil, invalid("body.path", "is not an absolute path")
			}
			var err error
			if revoke {
				err = sc.RevokeRoot(ctx, in.ID, in.Body.Path)
			} else {
				err = sc.GrantRoot(ctx, in.ID, in.Body.Path)
			}
			if err != nil {
				return nil, s.fail(op, err)
			}
			roots, err := sc.Roots(ctx, in.ID)
			if err != nil {
				return nil, s.fail(op, err)
			}
			return &struct{ Body api.Roots }{api.Roots{Roots: append([]string{}, roots...)}}, nil
		})
	}
}
