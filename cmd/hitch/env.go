package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/config"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/postgres"
	"github.com/hitch-dev/hitch/store/sqlite"
)

// env is what a command works with: the store, and when it drives runs, the
// config's agents and a runtime.
type env struct {
	g     *globals
	store store.Store
	path  string // the store's file
	cfg   *config.Config
	rt    *hitch.Runtime
	out   *printer
	obs   *observer
}

// storePath is the store a command uses: --db, else $HITCH_DATABASE_URL,
// else the config's store (a file relative to the config file, or a
// PostgreSQL URL), else hitch.db beside the config. Without --db the
// config must exist and be sound: a broken one is an error, never a silent
// fallback to another file.
func storePath(g *globals) (string, error) {
	if g.db != "" {
		return g.db, nil
	}
	if u := os.Getenv(databaseURLEnv); u != "" {
		return u, nil
	}
	f, _, err := config.Parse(g.config)
	if err != nil {
		return "", configError(g, err)
	}
	return storeIn(g.config, f.Store), nil
}

// databaseURLEnv names the variable that points every command at a store,
// typically a PostgreSQL URL shared by several nodes.
const databaseURLEnv = "HITCH_DATABASE_URL"

// storeIn resolves a config's store setting against the config file.
func storeIn(configPath, store string) string {
	if isPostgres(store) {
		return store
	}
	return filepath.Join(filepath.Dir(configPath), or(store, "hitch.db"))
}

func isPostgres(loc string) bool {
	return strings.HasPrefix(loc, "postgres://") || strings.HasPrefix(loc, "postgresql://")
}

// postgresOptions takes hitch's own settings out of a PostgreSQL URL's
// query (schema, poll_only); the rest, pool_max_conns included, is pgx's.
func postgresOptions(loc string, create bool) (string, []postgres.Option, error) {
	u, err := url.Parse(loc)
	if err != nil {
		return "", nil, usageError{fmt.Errorf("store URL: %w", err)}
	}
	q := u.Query()
	opts := []postgres.Option{postgres.WithAutoMigrate(create)}
	if s := q.Get("schema"); s != "" {
		opts = append(opts, postgres.WithSchema(s))
	}
	if p := q.Get("poll_only"); p != "" {
		on, err := strconv.ParseBool(p)
		if err != nil {
			return "", nil, usageError{fmt.Errorf("store URL: poll_only=%s: want true or false", p)}
		}
		opts = append(opts, postgres.WithPollOnly(on))
	}
	q.Del("schema")
	q.Del("poll_only")
	u.RawQuery = q.Encode()
	return u.String(), opts, nil
}

// configError makes a config that cannot be loaded a usage error (exit
// 2): a missing file says how to make one; anything else the file names
// (an MCP server that cannot start, a file that cannot be read) is said as
// it is.
func configError(g *globals, err error) error {
	if _, serr := os.Stat(g.config); errors.Is(serr, os.ErrNotExist) {
		return usageError{fmt.Errorf("no configuration file %s: pass --config FILE (and --db FILE to read runs), "+
			"or write an example here with `hitch demo --dir .`", g.config)}
	}
	if config.IsProblem(err) {
		return err
	}
	return usageError{err}
}

// openStore opens the store alone, for commands that only read. It never
// creates a store: a missing file is an error.
func openStore(ctx context.Context, g *globals) (*env, error) {
	path, err := storePath(g)
	if err != nil {
		return nil, err
	}
	if err := mustExist(path); err != nil {
		return nil, err
	}
	return openStoreAt(ctx, g, path, false, true)
}

// mustExist refuses a store file that is not there, for the commands that
// act on runs already started.
func mustExist(path string) error {
	if isPostgres(path) {
		return nil
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("open store %s: no such file: no run has been started with it (see --db, or the config's store)", path)
	}
	return nil
}

// openStoreAt opens a SQLite file or a PostgreSQL database. Only a
// command that may create the store migrates a PostgreSQL schema; the
// others refuse one that is behind (see hitch migrate).
//
// readOnly opens a SQLite file for reading only: nothing is created or
// written, so read commands work on a file or folder they may not write.
func openStoreAt(ctx context.Context, g *globals, path string, create, readOnly bool) (*env, error) {
	var st store.Store
	if isPostgres(path) {
		conn, opts, err := postgresOptions(path, create)
		if err != nil {
			return nil, err
		}
		if st, err = postgres.Open(ctx, conn, opts...); err != nil {
			return nil, err
		}
	} else {
		var err error
		var opts []sqlite.Option
		if readOnly {
			opts = append(opts, sqlite.ReadOnly())
		}
		if st, err = sqlite.Open(ctx, path, opts...); err != nil {
			return nil, err
		}
	}
	return &env{g: g, store: st, path: path, out: newPrinter(g.stdout, g.json)}, nil
}

// runtimeOpts say how openRuntimeConfig opens a runtime.
type runtimeOpts struct {
	// create lets a command that starts or drives runs create the store.
	create bool
	// readOnly opens a SQLite store for reading only.
	readOnly bool
	// storeOptional: a store that does not exist is no error; the env
	// then holds the config alone, without a store or a runtime.
	storeOptional bool
	// onEvent observes the runtime's events instead of the progress
	// printer (nil: the printer).
	onEvent func(hitch.Event)
	// set changes the runtime's config before it opens.
	set func(*hitch.Config)
}

