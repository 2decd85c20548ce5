package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/hitch-dev/hitch/config"
	"github.com/hitch-dev/hitch/doctor"
)

func newDoctor(g *globals) *cobra.Command {
	var network bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check this deployment: store, durability, commits, clock, nodes, sandbox, secrets, MCP servers, models, disk",
		Long: "Check the deployment the config describes, where this command runs: the store (reachable, its schema against\n" +
			"this build's, its durability settings and file system, the time of 100 commits to a scratch table or file that\n" +
			"is removed afterwards, its clock against this node's, the nodes alive and who leads), the sandbox (bwrap able to\n" +
			"start, and what a command can read), the secrets (never printed), each MCP server (reached, its tools counted),\n" +
			"each model's key (and with --network one call to each), and the free disk under the store. One line a check,\n" +
			"with what to do when it is not ok. Exits 0 when every check is ok, 1 for a warning, 2 for a failure.\n" +
			"With --server, the server runs the checks where it runs (an admin token of tenant default).\n" +
			"docs/operations.md says what each check means.",
		Args: args(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			var b backend
			if g.server != "" {
				r, err := openRemote(g)
				if err != nil {
					return err
				}
				b = r
			} else {
				b = openDoctor(ctx, g)
			}
			defer b.Close()
			rep, err := b.Doctor(ctx, network)
			if err != nil {
				return err
			}
			printReport(g, rep)
			if code := rep.ExitCode(); code != 0 {
				return silentExit(code)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&network, "network", false, "also call each model once, to prove its key and endpoint work")
	return cmd
}

// openDoctor opens what the local checks read, keeping what cannot be
// opened as a finding rather than an error: a config that does not load
// and a store that does not open are what the doctor is for. The store is
// opened for reading only and never created or migrated.
func openDoctor(ctx context.Context, g *globals) *localBackend {
	e := &env{g: g, out: newPrinter(g.stdout, g.json)}
	b := &localBackend{e: e}
	d := &doctor.Config{}
	b.doctor = d
	var parsed *config.File
	if g.db == "" || g.configSet {
		d.ConfigFile = g.config
		parsed, _, _ = config.Parse(g.config)
		cfg, err := loadConfig(g, config.Options{RequireIsolation: g.requireIsolation, DeferMCP: true})
		if err != nil {
			d.ConfigErr = err
		} else {
			e.cfg = cfg
			*d = doctorConfig(g, cfg)
			d.ConfigFile = g.config
		}
	}
	if parsed != nil && d.Sandbox == nil {
		d.Sandbox = doctorSandbox(g, g.config, parsed)
	}
	path := g.db
	if path == "" {
		path = os.Getenv(databaseURLEnv)
	}
	if path == "" && parsed != nil {
		path = storeIn(g.config, parsed.Store)
	}
	if path == "" {
		d.StoreErr = fmt.Errorf("no store: pass --db, set %s, or name one in the config's store", databaseURLEnv)
		return b
	}
	if err := mustExist(path); err != nil {
		d.StoreErr = err
		return b
	}
	opened, err := openStoreAt(ctx, g, path, false, true)
	if err != nil {
		d.StoreErr = err
		return b
	}
	e.store, e.path = opened.store, path
	d.Store = e.store
	return b
}

// doctorConfig is what the checks need of a loaded config: hitch doctor's
// and hitch serve's GET /v1/doctor. The store is the caller's to add.
func doctorConfig(g *globals, cfg *config.Config) doctor.Config {
	d := doctor.Config{ConfigFile: cfg.Path, MCP: cfg.MCPServers(), Redactor: cfg.Secrets, Sandbox: doctorSandbox(g, cfg.Path, cfg.File)}
	for _, name := range slices.Sorted(maps.Keys(cfg.File.Secrets)) {
		d.Secrets = append(d.Secrets, doctor.Secret{Name: name})
	}
	for _, who := range slices.Sorted(maps.Keys(cfg.MissingSecrets)) {
		d.Secrets = append(d.Secrets, doctor.Secret{Name: who, Missing: cfg.MissingSecrets[who] + " is not set"})
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.File.Models)) {
		env := cfg.File.Models[name].KeyEnv()
		d.Models = append(d.Models, doctor.Model{Name: name, KeyVar: env, KeySet: env != "" && vault.getenv(env) != "", Model: cfg.Models[name]})
	}
	return d
}

// doctorSandbox is how a config file runs commands.
func doctorSandbox(g *globals, path string, f *config.File) *doctor.Sandbox {
	s := &doctor.Sandbox{RequireIsolation: g.requireIsolation}
	if f.Sandbox.RequireIsolation != nil {
		s.RequireIsolation = *f.Sandbox.RequireIsolation
	}
	for _, p := range f.Sandbox.Read {
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(path), p)
		}
		s.ReadPaths = append(s.ReadPaths, p)
	}
	return s
}

func (b *localBackend) Doctor(ctx context.Context, network bool) (doctor.Report, error) {
	if b.doctor == nil {
		return doctor.Report{}, usageError{fmt.Errorf("doctor: this backend was not opened for it")}
	}
	cfg := *b.doctor
	cfg.Network = network
	return doctor.Run(ctx, cfg)
}

func (r *remoteBackend) Doctor(ctx context.Context, network bool) (doctor.Report, error) {
	rep, err := r.c.Doctor(ctx, network)
	if err != nil {
		return doctor.Report{}, err
	}
	out := doctor.Report{Verdict: doctor.Verdict(rep.Verdict)}
	for _, c := range rep.Checks {
		out.Checks = append(out.Checks, doctor.Check{Name: c.Name, Verdict: doctor.Verdict(c.Verdict), Detail: c.Detail, Fix: c.Fix})
	}
	return out, nil
}

// printReport prints one line a check, and its fix indented below; with
// --json, the report as one object.
func printReport(g *globals, r doctor.Report) {
	if g.json {
		b, _ := json.Marshal(r)
		fmt.Fprintf(g.stdout, "%s\n", b)
		return
	}
	w := 0
	for _, c := range r.Checks {
		w = max(w, len(c.Name))
	}
	for _, c := range r.Checks {
		fmt.Fprintf(g.stdout, "%-7s  %-*s  %s\n", c.Verdict, w, c.Name, oneLine(c.Detail))
		if c.Fix != "" {
			fmt.Fprintf(g.stdout, "%-7s  %-*s  fix: %s\n", "", w, "", oneLine(c.Fix))
		}
	}
	fmt.Fprintf(g.stdout, "%s\n", verdictLine(r))
}

func verdictLine(r doctor.Report) string {
	n := map[doctor.Verdict]int{}
	for _, c := range r.Checks {
		n[c.Verdict]++
	}
	return fmt.Sprintf("%s: %d ok, %d warnings, %d failures", r.Verdict, n[doctor.OK], n[doctor.Warning], n[doctor.Failure])
}

// oneLine keeps a finding on its line: a config's problems come one a line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", "; ")), " ")
}
