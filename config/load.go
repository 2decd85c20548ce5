package config

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/approval"
	"github.com/hitch-dev/hitch/internal/ident"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/anthropic"
	"github.com/hitch-dev/hitch/model/openai"
	"github.com/hitch-dev/hitch/model/route"
	"github.com/hitch-dev/hitch/model/scripted"
	"github.com/hitch-dev/hitch/sandbox"
	"github.com/hitch-dev/hitch/sandbox/local"
	"github.com/hitch-dev/hitch/secret"
	"github.com/hitch-dev/hitch/tool"
	"github.com/hitch-dev/hitch/tool/builtin"
	"github.com/hitch-dev/hitch/tool/mcp"
)

// Options adjust Load.
type Options struct {
	// Tools are Go tools the file may name besides the built-in ones.
	Tools []tool.Tool
	// Getenv reads API keys and secrets; default os.Getenv.
	Getenv func(string) string
	// RequireIsolation is the sandbox's require_isolation when the file
	// does not set it (hitch serve sets it). Default false.
	RequireIsolation bool
	// DeferMCP checks the MCP servers' settings but connects to none:
	// Config.MCPServers lists them for a caller that reaches them itself
	// (hitch doctor), and the agents' MCP tools are not usable. Default
	// false.
	DeferMCP bool
	// DeferIsolation checks the agents' workspaces and tools without
	// finding out whether their commands can be isolated: no bwrap is
	// started, for a process that runs no command, only queues runs for
	// a worker (hitch run --detach). Warnings then say nothing about
	// isolation, and a sandbox that requires isolation this host lacks is
	// refused when a run of its agent starts. Default false.
	DeferIsolation bool
}

// Config is a loaded, validated configuration.
type Config struct {
	Path   string
	File   *File
	Models map[string]model.Model
	// Routes are the file's routes, built over Models. Each is one value
	// for the whole process, so its breakers are the node's.
	Routes map[string]*route.Route
	Agents []*hitch.Agent
	// Triggers are the file's trigger bindings, checked.
	Triggers []ConfiguredTrigger
	// MissingSecrets maps an approver ("agent/name") whose secret
	// variable is not set to that variable's name: such an approver can
	// answer nothing until it is set.
	MissingSecrets map[string]string
	// Closers release what the agents hold (MCP clients).
	closers []func() error
	clients map[string]*mcp.Client
	servers []mcp.Server
	// loadBoxes are the sandboxes Load opens to check workspaces, keyed
	// by their settings; closed when Load returns.
	loadBoxes map[string]loadBox
	// deferIsolation is Options.DeferIsolation, for the length of Load.
	deferIsolation bool
	// Secrets redacts every secret value the file names: its secrets
	// section, model API keys and approver secrets. Give it to the
	// runtime (hitch.Config.Secrets).
	Secrets *secret.Redactor
	// SecretVars are the environment variables the file takes a
	// credential from: model keys, approver secrets, the secrets section
	// and server tokens. A program drops them from its environment once
	// loaded (see docs/secrets.md), so no process it starts can read them;
	// read them afterwards with the Getenv that kept their values.
	SecretVars []string
	// Warnings are for the operator, one line each: agents whose commands
	// run without isolation.
	Warnings []string
}

// Agent returns the agent named name, or the only agent when name is empty.
func (c *Config) Agent(name string) (*hitch.Agent, error) {
	if name == "" {
		if len(c.Agents) == 1 {
			return c.Agents[0], nil
		}
		names := make([]string, len(c.Agents))
		for i, a := range c.Agents {
			names[i] = a.Name()
		}
		return nil, fmt.Errorf("%s declares %d agents (%v): name one with --agent", c.Path, len(c.Agents), names)
	}
	for _, a := range c.Agents {
		if a.Name() == name {
			return a, nil
		}
	}
	return nil, fmt.Errorf("%s declares no agent named %q", c.Path, name)
}

