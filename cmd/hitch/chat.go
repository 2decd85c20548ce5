package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/hitchtype"
)

// chatInput is where hitch chat reads lines; tests replace it.
var chatInput io.Reader = os.Stdin

const chatHelp = `type a message and press enter; while the agent works, it is queued
  /steer TEXT      join TEXT to the current turn at its next model call
  /interrupt TEXT  stop the current turn; TEXT runs next
  /queue           list queued messages      /status  show the session
  /approvals       list approval requests    /quit    leave (Ctrl-D too)
  Ctrl-C           interrupt the current turn; twice to leave`

func newChat(g *globals) *cobra.Command {
	var sessionID, agent string
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "Talk to an agent in the terminal, in a durable session",
		Long: "chat opens (or creates) a session and reads messages from the terminal. The agent's steps are printed as\n" +
			"they are journaled. A line typed while the agent works is queued; /steer joins it to the current turn;\n" +
			"Ctrl-C interrupts the current turn, and a second Ctrl-C leaves. The session outlives the process: run\n" +
			"chat --session ID again to go on.\n\n" + chatHelp,
		Args: args(0, "no arguments (use --session)"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Ctrl-C is the chat's own: it interrupts a turn first.
			ctx := context.WithoutCancel(cmd.Context())
			sigs := make(chan os.Signal, 2)
			signal.Notify(sigs, os.Interrupt)
			defer signal.Stop(sigs)
			c := &chat{g: g, w: g.stdout}
			e, err := openRuntimeWith(ctx, g, true, c.event)
			if err != nil {
				return err
			}
			defer e.close()
			c.rt = e.rt
			if sessionID == "" {
				sessionID = "chat-" + hitch.NewRunID()[4:]
			}
			if err := ensureSession(ctx, e, sessionID, agent); err != nil {
				return err
			}
			c.sid = sessionID
			c.say("session %s (hitch chat --session %s to come back); /help for commands", sessionID, sessionID)
			return c.loop(ctx, chatInput, sigs)
		},
	}
	cmd.Flags().StringVar(&sessionID, "session", "", "session to open or create (default: a new one)")
	cmd.Flags().StringVar(&agent, "agent", "", "agent of a new session (default: the config's only agent)")
	return cmd
}

type chat struct {
	g   *globals
	w   io.Writer
	rt  *hitch.Runtime
	sid string
	mu  sync.Mutex
}

func (c *chat) say(format string, a ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Fprintf(c.w, format+"\n", a...)
}

// event prints a session run's steps as they are journaled.
func (c *chat) event(ev hitch.Event) {
	for _, e := range ev.Entries {
		if c.g.json {
			b, _ := json.Marshal(struct {
				Run  string          `json:"run"`
				Pos  int64           `json:"pos"`
				Kind string          `json:"kind"`
				Data json.RawMessage `json:"data"`
			}{e.RunID, e.Pos, e.Kind, e.Data})
			c.say("%s", b)
			continue
		}
		switch e.Kind {
		case hitchtype.KindModelReply:
			var d hitchtype.ModelReply
			_ = json.Unmarshal(e.Data, &d)
			if len(d.Reply.ToolCalls) == 0 {
				continue // the answer is printed with the end
			}
			if d.Reply.Text != "" {
				c.say("agent: %s", d.Reply.Text)
			}
			for _, tc := range d.Reply.ToolCalls {
				c.say("  → %s %s", tc.Name, clip(tc.Arguments, 120))
			}
		case hitchtype.KindCallSettled:
			var d hitchtype.CallSettled
			_ = json.Unmarshal(e.Data, &d)
			c.say("  ← %s", clip(d.Output, 160))
		case hitchtype.KindCallFailed:
			var d hitchtype.CallFailed
			_ = json.Unmarshal(e.Data, &d)
			c.say("  ← failed: %s", clip(d.Error, 160))
		case hitchtype.KindCallDecided:
			var d hitchtype.CallDecided
			_ = json.Unmarshal(e.Data, &d)
			if d.Verdict != "allow" {
				c.say("  policy: %s %s", d.Verdict, d.Reason)
			}
		case hitchtype.KindSessionSteered:
			var d hitchtype.SessionSteered
			_ = json.Unmarshal(e.Data, &d)
			c.say("  (joined this turn: %s)", clip(d.Text, 120))
		case hitchtype.KindRunWaiting:
			var d hitchtype.RunWaiting
			_ = json.Unmarshal(e.Data, &d)
			c.say("  waiting (%s) for %s: answer with hitch approvals approve %s CALL", d.Reason, strings.Join(d.Calls, ", "), e.RunID)
		case hitchtype.KindRunEnded:
			var o hitchtype.Outcome
			_ = json.Unmarshal(e.Data, &o)
			switch {
			case o.Status == hitchtype.StatusCompleted:
				c.say("agent: %s", o.Answer)
			case o.Reason == "interrupted":
				c.say("  (interrupted)")
			default:
				c.say("  (%s: %s)", o.Status, o.Error)
			}
		}
	}
}

