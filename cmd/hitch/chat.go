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
	"time"

	"github.com/spf13/cobra"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/approval"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/sessions"
	"github.com/hitch-dev/hitch/store"
)

// chatInput is where hitch chat reads lines; tests replace it.
var chatInput io.Reader = os.Stdin

const chatHelp = `type a message and press enter; while the agent works, it is queued
  /steer TEXT      join TEXT to the current turn at its next model call
  /interrupt TEXT  stop the current turn; TEXT runs next
  /queue           list queued messages      /status  show the session
  /approvals       list approval requests    /quit    leave (Ctrl-D too)
  /approve [RUN] CALL          approve a request, as $HITCH_CREDENTIAL (name:secret)
  /reject [RUN] CALL [REASON]  reject it, with a reason the model sees
  Ctrl-C           interrupt the current turn; twice to leave`

func newChat(g *globals) *cobra.Command {
	var sessionID, agent, credentialEnv string
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "Talk to an agent in the terminal, in a durable session",
		Long: "chat opens (or creates) a session and reads messages from the terminal. The agent's steps are printed as\n" +
			"they are journaled. A line typed while the agent works is queued; /steer joins it to the current turn;\n" +
			"Ctrl-C interrupts the current turn, and a second Ctrl-C leaves. The session outlives the process: run\n" +
			"chat --session ID again to go on. A turn that waits for an approval shows the request; /approve and /reject\n" +
			"answer it in place with the credential in --credential-env, checked as hitch approvals checks it.\n\n" + chatHelp,
		Args: args(0, "no arguments (use --session)"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Ctrl-C is the chat's own: it interrupts a turn first.
			ctx := context.WithoutCancel(cmd.Context())
			sigs := make(chan os.Signal, 2)
			signal.Notify(sigs, os.Interrupt)
			defer signal.Stop(sigs)
			vault.credential(credentialEnv) // read at /approve, dropped with the config's
			v, err := openVerb(ctx, g, needNew)
			if err != nil {
				return err
			}
			defer v.b.Close()
			if sessionID == "" {
				sessionID = "chat-" + hitch.NewRunID()[4:]
			}
			if err := ensureSession(ctx, v.b, sessionID, agent); err != nil {
				return err
			}
			c := &chat{g: g, w: g.stdout, b: v.b, sid: sessionID, credentialEnv: credentialEnv}
			stop, err := v.b.WatchSession(ctx, sessionID, c.entry)
			if err != nil {
				return err
			}
			c.say("session %s (hitch chat --session %s to come back); /help for commands", sessionID, sessionID)
			rested, err := c.loop(ctx, chatInput, sigs)
			stop(rested && err == nil)
			return err
		},
	}
	cmd.Flags().StringVar(&sessionID, "session", "", "session to open or create (default: a new one)")
	cmd.Flags().StringVar(&agent, "agent", "", "agent of a new session (default: the config's only agent)")
	cmd.Flags().StringVar(&credentialEnv, "credential-env", "HITCH_CREDENTIAL", "variable holding the approver credential (name:secret) for /approve and /reject")
	return cmd
}

type chat struct {
	g             *globals
	w             io.Writer
	b             backend
	sid           string
	credentialEnv string
	mu            sync.Mutex
}

func (c *chat) say(format string, a ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fmt.Fprintf(c.w, format+"\n", a...)
}

