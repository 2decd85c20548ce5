package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/config"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/sqlite"
)

// env is what a command works with: the store, and when it drives runs, the
// config's agents and a runtime.
type env struct {
	g     *globals
	store store.Store
	cfg   *config.Config
	rt    *hitch.Runtime
	out   *printer
}

// openStore opens the store alone, for commands that only read or record.
func openStore(ctx context.Context, g *globals) (*env, error) {
	path := g.db
	if path == "" {
		if f, _, err := config.Parse(g.config); err == nil && f.Store != "" {
			path = filepath.Join(filepath.Dir(g.config), f.Store)
		} else {
			path = "hitch.db"
		}
	}
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		return nil, err
	}
	return &env{g: g, store: st, out: newPrinter(g.stdout, g.json)}, nil
}

// openRuntime opens the store, loads the config and builds a runtime that
// prints progress.
func openRuntime(ctx context.Context, g *globals) (*env, error) {
	cfg, err := config.Load(g.config, config.Options{})
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, usageError{fmt.Errorf("%w (pass --config)", err)}
		}
		return nil, err
	}
	if g.db == "" && cfg.File.Store != "" {
		g.db = filepath.Join(filepath.Dir(cfg.Path), cfg.File.Store)
	}
	e, err := openStore(ctx, g)
	if err != nil {
		_ = cfg.Close()
		return nil, err
	}
	e.cfg = cfg
	e.rt, err = hitch.Open(hitch.Config{Store: e.store, Agents: cfg.Agents, OnEvent: e.out.event, LeaseTTL: g.leaseTTL, Prices: cfg.Prices()})
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
	if e.cfg != nil {
		_ = e.cfg.Close()
	}
	_ = e.store.Close()
}

// settle waits for a run to end or park, prints its outcome, and turns its
// status into the exit code.
func (e *env) settle(ctx context.Context, id string) error {
	run, err := e.rt.Await(ctx, id)
	if err != nil {
		return err
	}
	e.out.outcome(run)
	return exitFor(run)
}

func exitFor(run hitch.Run) error {
	switch {
	case run.Status == hitchtype.StatusCompleted:
		return nil
	case run.Status == hitchtype.StatusWaiting:
		return silentExit(exitWaiting)
	case run.Status.Terminal():
		return silentExit(exitNotDone)
	}
	return nil
}

func notFound(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return withCode(exitNotFound, err)
	}
	return err
}

// withRuntime wraps a command's body with the runtime it needs, opened
// from the config and closed when the body returns.
func withRuntime(g *globals, fn func(ctx context.Context, e *env, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, a []string) error {
		ctx := cmd.Context()
		e, err := openRuntime(ctx, g)
		if err != nil {
			return err
		}
		defer e.close()
		return fn(ctx, e, a)
	}
}
