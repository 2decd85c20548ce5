package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/hitch-dev/hitch/config"
	"github.com/hitch-dev/hitch/model"
)

func newModels(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "models", Short: "Inspect the models the config declares"}
	var timeout time.Duration
	check := &cobra.Command{
		Use:   "check",
		Short: "Make one tiny live call per configured model whose API key is present",
		Long: "For each model in the config, make one small live call (\"reply with OK\") and report whether it\n" +
			"answered. A hosted model whose key variable is not set is skipped, and the report says which variable\n" +
			"to set. Scripted models are checked offline. Exits 1 when any call failed.",
		Args: args(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig(g, config.Options{})
			if err != nil {
				return err
			}
			defer cfg.Close()
			names := make([]string, 0, len(cfg.Models))
			for n := range cfg.Models {
				names = append(names, n)
			}
			sort.Strings(names)
			failed := 0
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
			if failed > 0 {
				return silentExit(exitError)
			}
			return nil
		},
	}
	check.Flags().DurationVar(&timeout, "timeout", 60*time.Second, "how long each check call may take")
	cmd.AddCommand(check)
	return cmd
}
