package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/api"
)

// Token is one bearer token the server accepts. Only the SHA-256 hash of
// its value is kept.
type Token struct {
	// Name names the token's holder, for logs and journals (who cancelled,
	// who reconciled).
	Name string
	// Tenant is the tenant whose runs the token sees.
	Tenant string
	// Role is api.RoleViewer, api.RoleOperator or api.RoleAdmin.
	Role string
	// Hash is the SHA-256 of the token's value.
	Hash [sha256.Size]byte
}

// HashToken returns the hash a Token keeps of a token value.
func HashToken(value string) [sha256.Size]byte { return sha256.Sum256([]byte(value)) }

type principalKey struct{}

// principalOf is who a request speaks for (withAuth put it there).
func principalOf(ctx context.Context) hitch.Principal {
	p, _ := ctx.Value(principalKey{}).(hitch.Principal)
	return p
}

func (s *Server) me(ctx context.Context, _ *struct{}) (*body[api.Me], error) {
	p := s.scope(ctx).Principal()
	return &body[api.Me]{api.Me{Name: p.Name, Tenant: p.Tenant, Role: string(p.Role)}}, nil
}

// scope is the one way a handler reaches the runtime: the view of it the
// request's principal may use. Handlers check neither roles nor tenants
// themselves.
func (s *Server) scope(ctx context.Context) *hitch.Scope {
	return s.cfg.Runtime.As(principalOf(ctx))
}

// can refuses, before a command reads its input, a principal whose role
// does not reach the Scope method that the command calls.
func (s *Server) can(ctx context.Context, method string) error {
	if err := s.scope(ctx).Can(method); err != nil {
		return s.fail(method, err)
	}
	return nil
}

// localPrincipal is who a request speaks for without server.tokens.
var localPrincipal = hitch.Principal{Name: "local", Tenant: defaultTenant, Role: hitch.RoleAdmin}

func checkTokens(ts []Token) error {
	names := map[string]bool{}
	for i, t := range ts {
		switch {
		case t.Name == "":
			return fmt.Errorf("Tokens[%d].Name is empty", i)
		case names[t.Name]:
			return fmt.Errorf("Tokens[%d].Name %q is given twice", i, t.Name)
		case t.Tenant == "":
			return fmt.Errorf("Tokens[%d].Tenant is empty", i)
		case !hitch.Role(t.Role).Valid():
			return fmt.Errorf("Tokens[%d].Role %q: want viewer, operator or admin", i, t.Role)
		case t.Hash == [sha256.Size]byte{}:
			return fmt.Errorf("Tokens[%d].Hash is empty", i)
		}
		names[t.Name] = true
	}
	return nil
}

// authenticate finds the token of a request. Every token's hash is
// compared, in constant time, so the time taken does not say which
// matched.
func (s *Server) authenticate(r *http.Request) (hitch.Principal, bool) {
	if s.cfg.Tokens == nil {
		return localPrincipal, true
	}
	h := r.Header.Get("Authorization")
	scheme, value, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || value == "" {
		return hitch.Principal{}, false
	}
	sum := HashToken(strings.TrimSpace(value))
	found := -1
	for i := range s.cfg.Tokens {
		if subtle.ConstantTimeCompare(sum[:], s.cfg.Tokens[i].Hash[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return hitch.Principal{}, false
	}
	t := s.cfg.Tokens[found]
	return hitch.Principal{Name: t.Name, Tenant: t.Tenant, Role: hitch.Role(t.Role)}, true
}

// withAuth refuses requests without a valid token, except health checks.
func (s *Server) withAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
			next.ServeHTTP(w, r)
			return
		}
		p, ok := s.authenticate(r)
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="hitch"`)
			writeProblem(w, r, api.NewProblem(api.TypeUnauthorized, "send Authorization: Bearer TOKEN with a token from the server's config"))
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
	})
}