// Close releases what the agents hold: the MCP
// clients (a stdio server is stopped).
func (c *Config) Close() error {
	var first error
	for _, f := range c.closers {
		if err := f(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// providers build a model from its settings, by provider name.
var providers = map[string]func(m Model, configPath string, getenv func(string) string) (model.Model, error){
	"scripted": func(m Model, configPath string, _ func(string) string) (model.Model, error) {
		if m.Script == "" {
			return nil, fmt.Errorf("script: is required for the scripted provider")
		}
		return scripted.Load(relTo(configPath, m.Script))
	},
	"openai": func(m Model, _ string, getenv func(string) string) (model.Model, error) {
		if m.Model == "" {
			return nil, fmt.Errorf("model: is required")
		}
		switch m.API {
		case "", "chat", "responses":
		default:
			return nil, fmt.Errorf("api: %q: want chat or responses", m.API)
		}
		return openai.New(openai.Config{Model: m.Model, BaseURL: m.BaseURL, APIKey: getenv(m.KeyEnv()), API: m.API, NoStream: m.Stream != nil && !*m.Stream})
	},
	"anthropic": func(m Model, _ string, getenv func(string) string) (model.Model, error) {
		if m.Model == "" {
			return nil, fmt.Errorf("model: is required")
		}
		return anthropic.New(anthropic.Config{Model: m.Model, BaseURL: m.BaseURL, APIKey: getenv(m.KeyEnv()), MaxTokens: m.MaxTokens})
	},
}

// KeyEnv is the environment variable holding the model's API key: the one
// named, or the provider's usual one for its hosted API, or "" for a local
// server that needs none.
func (m Model) KeyEnv() string {
	switch {
	case m.APIKeyEnv != "":
		return m.APIKeyEnv
	case m.BaseURL != "":
		return ""
	case m.Provider == "openai":
		return "OPENAI_API_KEY"
	case m.Provider == "anthropic":
		return "ANTHROPIC_API_KEY"
	}
	return ""
}

// Load reads, checks and builds a configuration file. Problems in the file
// come back together as Problems, each naming the file, line and field.
// Once the file is sound, Load connects to its MCP servers, all at once,
// each within its connect timeout; a server that cannot be reached is an
// error naming it. Close the Config to close them.
func Load(path string, opts Options) (*Config, error) {
	f, l, decodeProbs, err := parse(path)
	if err != nil {
		return nil, err
	}
	if f == nil {
		return nil, decodeProbs
	}
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	var probs Problems
	cfg := &Config{Path: path, File: f, Models: map[string]model.Model{}, Routes: map[string]*route.Route{}, MissingSecrets: map[string]string{}}
	cfg.deferIsolation = opts.DeferIsolation
	defer cfg.closeLoadSandboxes()
	servers, mp := mcpServers(l, path, f.MCP, getenv)
	probs = append(probs, mp...)
	probs = append(probs, serverProblems(l, f.Server)...)
	probs = append(probs, workerProblems(l, f.Worker)...)
	secretValues, vars, sp := cfg.secrets(l, f, getenv)
	probs = append(probs, sp...)
	cfg.SecretVars = vars
	if len(sp) == 0 {
		red, err := secret.New(secretValues)
		if err != nil {
			probs = append(probs, l.problem("secrets", "%v", err))
		}
		cfg.Secrets = red
	}
	sbox, sbp := cfg.sandboxOf(l, f.Sandbox, opts.RequireIsolation)
	probs = append(probs, sbp...)
	var sels []*selection // every agent's MCP tools

	for _, name := range slices.Sorted(maps.Keys(f.Models)) {
		m := f.Models[name]
		field := "models." + name
		build, ok := providers[m.Provider]
		if !ok {
			probs = append(probs, l.problem(field+".provider", "%q: want one of %v", m.Provider, slices.Sorted(maps.Keys(providers))))
			continue
		}
		switch {
		case m.Stream != nil && m.Provider != "openai":
			probs = append(probs, l.problem(field+".stream", "is for the openai provider only"))
			continue
		case m.Stream != nil && !*m.Stream && m.API == "responses":
			probs = append(probs, l.problem(field+".stream", "false needs api: chat; the responses API is always streamed"))
			continue
		}
		mm, err := build(m, path, getenv)
		if err != nil {
			probs = append(probs, l.problem(field, "%v", err))
			continue
		}
		cfg.Models[name] = mm
	}
	probs = append(probs, cfg.routes(l, f)...)
	if len(f.Agents) == 0 {
		probs = append(probs, l.problem("agents", "declare at least one agent"))
	}
	extra := map[string]tool.Tool{}
	for _, t := range opts.Tools {
		extra[t.Info().Name] = t
	}
	ext, ep := externalTools(l, f.ExternalTools, extra)
	probs = append(probs, ep...)
	for _, t := range ext {
		extra[t.Info().Name] = t
	}
	specs := make([]*hitch.Spec, len(f.Agents)) // nil where the agent has problems
	index := map[string]int{}
	for i, a := range f.Agents {
		field := fmt.Sprintf("agents[%d]", i)
		if j, dup := index[a.Name]; dup && a.Name != "" {
			probs = append(probs, l.problem(field+".name", "%q is already the name of agents[%d]", a.Name, j))
		}
		index[a.Name] = i
		var np []Problem
		if !ident.Name(a.Name) {
			np = append(np, l.problem(field+".name", "%q: want 1–64 letters, digits, '.', '_' or '-', starting with a letter or digit", a.Name))
		}
		if a.Version < 0 {
			np = append(np, l.problem(field+".version", "%d: want 1 or more (default 1)", a.Version))
		}
		probs = append(probs, np...)
		spec := hitch.Spec{Name: a.Name, Version: a.Version, Instructions: a.Instructions, Description: a.Description}
		_, declared := f.Models[a.Model]
		_, routed := f.Routes[a.Model]
		if a.Model == "" {
			probs = append(probs, l.problem(field+".model", "is required: name one of models or routes"))
		} else if mm, ok := cfg.Models[a.Model]; ok {
			spec.Model = mm
		} else if r, ok := cfg.Routes[a.Model]; ok {
			spec.Model = r
		} else if !declared && !routed {
			probs = append(probs, l.problem(field+".model", "%q is not declared under models (have %v) or routes (have %v)", a.Model, slices.Sorted(maps.Keys(f.Models)), slices.Sorted(maps.Keys(f.Routes))))
		}
		p, pp := policyOf(l, field+".policy", a.Policy)
		probs = append(probs, pp...)
		spec.Policy = p
		env, ep := agentEnv(l, field+".env", a.Env, secretValues, f.Secrets)
		probs = append(probs, ep...)
		tools, workspace, tp := cfg.tools(l, field, a, extra, sbox, env)
		var agentSels []*selection
		for k, name := range a.Tools {
			if strings.Contains(name, "__") && !slices.Contains(builtin.Names(), name) && extra[name] == nil {
				tp = append(tp, mcpTool(l, fmt.Sprintf("%s.tools[%d]", field, k), name, servers, &agentSels)...)
			}
		}
		probs = append(probs, tp...)
		spec.Tools, spec.Workspace = tools, workspace
		for _, s := range agentSels {
			spec.ToolSources = append(spec.ToolSources, s)
		}
		sels = append(sels, agentSels...)
		if a.Answer != nil {
			b, err := json.Marshal(a.Answer)
			if err != nil {
				probs = append(probs, l.problem(field+".answer", "not a JSON Schema: %v", err))
			}
			spec.Answer = hitch.AnswerSchema(b)
		}
		var ap []Problem
		if len(a.Approvers) > 0 {
			var approvers approval.Approvers
			approvers, ap = cfg.approvers(l, field, a, getenv)
			probs = append(probs, ap...)
			if approvers != nil {
				spec.Approvers = approvers
			}
		}
		bud, bp := budget(l, field+".budget", a.Budget)
		probs = append(probs, bp...)
		spec.Budget = bud
		lim, lp := limits(l, field+".limits", a.Limits)
		probs = append(probs, lp...)
		hs, hp := cfg.hooks(l, f, i, sbox, secretValues)
		probs = append(probs, hp...)
		if hs != nil {
			spec.Hooks = hs
		}
		spec.Limits = hookLimit(lim, hs)
		if len(np) > 0 || len(pp) > 0 || len(tp) > 0 || len(lp) > 0 || len(ap) > 0 || len(bp) > 0 || len(hp) > 0 || spec.Model == nil {
			continue
		}
		specs[i] = &spec
	}
	// Build agents after their sub-agents, refusing cycles.
	built := make([]*hitch.Agent, len(f.Agents))
	state := make([]int, len(f.Agents)) // 0 new, 1 building, 2 done
	var buildAgent func(i int) *hitch.Agent
	buildAgent = func(i int) *hitch.Agent {
		field := fmt.Sprintf("agents[%d]", i)
		switch state[i] {
		case 1:
			probs = append(probs, l.problem(field+".sub_agents", "%q delegates to itself through its sub-agents", f.Agents[i].Name))
			return nil
		case 2:
			return built[i]
		}
		state[i] = 1
		defer func() { state[i] = 2 }()
		spec := specs[i]
		ok := spec != nil
		var subs []*hitch.Agent
		for k, name := range f.Agents[i].SubAgents {
			j, found := index[name]
			if !found {
				probs = append(probs, l.problem(fmt.Sprintf("%s.sub_agents[%d]", field, k), "%q is not an agent in this file", name))
				ok = false
				continue
			}
			sub := buildAgent(j)
			if sub == nil {
				ok = false
				continue
			}
			subs = append(subs, sub)
		}
		if !ok {
			return nil
		}
		spec.SubAgents = subs
		agent, err := hitch.Build(*spec)
		if err != nil {
			if ces, isCE := err.(hitch.ConfigErrors); isCE {
				for _, ce := range ces {
					probs = append(probs, l.problem(field+"."+snake(ce.Field), "%s", ce.Problem))
				}
			} else {
				probs = append(probs, l.problem(field, "%v", err))
			}
			return nil
		}
		built[i] = agent
		return agent
	}
	for i := range f.Agents {
		if a := buildAgent(i); a != nil {
			cfg.Agents = append(cfg.Agents, a)
		}
	}
	trs, trp := checkTriggers(l, f.Triggers, index)
	probs = append(probs, trp...)
	cfg.Triggers = trs
	probs = merge(decodeProbs, probs)
	cfg.servers = servers
	if len(probs) == 0 && len(servers) > 0 && !opts.DeferMCP {
		// Servers start only for a file that is otherwise sound.
		mp, err := cfg.connectMCP(l, servers, sels)
		if err != nil {
			_ = cfg.Close()
			return nil, err
		}
		probs = mp
	}
	if len(probs) > 0 {
		_ = cfg.Close()
		probs = distinct(probs) // the file's hooks are checked for each agent
		sort.SliceStable(probs, func(i, j int) bool { return probs[i].Line < probs[j].Line })
		return nil, probs
	}
	return cfg, nil
}

// distinct drops repeats of a problem, keeping the first.
func distinct(ps Problems) Problems {
	seen := map[Problem]bool{}
	out := ps[:0]
	for _, p := range ps {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// merge adds the problems the checks found to those decoding found,
// leaving out the ones about a field decoding already refused (its zero
// value stood in for it).
func merge(decoded, checked Problems) Problems {
	out := append(Problems(nil), decoded...)
	for _, p := range checked {
		covered := false
		for _, d := range decoded {
			if p.Field == d.Field || strings.HasPrefix(p.Field, d.Field+".") || strings.HasPrefix(p.Field, d.Field+"[") {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, p)
		}
	}
	return out
}

// tools builds an agent's tools: built-in ones on a sandbox confined to the
// workspace, and Go tools passed in Options.
func (c *Config) tools(l locator, field string, a Agent, extra map[string]tool.Tool, sbox local.Config, env []string) ([]tool.Tool, func() (sandbox.Sandbox, []tool.Tool, error), []Problem) {
	var probs []Problem
	var builtins []string
	var out []tool.Tool
	for i, name := range a.Tools {
		switch {
		case slices.Contains(builtin.Names(), name):
			builtins = append(builtins, name)
		case name == tool.AwaitEventName:
			out = append(out, tool.AwaitEvent())
		case slices.Contains(builtin.ScheduleToolNames, name) && extra[name] == nil:
			st, err := builtin.ScheduleTools(name)
			if err != nil {
				probs = append(probs, l.problem(fmt.Sprintf("%s.tools[%d]", field, i), "%v", err))
				continue
			}
			out = append(out, st...)
		case extra[name] != nil:
			out = append(out, extra[name])
		case strings.Contains(name, "__"):
			// An MCP tool: see mcpTool.
		default:
			probs = append(probs, l.problem(fmt.Sprintf("%s.tools[%d]", field, i), "%q is not a tool here: the built-in tools are %v and %v, and MCP tools are named server__tool", name, builtin.Names(), builtin.ScheduleToolNames))
		}
	}
	if len(a.Env) > 0 && !slices.Contains(builtins, "bash") {
		probs = append(probs, l.problem(field+".env", "no tool of this agent runs commands: env is for the bash tool"))
	}
	if len(builtins) == 0 || len(probs) > 0 {
		return out, nil, probs
	}
	ws := relTo(c.Path, a.Workspace)
	if ws == "" {
		ws = relTo(c.Path, ".")
	}
	sbox.Root, sbox.ExtraEnv = ws, env
	// An agent whose tools run no command gets a sandbox without
	// commands: nothing to isolate, so no bubblewrap to look for.
	if !slices.ContainsFunc(builtins, func(n string) bool { return slices.Contains(builtin.Needs(n), sandbox.CapExec) }) {
		sbox.DisableExec, sbox.DenyNetwork, sbox.RequireIsolation = true, false, false
	}
	// The sandbox opened here only checks the workspace and shapes the
	// tools' definitions; each run opens its own when it starts (below),
	// so the file load holds nothing per agent.
	box := sbox
	if c.deferIsolation && !box.DisableExec {
		// Definitions do not depend on the isolation: check the rest.
		box.Isolation, box.DenyNetwork, box.RequireIsolation = sandbox.IsolationNone, false, false
	}
	sb, err := c.loadSandbox(box)
	if err != nil {
		return nil, nil, append(probs, l.problem(field+".workspace", "%v", err))
	}
	bt, err := builtin.New(sb, builtins...)
	if err != nil {
		if sbox.RequireIsolation {
			return nil, nil, append(probs, l.problem(field+".tools", "%v (sandbox.require_isolation is set)", err))
		}
		return nil, nil, append(probs, l.problem(field+".tools", "%v", err))
	}
	if w := sb.Capabilities().Warning; w != "" && slices.Contains(builtins, "bash") && !c.deferIsolation {
		c.Warnings = append(c.Warnings, fmt.Sprintf("agent %s: %s", a.Name, w))
	}
	// Each run gets its own sandbox on the same folder, so roots granted
	// to one run reach no other.
	workspace := func() (sandbox.Sandbox, []tool.Tool, error) {
		sb, err := local.New(sbox)
		if err != nil {
			return nil, nil, err
		}
		ts, err := builtin.New(sb, builtins...)
		if err != nil {
			sb.Close()
			return nil, nil, err
		}
		return sb, ts, nil
	}
	return append(bt, out...), workspace, probs
}

// loadSandbox opens the sandbox that checks a workspace and shapes the
// tools' definitions at load, one for all the agents that share its
// settings: hundreds of agents on one folder open it once.
func (c *Config) loadSandbox(cfg local.Config) (*local.Sandbox, error) {
	key := fmt.Sprintf("%q %q %v %v %v %v %q %q %q", cfg.Root, cfg.Isolation, cfg.DenyNetwork, cfg.RequireIsolation,
		cfg.DisableExec, cfg.ReadOnly, cfg.ReadPaths, cfg.Env, cfg.ExtraEnv)
	if b, ok := c.loadBoxes[key]; ok {
		return b.sb, b.err
	}
	sb, err := local.New(cfg)
	if c.loadBoxes == nil {
		c.loadBoxes = map[string]loadBox{}
	}
	c.loadBoxes[key] = loadBox{sb, err}
	return sb, err
}

// loadBox is one of the sandboxes Load opens: see loadSandbox.
type loadBox struct {
	sb  *local.Sandbox
	err error
}

// closeLoadSandboxes closes the sandboxes Load opened.
func (c *Config) closeLoadSandboxes() {
	for _, b := range c.loadBoxes {
		if b.sb != nil {
			b.sb.Close()
		}
	}
	c.loadBoxes = nil
}

// approvers builds an agent's approvers. A secret variable that is not
// set leaves that approver unable to answer, with a note in MissingSecrets.
func (c *Config) approvers(l locator, field string, a Agent, getenv func(string) string) (approval.Approvers, []Problem) {
	var probs []Problem
	var members []approval.Member
	for i, ap := range a.Approvers {
		f := fmt.Sprintf("%s.approvers[%d]", field, i)
		secret := ap.Secret
		switch {
		case ap.Name == "":
			probs = append(probs, l.problem(f+".name", "is required"))
			continue
		case ap.Secret != "" && ap.SecretEnv != "":
			probs = append(probs, l.problem(f, "give secret_env or secret, not both"))
			continue
		case ap.Secret == "" && ap.SecretEnv == "":
			probs = append(probs, l.problem(f+".secret_env", "is required: the variable holding %s's secret", ap.Name))
			continue
		case ap.SecretEnv != "":
			secret = getenv(ap.SecretEnv)
			if secret == "" {
				c.MissingSecrets[a.Name+"/"+ap.Name] = ap.SecretEnv
				secret = randomSecret()
			}
		}
		if len(ap.Requirements) == 0 {
			probs = append(probs, l.problem(f+".requirements", `is required: the requirements %s may answer ("*" for any)`, ap.Name))
			continue
		}
		members = append(members, approval.Member{Name: ap.Name, Secret: secret, Requirements: ap.Requirements})
	}
	if len(probs) > 0 {
		return nil, probs
	}
	s, err := approval.NewStatic(members...)
	if err != nil {
		return nil, []Problem{l.problem(field+".approvers", "%v", err)}
	}
	return s, nil
}

func randomSecret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func budget(l locator, field string, y *Budget) (*hitch.Budget, []Problem) {
	if y == nil {
		return nil, nil
	}
	var probs []Problem
	out := &hitch.Budget{Tokens: y.Tokens, USD: y.USD, ModelCalls: y.ModelCalls, ToolCalls: y.ToolCalls}
	switch usd := y.USD; {
	case math.IsNaN(usd) || math.IsInf(usd, 0):
		probs = append(probs, l.problem(field+".usd", "%v: want 0 (no limit) or an amount such as 2.50", usd))
	case usd > maxUSD:
		probs = append(probs, l.problem(field+".usd", "%g: want at most %.0f", usd, float64(maxUSD)))
	case usd > 0 && usd < minUSD:
		probs = append(probs, l.problem(field+".usd", "%g: want 0 (no limit) or at least %g, a millionth of a dollar", usd, minUSD))
	}
	for _, c := range []struct {
		key string
		neg bool
	}{{"tokens", y.Tokens < 0}, {"usd", y.USD < 0 && !math.IsInf(y.USD, 0)}, {"model_calls", y.ModelCalls < 0}, {"tool_calls", y.ToolCalls < 0}} {
		if c.neg {
			probs = append(probs, l.problem(field+"."+c.key, "want 0 (no limit) or more"))
		}
	}
	if y.WallTime != "" {
		d, err := duration(y.WallTime, false)
		if err != nil || d < 0 {
			probs = append(probs, l.problem(field+".wall_time", "%q is not a duration such as 30m", y.WallTime))
		}
		out.WallTime = d
	}
	return out, probs
}

// A budget in dollars is kept in millionths of a dollar.
const (
	minUSD = 1e-6
	maxUSD = 1e9
)

// fmtDuration spells a duration as a file would: 24h, not 24h0m0s.
func fmtDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func limits(l locator, field string, y Limits) (hitch.Limits, []Problem) {
	var probs []Problem
	// dur reads a duration and checks it against the runtime's range,
	// spelled as the file spells it.
	dur := func(key, v string, lo, hi time.Duration, infinite bool) time.Duration {
		d, err := duration(v, infinite)
		switch {
		case err != nil:
			probs = append(probs, l.problem(field+"."+key, "%v", err))
		case v == "" || infinite && (v == "infinite" || v == "inf"):
		case d < lo || d > hi:
			or := ""
			if infinite {
				or = ", or infinite"
			}
			probs = append(probs, l.problem(field+"."+key, "%q: want %s to %s%s", v, fmtDuration(lo), fmtDuration(hi), or))
		}
		return d
	}
	num := func(key string, v *int, lo, hi int) int {
		if v == nil {
			return 0
		}
		if *v < lo || *v > hi {
			probs = append(probs, l.problem(field+"."+key, "%d: want %d–%d", *v, lo, hi))
		}
		return *v
	}
	if y.MaxTokens != nil && *y.MaxTokens < 0 {
		probs = append(probs, l.problem(field+".max_tokens", "%d: want 0 (none) or more", *y.MaxTokens))
	}
	out := hitch.Limits{
		ModelAttempts:       num("model_attempts", y.ModelAttempts, 1, 10000),
		RetryDelay:          dur("retry_delay", y.RetryDelay, time.Millisecond, time.Minute, false),
		MaxRetryAfter:       dur("max_retry_after", y.MaxRetryAfter, 0, time.Hour, false),
		ModelTimeout:        dur("model_timeout", y.ModelTimeout, time.Second, 24*time.Hour, true),
		PolicyTimeout:       dur("policy_timeout", y.PolicyTimeout, time.Millisecond, time.Minute, false),
		HookTimeout:         dur("hook_timeout", y.HookTimeout, time.Millisecond, time.Minute, false),
		ToolTimeout:         dur("tool_timeout", y.ToolTimeout, time.Millisecond, 24*time.Hour, true),
		ToolConcurrency:     num("tool_concurrency", y.ToolConcurrency, 1, 64),
		MaxToolResult:       num("max_tool_result", y.MaxToolResult, 1, 64<<20),
		CommandWait:         dur("command_wait", y.CommandWait, 0, time.Minute, false),
		ApprovalExpiry:      dur("approval_expiry", y.ApprovalExpiry, time.Second, 365*24*time.Hour, true),
		AnswerAttempts:      num("answer_attempts", y.AnswerAttempts, 1, 100),
		MaxChildren:         num("max_children", y.MaxChildren, 1, 999),
		MaxDepth:            num("max_depth", y.MaxDepth, 1, 16),
		FinalTurn:           y.FinalTurn,
		KeepTurns:           num("keep_turns", y.KeepTurns, 1, 1000),
		ContinueOnUncertain: y.ContinueOnUncertain,
		MaxWait:             dur("max_wait", y.MaxWait, time.Second, 365*24*time.Hour, false),
		PendingCallTimeout:  dur("pending_call_timeout", y.PendingCallTimeout, time.Second, 365*24*time.Hour, false),
	}
	if y.MaxTokens != nil {
		out.MaxTokens = *y.MaxTokens
	}
	if y.ContextWindow != nil {
		if *y.ContextWindow < 0 {
			probs = append(probs, l.problem(field+".context_window", "%d: want 0 (never compact) or a window in tokens", *y.ContextWindow))
		}
		out.ContextWindow = *y.ContextWindow
	}
	return out, probs
}

// Prices returns the file's price overrides for the runtime.
func (c *Config) Prices() model.Prices {
	p := model.Prices{}
	for name, v := range c.File.Prices {
		cached := v.CachedInput
		if cached == 0 {
			cached = v.Input
		}
		p[name] = model.Price{Input: v.Input, Output: v.Output, CachedInput: cached}
	}
	return p
}

// externalTools builds the file's external tools.
func externalTools(l locator, decls []ExternalTool, taken map[string]tool.Tool) ([]tool.Tool, []Problem) {
	var out []tool.Tool
	var probs []Problem
	seen := map[string]bool{}
	for i, d := range decls {
		field := fmt.Sprintf("external_tools[%d]", i)
		switch {
		case !ident.Name(d.Name):
			probs = append(probs, l.problem(field+".name", "%q: want 1–64 letters, digits, '.', '_' or '-', starting with a letter or digit", d.Name))
			continue
		case seen[d.Name] || taken[d.Name] != nil || slices.Contains(builtin.Names(), d.Name) || d.Name == tool.AwaitEventName:
			probs = append(probs, l.problem(field+".name", "%q is already the name of a tool", d.Name))
			continue
		}
		seen[d.Name] = true
		var opts []tool.Option
		if d.Timeout != "" {
			t, err := duration(d.Timeout, true)
			switch {
			case err != nil:
				probs = append(probs, l.problem(field+".timeout", "%v", err))
				continue
			case t != hitch.Infinite && (t < time.Second || t > 365*24*time.Hour):
				probs = append(probs, l.problem(field+".timeout", "%q: want 1s to 8760h, or infinite", d.Timeout))
				continue
			}
			opts = append(opts, tool.WithTimeout(t))
		}
		var schema json.RawMessage
		if d.Parameters != nil {
			b, err := json.Marshal(d.Parameters)
			if err != nil {
				probs = append(probs, l.problem(field+".parameters", "not a JSON Schema: %v", err))
				continue
			}
			schema = b
		}
		t, err := tool.NewExternal(d.Name, d.Description, schema, opts...)
		if err != nil {
			probs = append(probs, l.problem(field, "%v", err))
			continue
		}
		out = append(out, t)
	}
	return out, probs
}

// sandboxOf turns the sandbox section into the settings of every agent's
// local sandbox.
func (c *Config) sandboxOf(l locator, s Sandbox, requireDefault bool) (local.Config, []Problem) {
	var probs []Problem
	out := local.Config{RequireIsolation: requireDefault}
	if s.RequireIsolation != nil {
		out.RequireIsolation = *s.RequireIsolation
	}
	for i, p := range s.Read {
		abs := relTo(c.Path, p)
		if a, err := filepath.Abs(abs); err == nil {
			abs = a
		}
		if _, err := os.Stat(abs); err != nil {
			probs = append(probs, l.problem(fmt.Sprintf("sandbox.read[%d]", i), "%v", err))
			continue
		}
		out.ReadPaths = append(out.ReadPaths, abs)
	}
	return out, probs
}
