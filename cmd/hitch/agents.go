package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/api"
)

func newAgents(g *globals) *cobra.Command {
	return group("agents", "List the agents, show one's definition and hooks, preview the first request a run of one would send",
		leaf{"list", "List the agents the config declares (or the server offers), by name", args(0, "no arguments"), needConfig, listAgents}.build(g),
		leaf{"show AGENT", "Show an agent's definition: model, tools, policy, limits, and its hooks in the order they run", args(1, "an agent's name"), needConfig, shows(backend.Agent, printAgent)}.build(g),
		newAgentsPreview(g))
}

// listAgents is the body of agents list.
func listAgents(ctx context.Context, v *verb, _ []string) error {
	list, err := v.b.Agents(ctx)
	if err != nil {
		return err
	}
	return printList(v, list, asIs, "AGENT\tVERSION\tMODEL\tDESCRIPTION", func(a api.Agent) string {
		return fmt.Sprintf("%s\t%d\t%s\t%s", a.Name, a.Version, a.Model, clip(a.Description, 60))
	})
}

// printAgent writes an agent's definition for people: what it runs on,
// what it may call, and its hooks in the order they run (--json: one line).
func printAgent(v *verb, d api.AgentDetail) {
	if v.g.json {
		v.printJSON(d)
		return
	}
	w := v.g.stdout
	fmt.Fprintf(w, "agent %s v%d: model %s\n", d.Name, d.Version, d.Model)
	if d.Description != "" {
		fmt.Fprintf(w, "  description:  %s\n", clip(d.Description, 200))
	}
	if d.Instructions != "" {
		fmt.Fprintf(w, "  instructions: %s\n", clip(d.Instructions, 200))
	}
	tools := make([]string, 0, len(d.Tools))
	for _, t := range d.Tools {
		tools = append(tools, t.Name)
	}
	fmt.Fprintf(w, "  tools:        %s\n", orNone(strings.Join(tools, ", ")))
	if len(d.SubAgents) > 0 {
		fmt.Fprintf(w, "  sub-agents:   %s\n", strings.Join(d.SubAgents, ", "))
	}
	policy := d.Policy.Kind
	if n := len(d.Policy.Rules); n > 0 {
		policy += fmt.Sprintf(" (%d, the first that matches decides)", n)
	}
	fmt.Fprintf(w, "  policy:       %s\n", policy)
	fmt.Fprintf(w, "  workspace:    %t\n", d.Workspace)
	switch {
	case len(d.HookList) > 0:
		fmt.Fprintln(w, "  hooks, in the order they run:")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "    #\tPOINT\tPRIORITY\tNAME\tON ERROR\tKIND\tTARGET\tMATCH\tWHEN")
		for i, h := range d.HookList {
			fmt.Fprintf(tw, "    %d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", i+1, h.Point, h.Priority, h.Name, h.OnError, h.Kind,
				clip(h.Target, 50), orDash(strings.Join(h.Match, ",")), orDash(clip(h.When, 40)))
		}
		tw.Flush()
	case d.Hooks:
		fmt.Fprintln(w, "  hooks:        written in Go (they do not list themselves)")
	default:
		fmt.Fprintln(w, "  hooks:        none")
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func newAgentsPreview(g *globals) *cobra.Command {
	var o hitch.PreviewOptions
	cmd := &cobra.Command{
		Use:   "preview AGENT [INPUT]",
		Short: "Show the first model request a run of the agent would send, part by part, with its token estimate; no model is called",
		Long: "Build the first request a run of AGENT would send for INPUT, as a run builds it: the agent's instructions, the run's\n" +
			"(--instructions), a session's history (--session: as for that session's next message), the input, the tools and the\n" +
			"answer schema, each part labelled with its layer and its estimated tokens against the model's window. No model is\n" +
			"called, no hook runs and no run is started. Like run, it creates a store that does not exist yet.",
		Args: func(cmd *cobra.Command, a []string) error {
			if len(a) < 1 || len(a) > 2 {
				return usageError{fmt.Errorf("%s wants an agent's name and at most one input", cmd.CommandPath())}
			}
			return nil
		},
		RunE: withBackend(g, needNew, func(ctx context.Context, v *verb, a []string) error {
			if len(a) == 2 {
				o.Input = a[1]
			}
			pv, err := v.b.Preview(ctx, a[0], o)
			if err == nil {
				printPreview(v, pv)
			}
			return err
		}),
	}
	cmd.Flags().StringVar(&o.Session, "session", "", "preview the next message of this session: its transcript comes first")
	cmd.Flags().StringVar(&o.Instructions, "instructions", "", "the run's own instructions, laid over the agent's")
	return cmd
}

// printPreview writes a previewed request for people: what it holds, layer
// by layer, and how much of the window it fills (--json: one line).
func printPreview(v *verb, pv api.AgentPreview) {
	if v.g.json {
		v.printJSON(pv)
		return
	}
	w := v.g.stdout
	c := pv.Context
	fmt.Fprintf(w, "first request of agent %s v%d on %s: %d tokens estimated (%s)", pv.Agent, pv.Version, pv.Model, c.Estimate, c.Estimator)
	if c.Window > 0 {
		fmt.Fprintf(w, ", %.1f%% of a %d-token window", 100*float64(c.Estimate)/float64(c.Window), c.Window)
	}
	fmt.Fprintln(w)
	if pv.Compacts {
		fmt.Fprintln(w, "the run would summarize older history before sending it")
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LAYER\tNAME\tTOKENS\tTEXT")
	for _, p := range pv.Parts {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\n", p.Layer, orDash(p.Name), p.Tokens, orDash(clip(p.Text, 80)))
	}
	tw.Flush()
	fmt.Fprintln(w, "no model was called and no hook ran")
}
