package main

import (
	"context"
	"io"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/server/mcpserver"
)

func newMCP(g *globals, stdin io.Reader) *cobra.Command {
	var credentialEnv string
	var maxWait time.Duration
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the config's agents to an MCP client over standard input and output",
		Long: "Serve the config's agents as MCP tools (start_run, wait_run, run_status, cancel_run, list_approvals,\n" +
			"answer_approval) on standard input and output, and drive the runs started this way, as a worker would.\n" +
			"Approval requests are answered with the credential in the variable named by --credential-env, when set.\n" +
			"Standard output carries the protocol only; progress goes nowhere, errors to standard error.",
		Args: args(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			cred, err := envCredential(credentialEnv)
			if err != nil {
				return err
			}
			out := g.raw // the protocol is JSON, written exactly
			prev := g.stdout
			g.stdout = io.Discard // the runtime's progress must not reach the protocol stream
			e, err := openRuntime(ctx, g, true)
			g.stdout = prev
			if err != nil {
				return err
			}
			defer e.close()
			// The local user owns the store: every tenant, every role.
			local := e.rt.As(hitch.Principal{Name: "local", Tenant: hitch.AllTenants, Role: hitch.RoleAdmin})
			srv, err := mcpserver.New(mcpserver.Options{Scope: local, Agents: e.cfg.Agents, Credential: cred, MaxWait: maxWait, Version: versionString()})
			if err != nil {
				return err
			}
			// Runs started here, and due runs left by other processes, are
			// driven while the client is connected.
			sctx, stop := context.WithCancel(ctx)
			swept := make(chan error, 1)
			go func() { swept <- e.rt.Sweep(sctx, time.Second) }()
			err = srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(stdin), Writer: nopWriteCloser{out}})
			stop()
			<-swept
			if ctx.Err() != nil {
				return nil // interrupted: a normal end for a server
			}
			return err
		},
	}
	cmd.Flags().StringVar(&credentialEnv, "credential-env", "HITCH_CREDENTIAL", "variable holding the approver credential \"name:secret\"")
	cmd.Flags().DurationVar(&maxWait, "max-wait", mcpserver.DefaultMaxWait, "longest single wait_run")
	return cmd
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
