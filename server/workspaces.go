package server

import (
	"context"
	"path/filepath"

	"github.com/hitch-dev/hitch/api"
)

func (s *Server) listRoots(ctx context.Context, in *runPath) (*body[api.Roots], error) {
	roots, err := s.scope(ctx).Roots(ctx, in.ID)
	return reply(s, "list roots", roots, err, wireRoots)
}

func wireRoots(roots []string) api.Roots { return api.Roots{Roots: append([]string{}, roots...)} }

type rootIn struct {
	ID   string `path:"id" maxLength:"128" doc:"The run's id."`
	Body api.Root
}

// changeRoot grants a directory to a run's workspace, or revokes it.
func (s *Server) changeRoot(revoke bool) func(context.Context, *rootIn) (*body[api.Roots], error) {
	op, method := "grant", "GrantRoot"
	if revoke {
		op, method = "revoke", "RevokeRoot"
	}
	return func(ctx context.Context, in *rootIn) (*body[api.Roots], error) {
		sc := s.scope(ctx)
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
		return reply(s, op, roots, err, wireRoots)
	}
}
