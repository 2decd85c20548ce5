package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/hitch-dev/hitch/config"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/route"
)

func newModels(g *globals) *cobra.Command {
	var timeout time.Duration
	check := &cobra.Command{
		Use:   "check",
		Short: "Make one tiny live call per configured model whose API key is present",
		Long: "For each model in the config, make one small live call (\"reply with OK\") and report whether it\n" +
			"answered. A hosted model whose key variable is not set is skipped, and the report says which variable\n" +
			"to set. Scripted models are checked offline. Then each route lists its models in order, each with its\n" +
			"check and the breaker it would have after it: a model that failed with a class that moves on is\n" +
			"passed over for the route's cool-down (a running node's breakers are in its /metrics). Exits 1 when\n" +
			"any call failed.",
		Args: args(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(g, config.Options{})
			if err != nil {
				return err
			}
			defer cfg.Close()
			names := slices.Sorted(maps.Keys(cfg.Models))
			failed := 0
			checked := map[string]error{} // by the model's Name; absent when skipped
			for _, name := range names {
				m, settings := cfg.Models[name], cfg.File.Models[name]
				res := struct {
					Model  string `json:"model"`
					Name   string `json:"name"`
					Result string `json:"result"` // ok, skipped, failed
					Detail string `json:"detail,omitempty"`
					MS     int64  `json:"ms,omitempty"`
				}{Model: name, Name: m.Name()}
				if env := settings.KeyEnv(); env != "" && vault.getenv(env) == "" {
					res.Result, res.Detail = "skipped", fmt.Sprintf("%s is not set; export it to check this model", env)
				} else {
					ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
					begin := time.Now()
					err := model.Check(ctx, m)
					cancel()
					res.MS = time.Since(begin).Milliseconds()
					checked[m.Name()] = err
					if err != nil {
						failed++
						res.Result, res.Detail = "failed", err.Error()
					} else {
						res.Result = "ok"
					}
				}
				if g.json {
					b, _ := json.Marshal(res)
					fmt.Fprintf(g.stdout, "%s\n", b)
					continue
				}
				line := fmt.Sprintf("%-12s %-32s %s", name, res.Name, res.Result)
				if res.Result == "ok" {
					line += fmt.Sprintf(" (%d ms)", res.MS)
				}
				if res.Detail != "" {
					line += ": " + res.Detail
				}
				fmt.Fprintln(g.stdout, line)
			}
			for _, name := range slices.Sorted(maps.Keys(cfg.Routes)) {
				printRoute(g, name, cfg.Routes[name], checked)
			}
			if failed > 0 {
				return silentExit(exitError)
			}
			return nil
		},
	}
	check.Flags().DurationVar(&timeout, "timeout", 60*time.Second, "how long each check call may take")
	return group("models", "Inspect the models the config declares", check)
}

// printRoute reports a route's models in order with the breaker each
// would have once this check's results went through it: a model that
// failed with a class that moves on is passed over for the cool-down. A
// node's own breakers are in its /metrics.
func printRoute(g *globals, name string, r *route.Route, checked map[string]error) {
	for _, m := range r.Members() {
		if err, ok := checked[m.Model.Name()]; ok {
			r.Report(m.Model.Name(), err)
		}
	}
	type member struct {
		Model   string     `json:"model"`
		Result  string     `json:"result"` // ok, failed, skipped
		Breaker string     `json:"breaker"`
		Until   *time.Time `json:"until,omitempty"`
		Kind    model.Kind `json:"kind,omitempty"`
	}
	out := struct {
		Route  string   `json:"route"`
		Name   string   `json:"name"`
		Models []member `json:"models"`
	}{Route: name, Name: r.Name(), Models: []member{}}
	for _, b := range r.Breakers() {
		mm := member{Model: b.Model, Result: "skipped", Breaker: "closed"}
		if err, ok := checked[b.Model]; ok {
			mm.Result = "ok"
			if err != nil {
				mm.Result = "failed"
			}
		}
		if b.Open {
			mm.Breaker, mm.Until, mm.Kind = "open", b.Until, b.Kind
		}
		out.Models = append(out.Models, mm)
	}
	if g.json {
		b, _ := json.Marshal(out)
		fmt.Fprintf(g.stdout, "%s\n", b)
		return
	}
	fmt.Fprintf(g.stdout, "route %s (%s), asked in this order:\n", name, r.Name())
	for i, mm := range out.Models {
		line := fmt.Sprintf("  %d. %-32s %-7s breaker %s", i+1, mm.Model, mm.Result, mm.Breaker)
		if mm.Until != nil {
			line += fmt.Sprintf(" after %s: passed over until %s", mm.Kind, mm.Until.UTC().Format(time.RFC3339))
		}
		fmt.Fprintln(g.stdout, line)
	}
}