// loop reads lines until EOF or /quit, then lets the work come to rest.
func (c *chat) loop(ctx context.Context, in io.Reader, sigs <-chan os.Signal) error {
	lines := make(chan string)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), hitchtype.DefaultMaxMessageBytes+1)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-stop:
				return
			}
		}
	}()
	interrupted := false
	for {
		select {
		case line, ok := <-lines:
			if !ok || strings.TrimSpace(line) == "/quit" {
				if _, err := c.rt.AwaitSession(ctx, c.sid); err != nil {
					return err
				}
				return nil
			}
			interrupted = false
			if err := c.command(ctx, strings.TrimSpace(line)); err != nil {
				c.say("hitch: %v", err)
			}
		case <-sigs:
			s, err := c.rt.GetSession(ctx, c.sid)
			if interrupted || err != nil || s.ActiveRun == "" {
				return nil
			}
			interrupted = true
			if err := c.rt.Interrupt(ctx, c.sid); err != nil {
				c.say("hitch: %v", err)
			}
			c.say("  (interrupting the current turn; Ctrl-C again to leave)")
		}
	}
}

func (c *chat) command(ctx context.Context, line string) error {
	verb, rest, _ := strings.Cut(line, " ")
	send := func(text string, mode hitch.SendMode) error {
		s, err := c.rt.GetSession(ctx, c.sid)
		if err != nil {
			return err
		}
		res, err := c.rt.Send(ctx, c.sid, text, hitch.SendOptions{Mode: mode})
		if err != nil {
			return err
		}
		if s.ActiveRun != "" && mode == hitch.ModeQueue {
			c.say("  (queued as %s behind the current turn)", res.MessageID)
		}
		return nil
	}
	switch verb {
	case "":
		return nil
	case "/help":
		c.say("%s", chatHelp)
	case "/steer":
		return send(rest, hitch.ModeSteer)
	case "/interrupt":
		if strings.TrimSpace(rest) == "" {
			return c.rt.Interrupt(ctx, c.sid)
		}
		return send(rest, hitch.ModeInterrupt)
	case "/queue":
		q, err := c.rt.Queue(ctx, c.sid, 0)
		if err != nil {
			return err
		}
		for _, m := range q {
			c.say("  %s (%s): %s", m.ID, m.Mode, clip(m.Text, 120))
		}
		if len(q) == 0 {
			c.say("  (nothing queued)")
		}
	case "/status":
		st, err := c.rt.SessionStatus(ctx, c.sid)
		if err != nil {
			return err
		}
		c.say("  %d submissions, %d queued, usage: %d generations", len(st.Submissions), len(st.Queue), st.Usage.Generations)
	case "/approvals":
		s, err := c.rt.GetSession(ctx, c.sid)
		if err != nil || s.ActiveRun == "" {
			c.say("  (no approval requests)")
			return err
		}
		ps, _, err := c.rt.PendingApprovals(ctx, hitch.PendingApprovalsParams{RootID: s.ActiveRun, Limit: 10})
		if err != nil {
			return err
		}
		for _, p := range ps {
			c.say("  %s %s %s (%s): hitch approvals approve %s %s", p.RunID, p.Call, p.Tool, p.Requirement, p.RunID, p.Call)
		}
		if len(ps) == 0 {
			c.say("  (no approval requests)")
		}
	default:
		if strings.HasPrefix(verb, "/") {
			return fmt.Errorf("unknown command %s; /help lists them", verb)
		}
		return send(line, hitch.ModeQueue)
	}
	return nil
}
