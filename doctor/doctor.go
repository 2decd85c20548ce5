package doctor

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/secret"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/tool/mcp"
)

// Verdict is what a check found: OK, Warning or Failure.
type Verdict string

// Verdicts, from best to worst.
const (
	// OK: nothing to do.
	OK Verdict = "ok"
	// Warning: hitch works, but a promise may not hold here (a crash may
	// lose a commit, a command may read more than it should).
	Warning Verdict = "warning"
	// Failure: hitch cannot work as configured.
	Failure Verdict = "failure"
)

func (v Verdict) rank() int {
	switch v {
	case Warning:
		return 1
	case Failure:
		return 2
	}
	return 0
}

// worse returns the worse of two verdicts.
func worse(a, b Verdict) Verdict {
	if b.rank() > a.rank() {
		return b
	}
	return a
}

// Check is one finding.
type Check struct {
	// Name names what was checked: "store", "schema", "durability",
	// "commits", "clock", "nodes", "disk", "sandbox", "secrets",
	// "mcp NAME", "model NAME".
	Name    string  `json:"name"`
	Verdict Verdict `json:"verdict"`
	// Detail says what was found.
	Detail string `json:"detail"`
	// Fix says what to do; empty when the verdict is OK.
	Fix string `json:"fix,omitempty"`
}

// Report is the checks of one Run, in a fixed order, and the worst of
// their verdicts.
type Report struct {
	Verdict Verdict `json:"verdict"`
	Checks  []Check `json:"checks"`
}

// ExitCode is the exit code of hitch doctor for the report: 0 when every
// check is OK, 1 for a warning, 2 for a failure.
func (r Report) ExitCode() int { return r.Verdict.rank() }

// Defaults of Config.
const (
	// DefaultCommits is how many commits the latency probe times.
	DefaultCommits = 100
	// DefaultCheckTimeout bounds one check (an MCP server's by its own
	// connect timeout when that is longer).
	DefaultCheckTimeout = 10 * time.Second
)

// Config is what Run checks.
type Config struct {
	// ConfigFile names the config file the checks come from; ConfigErr
	// says why it could not be loaded, when it could not (a "config"
	// check reports either, and is left out when both are empty).
	ConfigFile string
	ConfigErr  error
	// Store is the store, opened; nil when it could not be opened, and
	// StoreErr says why. The store checks read it through
	// store.Diagnoser when it implements that.
	Store    store.Store
	StoreErr error
	// Sandbox is how commands run; nil when the config runs none.
	Sandbox *Sandbox
	// Secrets are the secrets the config declares.
	Secrets []Secret
	// MCP are the MCP servers to reach; each is connected to, its tools
	// listed, and closed.
	MCP []mcp.Server
	// Models are the models the config declares.
	Models []Model
	// Network lets the model checks call each model once.
	Network bool
	// Commits is how many commits the latency probe times, 1 to
	// store.MaxDiagnoseCommits. Default DefaultCommits.
	Commits int
	// Timeout bounds each check. Default DefaultCheckTimeout.
	Timeout time.Duration
	// Redactor redacts every text of the report.
	Redactor *secret.Redactor
	// Now is this node's clock, for the clock check. Default time.Now.
	Now func() time.Time
}

// Sandbox is how the config runs commands.
type Sandbox struct {
	// RequireIsolation refuses commands when bwrap is not usable.
	RequireIsolation bool
	// ReadPaths are the host paths commands may read under bwrap besides
	// the system directories and their workspace.
	ReadPaths []string
	// BwrapDirs are the directories to look for bwrap in, as PATH spells
	// them. Default: PATH.
	BwrapDirs string
}

// Secret is one declared secret; its value never reaches the report.
type Secret struct {
	// Name names the secret, such as "github_token" or an approver
	// "agent/name".
	Name string
	// Missing says why its value cannot be resolved, naming the variable
	// or file; empty when it resolves.
	Missing string
}

// Model is one declared model.
type Model struct {
	// Name is the config's name of it.
	Name string
	// KeyVar names the variable that holds its API key; empty when it
	// needs none (scripted, a local server).
	KeyVar string
	// KeySet says the variable is set.
	KeySet bool
	// Model is called once with Config.Network.
	Model model.Model
}

func (c Config) withDefaults() Config {
	c.Commits = cmp.Or(c.Commits, DefaultCommits)
	c.Timeout = cmp.Or(c.Timeout, DefaultCheckTimeout)
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

func (c Config) validate() error {
	switch {
	case c.Store == nil && c.StoreErr == nil:
		return fmt.Errorf("doctor: Config.Store is nil and StoreErr does not say why")
	case store.CheckDiagnoseCommits(c.Commits) != nil:
		return fmt.Errorf("doctor: Config.Commits: %w", store.CheckDiagnoseCommits(c.Commits))
	case c.Timeout < 0:
		return fmt.Errorf("doctor: Config.Timeout: %v is negative", c.Timeout)
	}
	return nil
}

// Run runs every check and returns the report. It returns an error only
// for a Config it cannot use; what the checks find is in the report.
func Run(ctx context.Context, cfg Config) (Report, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return Report{}, err
	}
	var r Report
	add := func(cs ...Check) { r.Checks = append(r.Checks, cs...) }
	if cfg.ConfigErr != nil {
		add(Check{Name: "config", Verdict: Failure, Detail: cfg.ConfigErr.Error(),
			Fix: "fix the config file where each problem says; the checks that need it are left out"})
	} else if cfg.ConfigFile != "" {
		add(Check{Name: "config", Verdict: OK, Detail: cfg.ConfigFile + " loads"})
	}
	add(checkStore(ctx, cfg)...)
	if cfg.Sandbox != nil {
		add(checkSandbox(*cfg.Sandbox))
	}
	add(checkSecrets(cfg.Secrets))
	// The servers are reached at once, so the checks take as long as the
	// slowest, not the sum of their connect timeouts.
	mcps := make([]Check, len(cfg.MCP))
	var wg sync.WaitGroup
	for i, s := range cfg.MCP {
		wg.Go(func() { mcps[i] = checkMCP(ctx, cfg, s) })
	}
	wg.Wait()
	add(mcps...)
	for _, m := range cfg.Models {
		add(checkModel(ctx, cfg, m))
	}
	r.Verdict = OK
	for i := range r.Checks {
		c := &r.Checks[i]
		c.Detail, c.Fix = cfg.Redactor.String(c.Detail), cfg.Redactor.String(c.Fix)
		r.Verdict = worse(r.Verdict, c.Verdict)
	}
	return r, nil
}

// within runs f bounded by d.
func within[T any](ctx context.Context, d time.Duration, f func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return f(ctx)
}
