package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/policy"
)

// File is the shape of a configuration file.
type File struct {
	// Store is the SQLite file runs are kept in, relative to the config
	// file. Default hitch.db; the --db flag wins.
	Store string `yaml:"store,omitempty"`
	// Models are named model settings the agents refer to.
	Models map[string]Model `yaml:"models"`
	// Routes are named, ordered lists of models with fallbacks; an
	// agent's model may name a route instead of a model.
	Routes map[string]Route `yaml:"routes,omitempty"`
	// Agents are the agents the CLI and server can run.
	Agents []Agent `yaml:"agents"`
	// Prices override or add model prices, in USD per million tokens.
	Prices map[string]Price `yaml:"prices,omitempty"`
	// MCP declares the MCP servers whose tools agents may name.
	MCP []MCPServer `yaml:"mcp,omitempty"`
	// Server configures hitch serve: its bearer tokens.
	Server *Server `yaml:"server,omitempty"`
	// Worker configures the nodes that drive runs (hitch worker, serve,
	// recover): how many runs each keeps in flight.
	Worker *Worker `yaml:"worker,omitempty"`
	// Secrets name values kept out of everything hitch writes down (see
	// docs/secrets.md); agents hand them to their commands with env.
	Secrets map[string]Secret `yaml:"secrets,omitempty"`
	// Sandbox sets what the shell tool's commands may see of the host.
	Sandbox Sandbox `yaml:"sandbox,omitempty"`
	// ExternalTools declare tools whose work another system does: hitch
	// runs no body; a call waits for its result from outside (hitch calls
	// complete). Agents name them in tools.
	ExternalTools []ExternalTool `yaml:"external_tools,omitempty"`
	// Triggers declare trigger bindings: schedules that start runs or
	// send sessions messages (docs/triggers.md).
	Triggers []Trigger `yaml:"triggers,omitempty"`
	// Hooks are called by every agent of the file, before and among its
	// own by priority (docs/hooks.md).
	Hooks []Hook `yaml:"hooks,omitempty"`
}

// ExternalTool declares an external tool.
type ExternalTool struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description,omitempty"`
	// Parameters is the JSON Schema of the arguments, written in YAML;
	// default any object.
	Parameters map[string]any `yaml:"parameters,omitempty"`
	// Timeout bounds the wait for the result (default: the agent's
	// limits.pending_call_timeout); "infinite" waits limits.max_wait.
	Timeout string `yaml:"timeout,omitempty"`
}

// Price is a model's price in USD per million tokens.
type Price struct {
	Input       float64 `yaml:"input"`
	Output      float64 `yaml:"output"`
	CachedInput float64 `yaml:"cached_input,omitempty"`
}

// Model is one model's settings.
type Model struct {
	// Provider is scripted, openai or anthropic. An OpenAI-compatible
	// server (Ollama, vLLM, llama.cpp, LM Studio) is openai with a base_url.
	Provider string `yaml:"provider"`
	// Model is the provider's model name.
	Model string `yaml:"model,omitempty"`
	// BaseURL points the provider at another server.
	BaseURL string `yaml:"base_url,omitempty"`
	// APIKeyEnv names the environment variable holding the API key.
	APIKeyEnv string `yaml:"api_key_env,omitempty"`
	// API chooses the OpenAI API: chat (default) or responses.
	API string `yaml:"api,omitempty"`
	// MaxTokens bounds a reply (Anthropic requires one; default 4096).
	MaxTokens int `yaml:"max_tokens,omitempty"`
	// Script is the scripted model's script file, relative to the config.
	Script string `yaml:"script,omitempty"`
	// Stream: false asks an openai model (Chat Completions) for whole
	// replies, for servers that stream text but not tool calls. Default true.
	Stream *bool `yaml:"stream,omitempty"`
}

