package main

import (
	"embed"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/hitch-dev/hitch"

	"github.com/hitch-dev/hitch/approval"
)

//go:embed demo/hitch.yaml demo/script.yaml demo/chat.yaml
var demoFiles embed.FS

const demoNotes = "# Notes\n\nWe recieve orders by mail.\nShipping takes two days.\n"

func newDemo(g *globals) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run the offline demo end to end (no keys, no network)",
		Long: "Set up a scratch workspace with a config, a scripted model and a file with a typo, then run an agent on\n" +
			"it: a few tool calls (glob, read, edit, bash), a policy denial the model recovers from, a shell command that\n" +
			"waits for a person's approval (the demo answers it as the CLI would), and a typed final answer that is\n" +
			"refused once and corrected, all journaled in a SQLite file whose location is printed at the end.",
		Args: args(0, "no arguments"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				d, err := os.MkdirTemp("", "hitch-demo-")
				if err != nil {
					return err
				}
				dir = d
			}
			if err := os.MkdirAll(filepath.Join(dir, "workspace"), 0o755); err != nil {
				return fmt.Errorf("create demo workspace: %w", err)
			}
			for _, name := range []string{"hitch.yaml", "script.yaml", "chat.yaml"} {
				b, _ := demoFiles.ReadFile("demo/" + name)
				if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
					return fmt.Errorf("write demo file: %w", err)
				}
			}
			if err := os.WriteFile(filepath.Join(dir, "workspace", "notes.md"), []byte(demoNotes), 0o644); err != nil {
				return fmt.Errorf("write demo file: %w", err)
			}
			g.config = filepath.Join(dir, "hitch.yaml")
			ctx := cmd.Context()
			l, err := openLocal(ctx, g, needNew)
			if err != nil {
				return err
			}
			defer l.Close()
			v := &verb{g: g, b: l, out: l.e.out}
			if !g.json {
				fmt.Fprintf(g.stdout, "hitch demo: agent %q fixes a typo in %s\n\n", "fixer", filepath.Join(dir, "workspace", "notes.md"))
			}
			id := hitch.NewRunID()
			v.out.following(id)
			res, err := l.Start(ctx, startParams{Agent: "fixer", Input: "Fix the spelling mistakes in the notes in this workspace.", ID: id})
			if err != nil {
				return err
			}
			err = v.settle(ctx, res.Run.ID, 0)
			if code, ok := err.(silentExit); ok && int(code) == exitWaiting {
				// The bash call waits for a person. Answer it the way the
				// CLI does, and say how to do it by hand.
				pending, _, perr := l.Approvals(ctx, res.Run.ID, "", 0)
				if perr != nil || len(pending) == 0 {
					return err
				}
				p := pending[0]
				if !g.json {
					fmt.Fprintf(g.stdout, "\nthe demo answers the approval request as its approver would, with\n  $ HITCH_CREDENTIAL=demo:demo-secret hitch approvals approve %s %s -c %s\n\n",
						p.RunID, p.Call, g.config)
				}
				err = l.Answer(ctx, p.RunID, p.Call, approval.Credential{Name: "demo", Secret: "demo-secret"}, true, "")
				if err == nil {
					err = v.settle(ctx, p.RunID, 0)
				}
			}
			if !g.json {
				fmt.Fprintf(g.stdout, "\njournal: %s (run %s)\n", l.e.path, res.Run.ID)
				fmt.Fprintf(g.stdout, "look again with:\n  go run ./cmd/hitch runs show %s --db %s\n  go run ./cmd/hitch runs events %s --db %s\n",
					res.Run.ID, l.e.path, res.Run.ID, l.e.path)
			}
			return err
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "folder for the demo's files (default: a new temporary folder)")
	return cmd
}
