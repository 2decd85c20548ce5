package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"

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

// principal is who a request speaks for.
type principal struct {
	name, tenant, role string
}

var roleRank = map[string]int{api.RoleViewer: 1, api.RoleOperator: 2, api.RoleAdmin: 3}

// may reports whether the principal's role reaches role.
func (p principal) may(role string) bool { return roleRank[p.role] >= roleRank[role] }

type principalKey struct{}

func principalOf(ctx context.Context) principal {
	p, _ := ctx.Value(principalKey{}).(principal)
	return p
}

func (s *Server) registerMe() {
	huma.Register(s.api, huma.Operation{
		OperationID: "get-me", Method: http.MethodGet, Path: "/v1/me", Tags: []string{"auth"},
		Summary:     "Who the token speaks for: its name, tenant and role",
		Description: "Lets a client offer only what the role may do; the server refuses the rest whatever a client shows.",
	}, func(ctx context.Context, _ *struct{}) (*struct{ Body api.Me }, error) {
		p := principalOf(ctx)
		return &struct{ Body api.Me }{api.Me{Name: p.name, Tenant: p.tenant, Role: p.role}}, nil
	})
}

// need refuses a principal whose role does not reach role.
func need(ctx context.Context, role string) error {
	p := principalOf(ctx)
	if !p.may(role) {
		return api.NewProblem(api.TypeForbidden, fmt.Sprintf("token %s has role %s; this needs %s", p.name, p.role, role))
	}
	return nil
}

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
		case roleRank[t.Role] == 0:
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
func (s *Server) authenticate(r *http.Request) (principal, bool) {
	if s.cfg.Tokens == nil {
		return principal{name: "local", tenant: defaultTenant, role: api.RoleAdmin}, true
	}
	h := r.Header.Get("Authorization")
	scheme, value, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || value == "" {
		return principal{}, false
	}
	sum := HashToken(strings.TrimSpace(value))
	found := -1
	for i := range s.cfg.Tokens {
		if subtle.ConstantTimeCompare(sum[:], s.cfg.Tokens[i].Hash[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return principal{}, false
	}
	t := s.cfg.Tokens[found]
	return principal{name: t.Name, tenant: t.Tenant, role: t.Role}, true
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
