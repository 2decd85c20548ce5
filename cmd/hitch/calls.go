package main

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/hitch-dev/hitch"
)

func newCalls(g *globals) *cobra.Command {
	var output, errText, by string
	var execute bool
	complete := &cobra.Command{
		Use:   "complete RUN CALL (--output TEXT | --error TEXT | --execute)",
		Short: "Give a pending external call its result, or release a call held by a hook",
		Long: "An external tool's call waits for its result from outside: give it with --output (the model sees it) or\n" +
			"--error (a failure the model sees). A call held by a pre-tool hook is released with --execute (its body\n" +
			"runs), or given --output/--error instead of running. The run then goes on and this command follows it.\n" +
			"A call that already has its result, or whose deadline passed, is refused (exit 5) and nothing changes.\n" +
			"See hitch runs show RUN for the calls a run waits on.",
		Args: args(2, "RUN and CALL (see hitch runs show RUN)"),
		PreRunE: func(cmd *cobra.Command, _ []string) error {
			given := 0
			for _, set := range []bool{cmd.Flags().Changed("output"), cmd.Flags().Changed("error"), execute} {
				if set {
					given++
				}
			}
			if given != 1 {
				return usageError{errors.New("give exactly one of --output TEXT, --error TEXT or --execute")}
			}
			if cmd.Flags().Changed("error") && errText == "" {
				return usageError{errors.New("--error: give the failure's text")}
			}
			if cmd.Flags().Changed("output") && output == "" {
				return usageError{errors.New("--output: give the call's result")}
			}
			return nil
		},
		RunE: withBackend(g, needRuntime, func(ctx context.Context, v *verb, a []string) error {
			c := hitch.Completion{Call: a[1], Output: output, Error: errText, Execute: execute, By: by}
			return v.moveOn(ctx, a[0], func() error { return v.b.CompleteCall(ctx, a[0], c) })
		}),
	}
	complete.Flags().StringVar(&output, "output", "", "the call's result, shown to the model")
	complete.Flags().StringVar(&errText, "error", "", "the call failed: this text is shown to the model")
	complete.Flags().BoolVar(&execute, "execute", false, "release a call held by a hook, so its body runs")
	complete.Flags().StringVar(&by, "by", "cli", "who completes, recorded in the journal")
	return group("calls", "Complete calls that wait for the outside world", complete)
}
