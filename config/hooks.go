package config

import (
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/hook/declared"
	"github.com/hitch-dev/hitch/internal/ident"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/sandbox"
	"github.com/hitch-dev/hitch/sandbox/local"
)

// Hook declares a hook (see docs/hooks.md): a command or a webhook called
// at one point of an agent's turn loop.
type Hook struct {
	// Name names the hook in the journal; default its place in the file
	// ("hooks[0]", or "agents[1].hooks[0]").
	Name string `yaml:"name,omitempty"`
	// Point is pre_generate, pre_tool, post_tool or post_turn.
	Point string `yaml:"point"`
	// Match, for pre_tool and post_tool, are globs over tool names;
	// default every tool.
	Match []string `yaml:"match,omitempty"`
	// When is a CEL condition, over the policy's variables, the event
	// must meet for the hook to see it.
	When string `yaml:"when,omitempty"`
	// Command is the program and its arguments; a program named by a
	// relative path is relative to the config file. It runs in the
	// agent's sandbox.
	Command []string `yaml:"command,omitempty"`
	// Env sets variables of the command to secrets: variable → secret
	// name. The command sees nothing else of the host's environment.
	Env map[string]string `yaml:"env,omitempty"`
	// URL is a webhook's address, http or https.
	URL string `yaml:"url,omitempty"`
	// Secret names the secret (under secrets) that signs a webhook's
	// deliveries; required with url.
	Secret string `yaml:"secret,omitempty"`
	// Timeout bounds one attempt (default 5s).
	Timeout string `yaml:"timeout,omitempty"`
	// Priority orders a point's hooks, lowest first (default 0); equal
	// ones run in the order declared, the file's hooks before an agent's.
	Priority int `yaml:"priority,omitempty"`
	// OnError is fail_closed or fail_open; default fail_closed, but
	// fail_open at post_tool.
	OnError string `yaml:"on_error,omitempty"`
	// Message, for post_turn, is the corrective message the model sees
	// when this hook refuses an answer; {value} and {reason} are filled in.
	Message string `yaml:"message,omitempty"`
}

// maxHookChain bounds how long the hooks of one point may take together:
// the longest hook timeout an agent may have.
const maxHookChain = time.Minute

// hooks builds an agent's hooks: the file's, then its own. sbox is the
// sandbox settings its commands run with. It returns nil with no hooks.
func (c *Config) hooks(l locator, f *File, i int, sbox local.Config, values map[string]string) (*declared.Set, []Problem) {
	a := f.Agents[i]
	var probs []Problem
	var list []declared.Hook
	ws := relTo(c.Path, a.Workspace)
	if ws == "" {
		ws = relTo(c.Path, ".")
	}
	add := func(field string, y Hook) {
		h, hp := c.hook(l, field, y, f, ws, sbox, values)
		probs = append(probs, hp...)
		if len(hp) == 0 {
			list = append(list, h)
		}
	}
	for k, y := range f.Hooks {
		add(fmt.Sprintf("hooks[%d]", k), y)
	}
	for k, y := range a.Hooks {
		add(fmt.Sprintf("agents[%d].hooks[%d]", i, k), y)
	}
	if len(probs) > 0 || len(list) == 0 {
		return nil, probs
	}
	field := fmt.Sprintf("agents[%d].hooks", i)
	if len(a.Hooks) == 0 {
		field = "hooks"
	}
	set, err := declared.New(list, c.Secrets.Bytes)
	if err != nil {
		return nil, []Problem{l.problem(field, "%v", err)}
	}
	if b := set.Bound(); b > maxHookChain {
		return nil, []Problem{l.problem(field, "the hooks of one point may take %s together (each attempt's timeout, and a webhook's retries): want at most %s", b, maxHookChain)}
	}
	return set, nil
}