// Agent is one agent's settings.
type Agent struct {
	Name    string `yaml:"name"`
	Version int    `yaml:"version,omitempty"`
	// Model names one of models, or one of routes.
	Model        string `yaml:"model"`
	Instructions string `yaml:"instructions,omitempty"`
	// Tools name built-in tools, Go tools passed to Load, and MCP tools:
	// "server__tool", or a glob such as "server__*" for every tool of a
	// server, including those it adds later.
	Tools []string `yaml:"tools,omitempty"`
	// Policy is "allow_all", "deny_all", or a list of rules.
	Policy any    `yaml:"policy"`
	Limits Limits `yaml:"limits,omitempty"`
	// Workspace is the directory the file and shell tools are confined
	// to, relative to the config file. Default: the config file's folder.
	Workspace string `yaml:"workspace,omitempty"`
	// Answer is the JSON Schema of a typed final answer, written in YAML.
	Answer map[string]any `yaml:"answer,omitempty"`
	// Approvers may answer the agent's approval requests.
	Approvers []Approver `yaml:"approvers,omitempty"`
	// Description tells a parent's model what this agent does.
	Description string `yaml:"description,omitempty"`
	// SubAgents name other agents of this file this one may delegate to.
	SubAgents []string `yaml:"sub_agents,omitempty"`
	// Budget is the family budget of a root run of this agent.
	Budget *Budget `yaml:"budget,omitempty"`
	// Env sets variables of the agent's commands (the bash tool) to
	// secrets: variable name → secret name.
	Env map[string]string `yaml:"env,omitempty"`
	// Hooks are commands and webhooks called at points of the agent's
	// turn loop (docs/hooks.md).
	Hooks []Hook `yaml:"hooks,omitempty"`
}

// Budget limits a family of runs; zero or absent is unlimited.
type Budget struct {
	Tokens     int64   `yaml:"tokens,omitempty"`
	USD        float64 `yaml:"usd,omitempty"`
	ModelCalls int64   `yaml:"model_calls,omitempty"`
	ToolCalls  int64   `yaml:"tool_calls,omitempty"`
	WallTime   string  `yaml:"wall_time,omitempty"`
}

// Approver is a person who may answer approval requests.
type Approver struct {
	Name string `yaml:"name"`
	// SecretEnv names the environment variable holding the approver's
	// secret. Secret gives it inline instead, for demos and tests only.
	SecretEnv string `yaml:"secret_env,omitempty"`
	Secret    string `yaml:"secret,omitempty"`
	// Requirements are globs over the requirements the approver may answer.
	Requirements []string `yaml:"requirements"`
}

// Limits are an agent's limits; durations are Go duration strings ("5s"),
// and "infinite" where the limit allows it.
type Limits struct {
	ModelAttempts       *int   `yaml:"model_attempts,omitempty"`
	RetryDelay          string `yaml:"retry_delay,omitempty"`
	MaxRetryAfter       string `yaml:"max_retry_after,omitempty"`
	ModelTimeout        string `yaml:"model_timeout,omitempty"`
	PolicyTimeout       string `yaml:"policy_timeout,omitempty"`
	HookTimeout         string `yaml:"hook_timeout,omitempty"`
	ToolTimeout         string `yaml:"tool_timeout,omitempty"`
	ToolConcurrency     *int   `yaml:"tool_concurrency,omitempty"`
	MaxToolResult       *int   `yaml:"max_tool_result,omitempty"`
	CommandWait         string `yaml:"command_wait,omitempty"`
	ApprovalExpiry      string `yaml:"approval_expiry,omitempty"`
	AnswerAttempts      *int   `yaml:"answer_attempts,omitempty"`
	MaxChildren         *int   `yaml:"max_children,omitempty"`
	MaxDepth            *int   `yaml:"max_depth,omitempty"`
	MaxTokens           *int64 `yaml:"max_tokens,omitempty"`
	FinalTurn           bool   `yaml:"final_turn,omitempty"`
	ContextWindow       *int64 `yaml:"context_window,omitempty"`
	KeepTurns           *int   `yaml:"keep_turns,omitempty"`
	ContinueOnUncertain bool   `yaml:"continue_on_uncertain,omitempty"`
	MaxWait             string `yaml:"max_wait,omitempty"`
	PendingCallTimeout  string `yaml:"pending_call_timeout,omitempty"`
}