// entry prints a step of a session's run as it is journaled.
func (c *chat) entry(e store.Entry) {
	if c.g.json {
		b, _ := json.Marshal(struct {
			Run  string          `json:"run"`
			Pos  int64           `json:"pos"`
			Kind string          `json:"kind"`
			Data json.RawMessage `json:"data"`
		}{e.RunID, e.Pos, e.Kind, e.Data})
		c.say("%s", b)
		return
	}
	switch e.Kind {
	case hitchtype.KindModelReply:
		d := decoded[hitchtype.ModelReply](e.Data)
		if len(d.Reply.ToolCalls) == 0 {
			return // the answer is printed with the end
		}
		if d.Reply.Text != "" {
			c.say("agent: %s", d.Reply.Text)
		}
		for _, tc := range d.Reply.ToolCalls {
			c.say("  → %s %s", tc.Name, clip(tc.Arguments, 120))
		}
	case hitchtype.KindCallSettled:
		d := decoded[hitchtype.CallSettled](e.Data)
		c.say("  ← %s", clip(d.Output, 160))
	case hitchtype.KindCallFailed:
		d := decoded[hitchtype.CallFailed](e.Data)
		c.say("  ← failed: %s", clip(d.Error, 160))
	case hitchtype.KindCallDecided:
		d := decoded[hitchtype.CallDecided](e.Data)
		if d.Verdict != "allow" {
			c.say("  policy: %s %s", d.Verdict, d.Reason)
		}
	case hitchtype.KindSessionSteered:
		d := decoded[hitchtype.SessionSteered](e.Data)
		c.say("  (joined this turn: %s)", clip(d.Text, 120))
	case hitchtype.KindRunWaiting:
		d := decoded[hitchtype.RunWaiting](e.Data)
		c.waiting(e.RunID, d)
	case hitchtype.KindRunEnded:
		o := decoded[hitchtype.Outcome](e.Data)
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

// waiting shows what a run waits for; each approval request in full, with
// the commands that answer it.
func (c *chat) waiting(runID string, d hitchtype.RunWaiting) {
	shown := false
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // a read; the run goes on meanwhile
	defer cancel()
	for _, call := range d.Calls {
		p, err := c.b.Approval(ctx, runID, call)
		if err != nil {
			continue // not an approval: a child, a reconcile, a timer
		}
		shown = true
		c.say("  approval needed (%s): %s %s", p.Requirement, p.Tool, clip(string(p.Arguments), 120))
		if p.Reason != "" {
			c.say("    reason: %s", p.Reason)
		}
		c.say("    /approve %s %s   or   /reject %s %s REASON", runID, call, runID, call)
	}
	if !shown {
		c.say("  waiting (%s) for %s", d.Reason, strings.Join(d.Calls, ", "))
	}
}

// answer approves or rejects a request of the session's active family:
// args are "[RUN] CALL [REASON]"; RUN may be left out when one waiting
// run has a request for CALL.
func (c *chat) answer(ctx context.Context, args string, approve bool) error {
	verb := map[bool]string{true: "/approve", false: "/reject"}[approve]
	raw := vault.getenv(c.credentialEnv)
	if raw == "" {
		return fmt.Errorf("%s: no credential: set %s=name:secret before starting hitch chat", verb, c.credentialEnv)
	}
	cred, err := approval.ParseCredential(raw)
	if err != nil {
		return fmt.Errorf("%s: %s: %w", verb, c.credentialEnv, err)
	}
	f := strings.Fields(args)
	if len(f) == 0 {
		return fmt.Errorf("%s: want [RUN] CALL", verb)
	}
	s, err := c.b.Session(ctx, c.sid)
	if err != nil {
		return err
	}
	if s.ActiveRun == "" {
		return fmt.Errorf("%s: no turn is running, so none waits for an approval", verb)
	}
	ps, _, err := c.b.Approvals(ctx, s.ActiveRun, "", 0)
	if err != nil {
		return err
	}
	var match []hitch.PendingApproval
	rest := f[1:]
	for _, p := range ps {
		if len(f) > 1 && p.RunID == f[0] && p.Call == f[1] {
			match, rest = []hitch.PendingApproval{p}, f[2:]
			break
		}
		if p.Call == f[0] {
			match = append(match, p)
		}
	}
	switch {
	case len(match) == 0:
		return fmt.Errorf("%s: no request of this session waits for %s; /approvals lists them", verb, strings.Join(f[:min(2, len(f))], " "))
	case len(match) > 1:
		return fmt.Errorf("%s: calls named %s wait in several runs; name the run: %s RUN %s", verb, f[0], verb, f[0])
	}
	runID, call := match[0].RunID, match[0].Call
	if err := c.b.Answer(ctx, runID, call, cred, approve, strings.Join(rest, " ")); err != nil {
		return fmt.Errorf("%s %s %s: %w", verb, runID, call, err)
	}
	if approve {
		c.say("  (approved %s %s as %s)", runID, call, cred.Name)
	} else {
		c.say("  (rejected %s %s as %s)", runID, call, cred.Name)
	}
	return nil
}

// loop reads lines until EOF or /quit, then lets the work come to rest
// (rested), or until a second Ctrl-C.
func (c *chat) loop(ctx context.Context, in io.Reader, sigs <-chan os.Signal) (rested bool, err error) {
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
				return true, c.b.AwaitSession(ctx, c.sid)
			}
			interrupted = false
			if err := c.command(ctx, strings.TrimSpace(line)); err != nil {
				c.say("hitch: %v", err)
			}
		case <-sigs:
			s, err := c.b.Session(ctx, c.sid)
			if interrupted || err != nil || s.ActiveRun == "" {
				return false, nil
			}
			interrupted = true
			if err := c.b.Interrupt(ctx, c.sid); err != nil {
				c.say("hitch: %v", err)
			}
			c.say("  (interrupting the current turn; Ctrl-C again to leave)")
		}
	}
}

func (c *chat) command(ctx context.Context, line string) error {
	verb, rest, _ := strings.Cut(line, " ")
	send := func(text string, mode sessions.Mode) error {
		s, err := c.b.Session(ctx, c.sid)
		if err != nil {
			return err
		}
		res, err := c.b.Send(ctx, c.sid, text, sessions.SendOptions{Mode: mode})
		if err != nil {
			return err
		}
		if s.ActiveRun != "" && mode == sessions.ModeQueue {
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
		return send(rest, sessions.ModeSteer)
	case "/interrupt":
		if strings.TrimSpace(rest) == "" {
			return c.b.Interrupt(ctx, c.sid)
		}
		return send(rest, sessions.ModeInterrupt)
	case "/queue":
		q, err := c.b.Queue(ctx, c.sid)
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
		st, err := c.b.SessionStatus(ctx, c.sid)
		if err != nil {
			return err
		}
		c.say("  %d submissions, %d queued, usage: %d generations", len(st.Submissions), len(st.Queue), st.Usage.Generations)
	case "/approve":
		return c.answer(ctx, rest, true)
	case "/reject":
		return c.answer(ctx, rest, false)
	case "/approvals":
		s, err := c.b.Session(ctx, c.sid)
		if err != nil || s.ActiveRun == "" {
			c.say("  (no approval requests)")
			return err
		}
		ps, _, err := c.b.Approvals(ctx, s.ActiveRun, "", 0)
		if err != nil {
			return err
		}
		for _, p := range ps {
			c.say("  %s %s %s (%s) %s: /approve %s %s", p.RunID, p.Call, p.Tool, p.Requirement, clip(string(p.Arguments), 60), p.RunID, p.Call)
		}
		if len(ps) == 0 {
			c.say("  (no approval requests)")
		}
	default:
		if strings.HasPrefix(verb, "/") {
			return fmt.Errorf("unknown command %s; /help lists them", verb)
		}
		return send(line, sessions.ModeQueue)
	}
	return nil
}
