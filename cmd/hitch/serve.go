package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"

	"github.com/spf13/cobra"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/server"
)

func newServe(g *globals) *cobra.Command {
	var addr string
	var n nodeFlags
	var streams int
	var credentialEnv string
	var metricsOn bool
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the HTTP API (/v1) and drive runs, as a worker does",
		Long: "Serve the config's agents over HTTP: runs, journals and their event streams, approvals, workspaces\n" +
			"(docs/api.md; the OpenAPI document is at /v1/openapi.json), and the MCP tools of hitch mcp at /mcp. The server is also a node: it drives the runs\n" +
			"it starts and any due run, as hitch worker does. Requests need a bearer token from the config's server.tokens;\n" +
			"without tokens only a loopback address is served, to one local admin. The first SIGINT or SIGTERM stops\n" +
			"accepting, ends the event streams (clients resume elsewhere from their last event id), and drains the\n" +
			"runtime as hitch worker does.",
		Args: args(0, "no arguments"),
		PreRunE: func(*cobra.Command, []string) error {
			if streams < 1 {
				return usageError{fmt.Errorf("--streams-per-token %d: want 1 or more", streams)}
			}
			if err := checkAddr(addr); err != nil {
				return err
			}
			return n.check()
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			var srv atomic.Pointer[server.Server]
			onEvent := func(ev hitch.Event) {
				if ev.Err != nil {
					fmt.Fprintf(g.stderr, "serve: %v\n", ev.Err)
				}
				if s := srv.Load(); s != nil {
					s.Notify(ev)
				}
			}
			// A server refuses the bash tool without isolation unless
			// its config says sandbox.require_isolation: false.
			g.requireIsolation = true
			g.metrics = nodeMetrics{gauges: true, prometheus: metricsOn, cache: n.metricsCache}
			// Read before the config loads, so the variable leaves the
			// environment with the config's.
			cred, err := envCredential(credentialEnv)
			if err != nil {
				return err
			}
			e, err := openRuntimeConfig(ctx, g, runtimeOpts{create: true, onEvent: onEvent})
			if err != nil {
				return err
			}
			defer e.close()
			resolved, err := e.cfg.ServerTokens(vault.getenv)
			if err != nil {
				return usageError{err}
			}
			var tokens []server.Token
			for _, t := range resolved {
				tokens = append(tokens, server.Token{Name: t.Name, Tenant: t.Tenant, Role: t.Role, Hash: t.Hash})
			}
			if len(tokens) == 0 {
				if !isLoopback(addr) {
					return usageError{fmt.Errorf("--addr %s is not a loopback address and the config has no server.tokens: "+
						"add tokens (docs/api.md), or serve 127.0.0.1", addr)}
				}
				fmt.Fprintln(g.stderr, "serve: warning: no server.tokens in the config: every local request is an admin of tenant default")
			}
			s, err := server.New(server.Config{Runtime: e.rt, Store: e.store, Agents: e.cfg.Agents, Tokens: tokens,
				Limits: server.Limits{StreamsPerToken: streams}, Version: versionString(), Log: g.stderr, MCPCredential: cred,
				Metrics: e.obs.prom, Doctor: doctorConfig(g, e.cfg)})
			if err != nil {
				return err
			}
			srv.Store(s)
			l, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("serve: %w", err)
			}
			fmt.Fprintf(g.stderr, "serve: listening on http://%s\n", l.Addr())
			serveCtx, stopServe := context.WithCancel(context.WithoutCancel(ctx))
			defer stopServe()
			served := make(chan error, 1)
			go func() { served <- s.Serve(serveCtx, l, n.drain) }()
			err = runNode(ctx, g, e, "serve", n, func() {
				s.Stop()
				stopServe()
			})
			stopServe()
			if serr := <-served; err == nil && serr != nil && !errors.Is(serr, context.Canceled) {
				err = serr
			}
			return err
		},
	}
	cmd.Flags().StringVar(&addr, "addr", server.DefaultAddr, "address to listen on (a non-loopback one needs server.tokens)")
	n.flags(cmd, g, "running work and requests")
	cmd.Flags().StringVar(&credentialEnv, "mcp-credential-env", "HITCH_CREDENTIAL", "variable holding the approver credential \"name:secret\" the /mcp tools answer with")
	cmd.Flags().IntVar(&streams, "streams-per-token", server.DefaultStreamsPerToken, "event streams one token may hold open")
	cmd.Flags().BoolVar(&metricsOn, "metrics", true, "serve /metrics (false: no metrics are drawn unless OTEL_* asks for an export)")
	return cmd
}

// isLoopback reports whether addr listens on a loopback address only.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