// Problem is one thing wrong with a configuration file.
type Problem struct {
	File  string
	Line  int // 0 when unknown
	Field string
	What  string
}

func (p Problem) Error() string {
	loc := p.File
	if p.Line > 0 {
		loc = fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	if p.Field == "" {
		return loc + ": " + p.What
	}
	return fmt.Sprintf("%s: %s: %s", loc, p.Field, p.What)
}

// Problems is every problem found in a file.
type Problems []Problem

func (ps Problems) Error() string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.Error()
	}
	return strings.Join(s, "\n")
}

// IsProblem reports whether err describes a bad configuration file (as
// opposed to, say, a file that cannot be read).
func IsProblem(err error) bool {
	var ps Problems
	return errors.As(err, &ps)
}

// Parse reads and decodes a configuration file, strictly, without building
// anything. Problems in the file come back as Problems, every one of them.
func Parse(path string) (*File, *ast.File, error) {
	f, l, probs, err := parse(path)
	if err != nil {
		return nil, nil, err
	}
	if len(probs) > 0 {
		return nil, nil, probs
	}
	return f, l.ast(), nil
}

// parse reads and decodes a file. A file that cannot be read is err; one
// that is not YAML is a single problem and no File; otherwise every
// unknown key and badly typed value is a problem and the File holds the
// rest, for the other checks to go on with. The locator finds the lines
// of the problems the later checks find.
func parse(path string) (f *File, l locator, probs Problems, err error) {
	l.path = path
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return nil, l, Problems{{File: path, What: "is a directory: want a YAML configuration file"}}, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, l, nil, fmt.Errorf("read config: %w", err)
	}
	if f, ok := decodeFast(b); ok {
		l.lazy = &lazyTree{src: b}
		return f, l, nil, nil
	}
	f, l, probs = decodeTree(path, b)
	return f, l, probs, nil
}

// decodeTree decodes a file through its positioned tree, every problem
// with its line.
func decodeTree(path string, b []byte) (f *File, l locator, probs Problems) {
	l.path = path
	// The YAML decoder can panic on some malformed input; a bad file must
	// be an error that names it, never a crash.
	defer func() {
		if p := recover(); p != nil {
			f, l.tree = nil, nil
			probs = Problems{{File: path, What: fmt.Sprintf("cannot be read as a configuration: %v", p)}}
		}
	}()
	tree, err := parser.ParseBytes(b, 0)
	if err != nil {
		return nil, l, Problems{syntaxProblem(path, err)}
	}
	l.tree = tree
	f = &File{}
	if !hasAliases(tree) && len(tree.Docs) > 0 {
		d := decoder{l: l}
		d.decode(tree.Docs[0], reflect.ValueOf(f).Elem(), "")
		// Without aliases the field-by-field decode is the whole answer
		// (FuzzLoad checks it equals the strict decoder's): decoding the
		// file a second time would double the cost of a large config.
		return f, l, d.probs
	}
	// The strict decoder resolves aliases and merge keys, which the
	// field-by-field one leaves alone.
	var strict File
	if err := yaml.UnmarshalWithOptions(b, &strict, yaml.Strict()); err != nil {
		return nil, l, Problems{syntaxProblem(path, err)}
	}
	return &strict, l, nil
}

var lineInError = regexp.MustCompile(`\[(\d+):(\d+)\]`)

func syntaxProblem(path string, err error) Problem {
	msg := yaml.FormatError(err, false, false)
	p := Problem{File: path, What: strings.TrimSpace(msg)}
	if m := lineInError.FindStringSubmatch(msg); m != nil {
		fmt.Sscan(m[1], &p.Line)
		p.What = strings.TrimSpace(lineInError.ReplaceAllString(strings.SplitN(msg, "\n", 2)[0], ""))
	}
	return p
}

