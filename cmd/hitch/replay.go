package main

import (
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
)

func newReplay(g *globals) *cobra.Command {
	var o hitch.ReplayOptions
	var status []string
	var agent, since, until, junit string
	var limit int
	cmd := &cobra.Command{
		Use:   "replay [RUN...] [--agent A] [--status S] [--since T] [--until T] [--version N]",
		Short: "Re-run recorded runs on an agent version, serving recorded tool results, and report what changed",
		Long: "Replay each named RUN, or the root runs a filter selects (newest first, at most --limit), on a version of its agent\n" +
			"from the config (--version; default the highest). Model calls are real; tool calls are answered from the recording:\n" +
			"the same tool and arguments at the same point get the recorded result and nothing runs, no policy or approval is\n" +
			"asked; any other call ends that replay as diverged (--run-replayable lets a replayable tool run instead). Each run\n" +
			"is reported as same, diverged at turn N (what each did), or answer changed (for typed answers, which fields),\n" +
			"with the tokens and cost of both. Exit 0 when every replay is the same, 10 when any is not.",
		PreRunE: func(cmd *cobra.Command, a []string) error {
			for _, id := range a {
				if err := checkID("RUN", id); err != nil {
					return err
				}
			}
			if len(a) > hitch.MaxReplayRuns {
				return usageError{fmt.Errorf("%d runs: at most %d at once", len(a), hitch.MaxReplayRuns)}
			}
			if limit < 1 || limit > hitch.MaxReplayRuns {
				return usageError{fmt.Errorf("--limit %d: want 1 to %d", limit, hitch.MaxReplayRuns)}
			}
			if o.Version < 0 {
				return usageError{fmt.Errorf("--version %d: want a version of the agent, or 0 for the highest", o.Version)}
			}
			for _, s := range status {
				if !hitchtype.Status(s).Valid() {
					return usageError{fmt.Errorf("--status %q: want queued, running, waiting, completed, failed, cancelled, answer_invalid or budget_exhausted", s)}
				}
			}
			filtered := agent != "" || len(status) > 0 || since != "" || until != ""
			if len(a) > 0 && filtered {
				return usageError{errors.New("name runs, or give a filter (--agent, --status, --since, --until), not both")}
			}
			if len(a) == 0 && !filtered {
				return usageError{errors.New("name the runs to replay, or give a filter (--agent, --status, --since, --until)")}
			}
			_, _, err := runsWindow(since, until, time.Now())
			return err
		},
		RunE: func(cmd *cobra.Command, a []string) error {
			ctx := cmd.Context()
			// The replays' steps are not printed: the report is the output.
			e, err := openRuntimeConfig(ctx, g, runtimeOpts{onEvent: func(hitch.Event) {}})
			if err != nil {
				return err
			}
			defer e.close()
			o.Runs = a
			if len(a) == 0 {
				p := hitch.RunsParams{Agent: agent, Limit: limit}
				if p.CreatedAfter, p.CreatedBefore, err = runsWindow(since, until, time.Now()); err != nil {
					return err
				}
				for _, s := range status {
					p.Statuses = append(p.Statuses, hitchtype.Status(s))
				}
				o.Filter = &p
			}
			results, err := e.rt.Replay(ctx, o)
			if err != nil {
				return err
			}
			if junit != "" {
				if err := writeJUnit(g, junit, results); err != nil {
					return err
				}
			}
			printReplay(g, results)
			for _, r := range results {
				if r.Verdict != hitch.ReplaySame {
					return silentExit(exitDiffers)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&agent, "agent", "", "replay the runs of this agent")
	cmd.Flags().StringSliceVar(&status, "status", nil, "replay the runs with these statuses")
	cmd.Flags().StringVar(&since, "since", "", "replay runs created at or after this: an RFC 3339 time, or a duration ago (2h)")
	cmd.Flags().StringVar(&until, "until", "", "replay runs created before this: an RFC 3339 time, or a duration ago")
	cmd.Flags().IntVar(&limit, "limit", hitch.MaxReplayRuns, "most runs a filter selects")
	cmd.Flags().IntVar(&o.Version, "version", 0, "the agent version to replay on (default: the highest in the config)")
	cmd.Flags().BoolVar(&o.RunReplayable, "run-replayable", false, "let a call the recording lacks run for real when its tool is replayable")
	cmd.Flags().StringVar(&junit, "junit", "", "also write the report to this file as JUnit XML, one test case a run")
	return cmd
}

// printReplay prints the report: one JSON object a run, or a table with
// what differed under each run that differs, and a summary on stderr.
func printReplay(g *globals, results []hitch.ReplayResult) {
	if g.json {
		for _, r := range results {
			b := map[string]any{"run": r.Run, "replay": r.Replay, "agent": r.Agent, "version": r.Version, "verdict": r.Verdict,
				"recorded_usage": r.RecordedUsage, "replay_usage": r.ReplayUsage,
				"recorded_cost_usd": r.RecordedCostUSD, "replay_cost_usd": r.ReplayCostUSD,
				"recorded_outcome": r.RecordedOutcome, "replay_outcome": r.ReplayOutcome}
			if r.Verdict == hitch.ReplayDiverged {
				b["turn"], b["recorded"], b["replayed"] = r.Turn, r.Recorded, r.Replayed
			}
			if r.Fields != nil {
				b["fields"] = r.Fields
			}
			printJSONLine(g, b)
		}
		return
	}
	tw := tabwriter.NewWriter(g.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tREPLAY\tVERSION\tVERDICT\tTOKENS (RECORDED → REPLAY)\tCOST (RECORDED → REPLAY)")
	counts := map[string]int{}
	for _, r := range results {
		counts[r.Verdict]++
		verdict := strings.ReplaceAll(r.Verdict, "_", " ")
		if r.Verdict == hitch.ReplayDiverged {
			verdict += fmt.Sprintf(" at turn %d", r.Turn)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s v%d\t%s\t%s → %s\t%s → %s\n", r.Run, r.Replay, r.Agent, r.Version, verdict,
			tokens(r.RecordedUsage), tokens(r.ReplayUsage), costCell(r.RecordedCostUSD), costCell(r.ReplayCostUSD))
	}
	_ = tw.Flush()
	for _, r := range results {
		if d := replayDetail(r); d != "" {
			fmt.Fprintf(g.stdout, "\n%s %s:\n%s", r.Run, strings.ReplaceAll(r.Verdict, "_", " "), d)
		}
	}
	fmt.Fprintf(g.stderr, "%d replayed: %d same, %d diverged, %d answer changed, %d unfinished\n", len(results),
		counts[hitch.ReplaySame], counts[hitch.ReplayDiverged], counts[hitch.ReplayAnswerChanged], counts[hitch.ReplayUnfinished])
}

// replayDetail says what differed, a line each, indented.
func replayDetail(r hitch.ReplayResult) string {
	var b strings.Builder
	switch r.Verdict {
	case hitch.ReplayDiverged:
		fmt.Fprintf(&b, "  at turn %d the recording did: %s\n  the new version did:         %s\n", r.Turn, r.Recorded, r.Replayed)
	case hitch.ReplayAnswerChanged:
		if len(r.Fields) > 0 {
			fmt.Fprintf(&b, "  fields that changed: %s\n", strings.Join(r.Fields, ", "))
		}
		fmt.Fprintf(&b, "  recorded: %s\n  replay:   %s\n", outcomeText(r.RecordedOutcome), outcomeText(r.ReplayOutcome))
	case hitch.ReplayUnfinished:
		fmt.Fprintf(&b, "  the replay is %s: hitch runs show %s\n", outcomeText(r.ReplayOutcome), r.Replay)
	}
	return b.String()
}

func outcomeText(o *hitch.Outcome) string {
	switch {
	case o == nil:
		return "not ended"
	case o.Status == hitchtype.StatusCompleted:
		return fmt.Sprintf("completed: %.200q", o.Answer)
	}
	return fmt.Sprintf("%s (%s): %.200q", o.Status, o.Reason, o.Error)
}

// tokens is a usage's input and output tokens together.
func tokens(u hitch.Usage) string {
	if u.InputTokens == nil || u.OutputTokens == nil {
		return "unreported"
	}
	return fmt.Sprint(*u.InputTokens + *u.OutputTokens)
}

// costCell is a cost in a table cell.
func costCell(c *float64) string {
	if c == nil {
		return "not priced"
	}
	return fmt.Sprintf("$%.4f", *c)
}

// The JUnit XML a CI server reads: one suite, a test case a run, a
// failure for each replay that is not the same.
type junitSuite struct {
	XMLName  xml.Name    `xml:"testsuite"`
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

func writeJUnit(g *globals, path string, results []hitch.ReplayResult) error {
	s := junitSuite{Name: "hitch replay", Tests: len(results)}
	for _, r := range results {
		c := junitCase{Name: r.Run, Classname: fmt.Sprintf("%s.v%d", r.Agent, r.Version)}
		if r.Verdict != hitch.ReplaySame {
			s.Failures++
			msg := strings.ReplaceAll(r.Verdict, "_", " ")
			if r.Verdict == hitch.ReplayDiverged {
				msg += fmt.Sprintf(" at turn %d", r.Turn)
			}
			c.Failure = &junitFailure{Message: msg, Type: r.Verdict, Text: "replay " + r.Replay + "\n" + replayDetail(r)}
		}
		s.Cases = append(s.Cases, c)
	}
	b, err := xml.MarshalIndent(s, "", "  ")
	if err != nil {
		return fmt.Errorf("encode junit report: %w", err)
	}
	// The file passes the config's secrets like every other output.
	if red := g.red.get(); red != nil {
		b = red.Bytes(b)
	}
	if err := os.WriteFile(path, append([]byte(xml.Header), append(b, '\n')...), 0o644); err != nil {
		return fmt.Errorf("write junit report: %w", err)
	}
	return nil
}
