package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hitch-dev/hitch/internal/ident"
)

// Server configures hitch serve.
type Server struct {
	// Tokens are the bearer tokens the server accepts. Without any, the
	// server serves only a loopback address, to one implicit local admin.
	Tokens []ServerToken `yaml:"tokens,omitempty"`
}

// ServerToken is one bearer token: its holder's name, tenant and role,
// and where its value is. A value is never written in the config itself:
// it comes from an environment variable (env), a file holding it (file,
// relative to the config), or is given as its SHA-256 in hex (sha256).
type ServerToken struct {
	Name   string `yaml:"name"`
	Tenant string `yaml:"tenant,omitempty"` // default "default"
	Role   string `yaml:"role"`             // admin, operator or viewer
	Env    string `yaml:"env,omitempty"`
	File   string `yaml:"file,omitempty"`
	SHA256 string `yaml:"sha256,omitempty"`
}

// ResolvedToken is a server token with its value read and hashed.
type ResolvedToken struct {
	Name, Tenant, Role string
	Hash               [sha256.Size]byte
}

// serverProblems checks the server section's shape; values are read by
// ServerTokens, when a server starts.
func serverProblems(l locator, s *Server) []Problem {
	if s == nil {
		return nil
	}
	var probs []Problem
	names := map[string]int{}
	for i, t := range s.Tokens {
		f := fmt.Sprintf("server.tokens[%d]", i)
		if !ident.Name(t.Name) {
			probs = append(probs, l.problem(f+".name", "%q: want 1–64 letters, digits, '.', '_' or '-'", t.Name))
		} else if j, dup := names[t.Name]; dup {
			probs = append(probs, l.problem(f+".name", "%q is already the name of server.tokens[%d]", t.Name, j))
		}
		names[t.Name] = i
		if t.Tenant != "" && !ident.Name(t.Tenant) {
			probs = append(probs, l.problem(f+".tenant", "%q: want 1–64 letters, digits, '.', '_' or '-'", t.Tenant))
		}
		switch t.Role {
		case "admin", "operator", "viewer":
		default:
			probs = append(probs, l.problem(f+".role", "%q: want admin, operator or viewer", t.Role))
		}
		n := 0
		for _, v := range []string{t.Env, t.File, t.SHA256} {
			if v != "" {
				n++
			}
		}
		if n != 1 {
			probs = append(probs, l.problem(f, "give exactly one of env, file and sha256 (a token's value is never written in the config)"))
		}
		if t.SHA256 != "" {
			if b, err := hex.DecodeString(t.SHA256); err != nil || len(b) != sha256.Size {
				probs = append(probs, l.problem(f+".sha256", "want 64 hex digits"))
			}
		}
	}
	return probs
}

// ServerTokens reads and hashes the server's token values: from the
// environment (getenv; nil means os.Getenv) or from their files. Only the
// hashes are returned. A variable that is not set, or a file that is
// missing or empty, is an error naming the token.
func (c *Config) ServerTokens(getenv func(string) string) ([]ResolvedToken, error) {
	if c.File.Server == nil {
		return nil, nil
	}
	if getenv == nil {
		getenv = os.Getenv
	}
	var out []ResolvedToken
	for i, t := range c.File.Server.Tokens {
		r := ResolvedToken{Name: t.Name, Tenant: t.Tenant, Role: t.Role}
		if r.Tenant == "" {
			r.Tenant = "default"
		}
		field := fmt.Sprintf("server.tokens[%d]", i)
		switch {
		case t.Env != "":
			v := strings.TrimSpace(getenv(t.Env))
			if v == "" {
				return nil, fmt.Errorf("%s: %s (token %s): the variable is not set", field+".env", t.Env, t.Name)
			}
			r.Hash = sha256.Sum256([]byte(v))
		case t.File != "":
			b, err := os.ReadFile(filepath.Join(filepath.Dir(c.Path), t.File))
			if err != nil {
				return nil, fmt.Errorf("%s: token %s: %w", field+".file", t.Name, err)
			}
			v := strings.TrimSpace(string(b))
			if v == "" {
				return nil, fmt.Errorf("%s: token %s: %s is empty", field+".file", t.Name, t.File)
			}
			r.Hash = sha256.Sum256([]byte(v))
		default:
			b, _ := hex.DecodeString(t.SHA256)
			copy(r.Hash[:], b)
		}
		out = append(out, r)
	}
	return out, nil
}