// hook checks one declared hook and builds it.
func (c *Config) hook(l locator, field string, y Hook, f *File, ws string, sbox local.Config, values map[string]string) (declared.Hook, []Problem) {
	var probs []Problem
	bad := func(key, format string, args ...any) {
		fld := field
		if key != "" {
			fld += "." + key
		}
		probs = append(probs, l.problem(fld, format, args...))
	}
	h := declared.Hook{Name: y.Name, Point: declared.Point(y.Point), Priority: y.Priority, OnError: declared.OnError(y.OnError), Match: y.Match, Message: y.Message}
	if h.Name == "" {
		h.Name = field
	} else if !ident.Name(h.Name) {
		bad("name", "%q: want 1–64 letters, digits, '.', '_' or '-', starting with a letter or digit", h.Name)
	}
	point := declared.Point(y.Point)
	switch {
	case y.Point == "":
		bad("point", "is required: one of %v", declared.Points)
	case !slices.Contains(declared.Points, point):
		bad("point", "%q: want one of %v", y.Point, declared.Points)
	}
	switch y.OnError {
	case "", string(declared.FailClosed), string(declared.FailOpen):
	default:
		bad("on_error", "%q: want fail_closed or fail_open", y.OnError)
	}
	if len(y.Match) > 0 && point != declared.PreTool && point != declared.PostTool {
		bad("match", "is for pre_tool and post_tool hooks: other points have no tool")
	}
	for k, g := range y.Match {
		if !doublestar.ValidatePattern(g) {
			bad(fmt.Sprintf("match[%d]", k), "bad glob %q", g)
		}
	}
	if y.Message != "" && point != declared.PostTurn {
		bad("message", "is for post_turn hooks: the message a refused answer gets")
	}
	if y.When != "" {
		cond, err := policy.CompileCondition(y.When)
		if err != nil {
			bad("when", "%v", err)
		}
		h.When = cond
	}
	if y.Timeout != "" {
		d, err := duration(y.Timeout, false)
		switch {
		case err != nil:
			bad("timeout", "%v", err)
		case d < time.Millisecond || d > maxHookChain:
			bad("timeout", "%q: want 1ms to 1m", y.Timeout)
		}
		h.Timeout = d
	}
	switch {
	case len(y.Command) > 0 && y.URL != "":
		bad("", "give command or url, not both")
	case len(y.Command) == 0 && y.URL == "":
		bad("command", "is required: a command, or a webhook's url")
	case len(y.Command) > 0:
		if y.Secret != "" {
			bad("secret", "is for webhooks: a command is handed secrets with env")
		}
		cmd, cp := c.hookCommand(l, field, y, f, ws, sbox, values)
		probs = append(probs, cp...)
		h.Command = cmd
	default:
		if len(y.Env) > 0 {
			bad("env", "is for commands: a webhook is handed nothing but the event")
		}
		u, err := url.Parse(y.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			bad("url", "%q: want an http or https URL", y.URL)
		}
		switch {
		case y.Secret == "":
			bad("secret", "is required with url: the name of the secret (under secrets) that signs each delivery")
		case !isDeclared(f.Secrets, y.Secret):
			bad("secret", "%q is not declared under secrets", y.Secret)
		}
		h.Webhook = &declared.Webhook{URL: y.URL, Secret: []byte(values[y.Secret])}
	}
	return h, probs
}

// hookCommand builds a hook's command: its program found now, so a
// missing one is a problem of the file, and its sandbox the agent's.
func (c *Config) hookCommand(l locator, field string, y Hook, f *File, ws string, sbox local.Config, values map[string]string) (*declared.Command, []Problem) {
	var probs []Problem
	env, ep := agentEnv(l, field+".env", y.Env, values, f.Secrets)
	probs = append(probs, ep...)
	args := slices.Clone(y.Command)
	prog := args[0]
	switch {
	case prog == "":
		probs = append(probs, l.problem(field+".command[0]", "is empty: name a program"))
		return nil, probs
	case strings.Contains(prog, "/"):
		prog = relTo(c.Path, prog)
		if abs, err := filepath.Abs(prog); err == nil {
			prog = abs
		}
		fi, err := os.Stat(prog)
		switch {
		case err != nil:
			probs = append(probs, l.problem(field+".command[0]", "%v", err))
		case fi.IsDir() || fi.Mode().Perm()&0o111 == 0:
			probs = append(probs, l.problem(field+".command[0]", "%s is not an executable file", prog))
		}
		args[0] = prog
		// Under bwrap a command sees the workspace and the system
		// directories; a program elsewhere is shown to it read-only.
		if rel, err := filepath.Rel(ws, prog); err != nil || strings.HasPrefix(rel, "..") {
			sbox.ReadPaths = append(slices.Clone(sbox.ReadPaths), prog)
		}
	default:
		if _, err := exec.LookPath(prog); err != nil {
			probs = append(probs, l.problem(field+".command[0]", "%q is not a program on PATH", prog))
		}
	}
	if len(probs) > 0 {
		return nil, probs
	}
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	sbox.Root, sbox.ExtraEnv, sbox.DisableExec = ws, nil, false
	open := func() (sandbox.Sandbox, error) { return local.New(sbox) }
	// Open it once now: a workspace that is missing, or isolation that is
	// required but not usable, is a problem of the file, not of a call.
	sb, err := local.New(sbox)
	if err != nil {
		return nil, []Problem{l.problem(field+".command", "%v", err)}
	}
	caps := sb.Capabilities()
	sb.Close()
	if !caps.Exec {
		return nil, []Problem{l.problem(field+".command", "commands cannot run here: %s", caps.Warning)}
	}
	return &declared.Command{Args: args, Env: vars, Sandbox: open}, nil
}

// hookLimit is the hook timeout an agent needs for its hooks: what its
// limits say, or more if one point's hooks may take longer together.
func hookLimit(lim hitch.Limits, set *declared.Set) hitch.Limits {
	if set == nil {
		return lim
	}
	need := set.Bound() + time.Second // the engine's own bound is a backstop
	have := lim.HookTimeout
	if have == 0 {
		have = hitchtype.DefaultHookTimeout
	}
	lim.HookTimeout = min(max(have, need), maxHookChain)
	return lim
}
