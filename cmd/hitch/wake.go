package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

func newWake(g *globals) *cobra.Command {
	var event, data, by string
	cmd := &cobra.Command{
		Use:   "wake RUN --event NAME [--data JSON]",
		Short: "Deliver an event to a run parked on await_event",
		Long: "Deliver the event a run waits for (it called await_event): the model sees the event and its data, and the\n" +
			"run goes on; this command follows it. A delivery after the wake's deadline, a second delivery, or one for\n" +
			"an event the run does not wait for is refused (exit 5) and changes nothing.",
		Args: args(1, "one RUN id"),
		PreRunE: func(*cobra.Command, []string) error {
			if event == "" {
				return usageError{errors.New("--event NAME is required")}
			}
			if data != "" && !json.Valid([]byte(data)) {
				return usageError{fmt.Errorf("--data %.40q is not valid JSON", data)}
			}
			return nil
		},
		RunE: withBackend(g, needRuntime, func(ctx context.Context, v *verb, a []string) error {
			var raw json.RawMessage
			if data != "" {
				raw = json.RawMessage(data)
			}
			return v.moveOn(ctx, a[0], func() error { return v.b.Wake(ctx, a[0], wakeParams{Event: event, Data: raw, By: by}) })
		}),
	}
	cmd.Flags().StringVar(&event, "event", "", "the event's name, as the run awaits it")
	cmd.Flags().StringVar(&data, "data", "", "JSON sent with the event; the model sees it")
	cmd.Flags().StringVar(&by, "by", "cli", "who delivers, recorded in the journal")
	return cmd
}

// printWaits says what a parked run waits on and until when.
func printWaits(w io.Writer, ws []hitch.Wait, now time.Time) {
	if len(ws) == 0 {
		return
	}
	fmt.Fprintln(w, "\nparked on")
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	for _, wt := range ws {
		what := wt.Kind
		switch wt.Kind {
		case "event":
			what = fmt.Sprintf("event %q", wt.Event)
		case "external":
			what = "external call " + wt.Tool
		case "held":
			what = "held by a hook: " + wt.Tool
		case "approval":
			what = "approval of " + wt.Tool
		case "children":
			what = "sub-agent " + wt.Tool
		case "uncertain":
			what = "reconciliation of " + wt.Tool
		}
		until := "no deadline"
		if wt.Until != nil {
			until = fmt.Sprintf("until %s (in %s)", wt.Until.Local().Format(time.DateTime), wt.Until.Sub(now).Round(time.Second))
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", wt.Call, what, until)
	}
	_ = tw.Flush()
}

// waitState is a call's state in runs show after an entry of a wake or a
// pending call.
func waitState(e store.Entry) (call, state, detail string) {
	var d struct {
		Call     string          `json:"call"`
		Event    string          `json:"event"`
		Deadline time.Time       `json:"deadline"`
		Data     json.RawMessage `json:"data"`
		Output   string          `json:"output"`
		Error    string          `json:"error"`
	}
	_ = json.Unmarshal(e.Data, &d)
	until := d.Deadline.UTC().Format(time.RFC3339)
	switch e.Kind {
	case hitchtype.KindWakeArmed:
		return d.Call, "awaiting event", fmt.Sprintf("%q until %s", d.Event, until)
	case hitchtype.KindWakeDelivered:
		return d.Call, "event delivered", fmt.Sprintf("%q %s", d.Event, d.Data)
	case hitchtype.KindWakeExpired:
		return d.Call, "event missed", fmt.Sprintf("%q did not come by %s", d.Event, until)
	case hitchtype.KindCallPending:
		return d.Call, "pending outside", "until " + until
	case hitchtype.KindCallCompleted:
		if d.Error != "" {
			return d.Call, "failed outside", d.Error
		}
		return d.Call, "completed outside", d.Output
	}
	return d.Call, "timed out", "no result by " + until
}