// locator finds the line of a field in the parsed file.
type locator struct {
	path string
	tree *ast.File
	lazy *lazyTree // without tree: the file as decodeFast read it
}

// ast is the file's positioned tree, parsed now if decodeFast read it.
func (l locator) ast() *ast.File {
	if l.tree == nil && l.lazy != nil {
		return l.lazy.get()
	}
	return l.tree
}

// problem builds a Problem for field, a dotted path such as
// "agents[0].limits.tool_timeout"; the line is the field's, or its nearest
// present parent's.
func (l locator) problem(field, format string, args ...any) Problem {
	return Problem{File: l.path, Line: l.line(field), Field: field, What: fmt.Sprintf(format, args...)}
}

func (l locator) line(field string) int {
	for f := field; f != ""; f = parent(f) {
		p, err := yaml.PathString("$." + f)
		if err != nil {
			continue
		}
		tree := l.ast()
		if tree == nil {
			return 0
		}
		n, err := p.FilterFile(tree)
		if err == nil && n != nil && n.GetToken() != nil {
			return n.GetToken().Position.Line
		}
	}
	return 0
}

func parent(f string) string {
	i := strings.LastIndexAny(f, ".[")
	if i <= 0 {
		return ""
	}
	return f[:i]
}

// duration parses a limit; "" is the default (zero), "infinite" is
// hitch.Infinite where allowed.
func duration(s string, infinite bool) (time.Duration, error) {
	switch {
	case s == "":
		return 0, nil
	case infinite && (s == "infinite" || s == "inf"):
		return hitch.Infinite, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		if infinite {
			return 0, fmt.Errorf("%q is not a duration such as 30s or 5m, nor infinite", s)
		}
		return 0, fmt.Errorf("%q is not a duration such as 30s or 5m", s)
	}
	return d, nil
}

// snake turns a Go field path ("Limits.ToolConcurrency") into the file's
// key path ("limits.tool_concurrency").
func snake(goField string) string {
	var b strings.Builder
	for i, r := range goField {
		if r >= 'A' && r <= 'Z' {
			if i > 0 && goField[i-1] != '.' && goField[i-1] != '[' {
				b.WriteByte('_')
			}
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}

// policyOf turns the policy field into a Policy.
func policyOf(l locator, field string, v any) (policy.Policy, []Problem) {
	switch p := v.(type) {
	case nil:
		return nil, []Problem{l.problem(field, "is required: there is no implicit allow; write allow_all, deny_all or a list of rules")}
	case string:
		switch p {
		case "allow_all":
			return policy.AllowAll(), nil
		case "deny_all":
			return policy.DenyAll("this agent may not call tools"), nil
		}
		return nil, []Problem{l.problem(field, "%q: want allow_all, deny_all or a list of rules", p)}
	case []any:
		b, _ := yaml.Marshal(p)
		var rules policy.Rules
		if err := yaml.UnmarshalWithOptions(b, &rules, yaml.Strict()); err != nil {
			return nil, []Problem{l.problem(field, "%s", strings.TrimSpace(yaml.FormatError(err, false, false)))}
		}
		compiled, err := rules.Compile()
		if err != nil {
			var probs []Problem
			var res policy.RuleErrors
			if !errors.As(err, &res) {
				return nil, []Problem{l.problem(field, "%v", err)}
			}
			for _, e := range res {
				probs = append(probs, l.problem(fmt.Sprintf("%s[%d].%s", field, e.Rule, e.Field), "%s", e.Problem))
			}
			return nil, probs
		}
		return compiled, nil
	}
	return nil, []Problem{l.problem(field, "want allow_all, deny_all or a list of rules")}
}

// relTo resolves p against the config file's folder.
func relTo(configPath, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(filepath.Dir(configPath), p)
}