// openRuntime opens the store, loads the config and builds a runtime that
// prints progress. Only a command that starts or drives runs (create)
// may create the store.
func openRuntime(ctx context.Context, g *globals, create bool) (*env, error) {
	return openRuntimeConfig(ctx, g, runtimeOpts{create: create})
}

// openRuntimeConfig is openRuntime as o says.
func openRuntimeConfig(ctx context.Context, g *globals, o runtimeOpts) (*env, error) {
	cfg, err := loadConfig(g, config.Options{RequireIsolation: g.requireIsolation, DeferIsolation: g.deferIsolation})
	if err != nil {
		return nil, err
	}
	path := g.db
	if path == "" {
		path = os.Getenv(databaseURLEnv)
	}
	if path == "" {
		path = storeIn(cfg.Path, cfg.File.Store)
	}
	if !o.create {
		if err := mustExist(path); err != nil {
			if o.storeOptional {
				return &env{g: g, cfg: cfg, out: newPrinter(g.stdout, g.json)}, nil
			}
			_ = cfg.Close()
			return nil, err
		}
	}
	e, err := openStoreAt(ctx, g, path, o.create, o.readOnly)
	if err != nil {
		_ = cfg.Close()
		return nil, err
	}
	e.cfg = cfg
	onEvent := o.onEvent
	if onEvent == nil {
		onEvent = e.out.event
	}
	if e.obs, err = newObserver(ctx, g, e.store, cfg); err != nil {
		e.close()
		return nil, err
	}
	onEvent = e.obs.wrap(onEvent)
	rcfg := hitch.Config{Store: e.store, Agents: cfg.Agents, OnEvent: onEvent, LeaseTTL: g.leaseTTL, Prices: cfg.Prices(),
		Secrets: cfg.Secrets, Logger: e.obs.log}
	if rcfg.MaxRunners, err = maxRunners(g, cfg); err != nil {
		e.close()
		return nil, err
	}
	if e.obs.met != nil {
		rcfg.OnStoreTiming = e.obs.met.StoreTiming
	}
	if o.set != nil {
		o.set(&rcfg)
	}
	e.rt, err = hitch.Open(rcfg)
	if err != nil {
		e.close()
		return nil, err
	}
	return e, nil
}

func (e *env) close() {
	if e.rt != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = e.rt.Close(ctx)
		cancel()
	}
	if e.obs != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		e.obs.close(ctx)
		cancel()
	}
	if e.cfg != nil {
		_ = e.cfg.Close()
	}
	if e.store != nil { // hitch doctor's, when the store did not open
		_ = e.store.Close()
	}
}

// exitForAll is the exit code of a command that drove several runs: the
// most pressing of theirs — a parked run (it needs a person) before one
// that did not complete, before one that completed without an answer.
func exitForAll(runs []hitch.Run) error {
	worst := 0
	rank := map[int]int{exitOK: 0, exitNoAnswer: 1, exitNotDone: 2, exitWaiting: 3}
	for _, r := range runs {
		code := exitOK
		if se, ok := exitFor(r).(silentExit); ok {
			code = int(se)
		}
		if rank[code] > rank[worst] {
			worst = code
		}
	}
	if worst == exitOK {
		return nil
	}
	return silentExit(worst)
}

func exitFor(run hitch.Run) error {
	switch {
	case run.Status == hitchtype.StatusCompleted && run.Outcome != nil && run.Outcome.Answer == "":
		return silentExit(exitNoAnswer)
	case run.Status == hitchtype.StatusCompleted:
		return nil
	case run.Status == hitchtype.StatusWaiting:
		return silentExit(exitWaiting)
	case run.Status.Terminal():
		return silentExit(exitNotDone)
	}
	return nil
}

// withRuntime wraps a command's body with the runtime it needs, opened
// from the config and closed when the body returns. The store must exist.
func withRuntime(g *globals, fn func(ctx context.Context, e *env, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, a []string) error {
		ctx := cmd.Context()
		e, err := openRuntime(ctx, g, false)
		if err != nil {
			return err
		}
		defer e.close()
		return fn(ctx, e, a)
	}
}

// loadConfig loads the config file, then makes its secrets safe: every
// output of the command is redacted with them, the variables they came
// from leave the process environment before any tool runs, and an agent
// whose commands run without isolation is reported on standard error.
func loadConfig(g *globals, opts config.Options) (*config.Config, error) {
	opts.Getenv = vault.getenv
	cfg, err := config.Load(g.config, opts)
	if err != nil {
		return nil, configError(g, err)
	}
	g.red.set(cfg.Secrets)
	if err := vault.drop(cfg.SecretVars); err != nil {
		fmt.Fprintf(g.stderr, "hitch: WARNING: secret variables are unset, but %v: a command run without isolation may read them from /proc\n", err)
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintf(g.stderr, "hitch: WARNING: %s\n", w)
	}
	return cfg, nil
}
