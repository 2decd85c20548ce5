package config

import (
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/hitch-dev/hitch/internal/ident"
	"github.com/hitch-dev/hitch/secret"
)

// Secret names where a secret value comes from: an environment variable or
// a file. A value written inline is refused unless Demo marks the file as a
// demonstration.
type Secret struct {
	// Env names the environment variable holding the value.
	Env string `yaml:"env,omitempty"`
	// File is a file holding the value, relative to the config file; a
	// trailing newline is not part of it.
	File string `yaml:"file,omitempty"`
	// Value is the value itself, for demos only: it needs Demo.
	Value string `yaml:"value,omitempty"`
	// Demo allows Value: the secret is not a real one.
	Demo bool `yaml:"demo,omitempty"`
}

// Sandbox sets what commands of the shell tool may see of the host.
type Sandbox struct {
	// Read lists host paths (absolute, or relative to the config file)
	// that commands may read under bwrap, beyond the system directories
	// and the workspace. Default none.
	Read []string `yaml:"read,omitempty"`
	// RequireIsolation refuses to load an agent with the bash tool when
	// bwrap is not usable, rather than run its commands unconfined.
	// Default false (Options.RequireIsolation may set it).
	RequireIsolation *bool `yaml:"require_isolation,omitempty"`
}

// maxSecretFile bounds a secret file.
const maxSecretFile = 64 << 10

// secrets reads the secrets section, adds the values of the model keys,
// approver secrets and server tokens the file names by variable, and
// builds the redactor. vars are the environment variables read for them:
// every variable the file takes a credential from.
func (c *Config) secrets(l locator, f *File, getenv func(string) string) (values map[string]string, vars []string, probs []Problem) {
	values = map[string]string{}
	for _, name := range slices.Sorted(maps.Keys(f.Secrets)) {
		s := f.Secrets[name]
		field := "secrets." + name
		if !ident.Secret(name) {
			probs = append(probs, l.problem(field, "the name wants 1–64 letters, digits, '_', '.' or '-'"))
			continue
		}
		n := 0
		for _, set := range []bool{s.Env != "", s.File != "", s.Value != ""} {
			if set {
				n++
			}
		}
		if n != 1 {
			probs = append(probs, l.problem(field, "give exactly one of env (a variable) or file (a path); value is for demos only"))
			continue
		}
		var v string
		switch {
		case s.Env != "":
			if !ident.Env(s.Env) {
				probs = append(probs, l.problem(field+".env", "%q is not an environment variable name", s.Env))
				continue
			}
			v = getenv(s.Env)
			vars = append(vars, s.Env)
			if v == "" {
				probs = append(probs, l.problem(field+".env", "%s is not set", s.Env))
				continue
			}
		case s.File != "":
			b, err := readSecretFile(relTo(c.Path, s.File))
			if err != nil {
				probs = append(probs, l.problem(field+".file", "%v", err))
				continue
			}
			v = strings.TrimRight(string(b), "\r\n")
		default:
			if !s.Demo {
				probs = append(probs, l.problem(field+".value", "an inline value is refused: take it from env or file, or mark a demonstration secret with demo: true"))
				continue
			}
			v = s.Value
		}
		if len(v) < secret.MinLen {
			probs = append(probs, l.problem(field, "the value is %d bytes: want at least %d (a shorter one cannot be told apart from ordinary text)", len(v), secret.MinLen))
			continue
		}
		values[name] = v
	}
	// Model keys, approver secrets and server tokens named by variable
	// are secrets too, under the variable's name.
	auto := func(env string) {
		if env == "" {
			return
		}
		vars = append(vars, env)
		if v := getenv(env); len(v) >= secret.MinLen {
			if _, taken := values[env]; !taken {
				values[env] = v
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(f.Models)) {
		auto(f.Models[name].KeyEnv())
	}
	for _, a := range f.Agents {
		for _, ap := range a.Approvers {
			auto(ap.SecretEnv)
		}
	}
	if f.Server != nil {
		for _, t := range f.Server.Tokens {
			auto(t.Env)
		}
	}
	return values, vars, probs
}

func readSecretFile(path string) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, maxSecretFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxSecretFile {
		return nil, fmt.Errorf("%s is over %d KiB: not a secret", path, maxSecretFile>>10)
	}
	return b, nil
}

// agentEnv turns an agent's env section (variable → secret name) into
// KEY=VALUE entries for its commands.
func agentEnv(l locator, field string, env map[string]string, values map[string]string, declared map[string]Secret) ([]string, []Problem) {
	var out []string
	var probs []Problem
	for _, k := range slices.Sorted(maps.Keys(env)) {
		name := env[k]
		switch {
		case !ident.Env(k):
			probs = append(probs, l.problem(field+"."+k, "%q is not an environment variable name", k))
		case !isDeclared(declared, name) && values[name] == "":
			probs = append(probs, l.problem(field+"."+k, "%q is not declared under secrets", name))
		case values[name] != "":
			out = append(out, k+"="+values[name])
		}
	}
	return out, probs
}

func isDeclared(m map[string]Secret, name string) bool {
	_, ok := m[name]
	return ok
}
