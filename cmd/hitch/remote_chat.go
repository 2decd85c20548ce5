package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/client"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

// remoteChat is hitch chat against a server: the session's submissions
// are followed through their runs' event streams and printed as the local
// chat prints them.
func remoteChat(ctx context.Context, r *remote, _ []string) error {
	ctx = context.WithoutCancel(ctx) // Ctrl-C is the chat's own
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt)
	defer signal.Stop(sigs)
	sid := r.str("session")
	if sid == "" {
		sid = "chat-" + hitch.NewRunID()[4:]
	}
	ses, err := r.c.Session(ctx, sid)
	if errors.Is(err, client.ErrNotFound) {
		agent := r.str("agent")
		if agent == "" {
			list, err := r.c.Agents(ctx)
			if err != nil {
				return err
			}
			if len(list.Agents) != 1 {
				return usageError{fmt.Errorf("--agent: the server has %d agents: name one", len(list.Agents))}
			}
			agent = list.Agents[0].Name
		}
		cs, err := r.c.CreateSession(ctx, api.CreateSession{Agent: agent, ID: sid})
		if err != nil {
			return err
		}
		ses = cs.Session
	} else if err != nil {
		return err
	}
	c := &chat{g: r.g, w: r.g.stdout}
	c.say("session %s (hitch chat --session %s to come back); /help for commands", sid, sid)

	// One goroutine reads the session's stream for new submissions; one
	// follows their runs in turn. Both end when the chat does.
	fctx, stopFollow := context.WithCancel(ctx)
	runs := make(chan string, 64)
	// At the end the session follower reads on to the session's last
	// position, so the last submission's run is followed too.
	var mu sync.Mutex
	var last, target int64
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer close(runs)
		if ses.ActiveRun != "" {
			runs <- ses.ActiveRun
		}
		for e, err := range r.c.FollowSession(fctx, sid, ses.Position) {
			if err != nil {
				if fctx.Err() == nil {
					c.say("hitch: %v", err)
				}
				return
			}
			if e.Kind == hitchtype.KindSubmissionStarted {
				var d hitchtype.SubmissionStarted
				if json.Unmarshal(e.Data, &d) == nil && d.RunID != ses.ActiveRun {
					select {
					case runs <- d.RunID:
					case <-fctx.Done():
						return
					}
				}
			}
			mu.Lock()
			last = e.Pos
			reached := target > 0 && last >= target
			mu.Unlock()
			if reached {
				return
			}
		}
	}()
	go func() {
		defer wg.Done()
		for id := range runs {
			for e, err := range r.c.Follow(ctx, id, 0) {
				if err != nil {
					c.say("hitch: %v", err)
					break
				}
				c.event(hitch.Event{RunID: e.RunID, Entries: []store.Entry{entryOf(e)}})
			}
		}
	}()
	rested, err := remoteChatLoop(ctx, r, c, sid, chatInput, sigs)
	end := int64(0)
	if s, serr := r.c.Session(ctx, sid); rested && err == nil && serr == nil {
		end = s.Position
	}
	mu.Lock()
	if end <= max(last, ses.Position) {
		stopFollow()
	} else {
		target = end
	}
	mu.Unlock()
	wg.Wait()
	stopFollow()
	return err
}

// remoteChatLoop reads lines until EOF or /quit, then waits for the
// session to come to rest (rested), or until a second Ctrl-C.
func remoteChatLoop(ctx context.Context, r *remote, c *chat, sid string, in io.Reader, sigs <-chan os.Signal) (rested bool, err error) {
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
				return true, r.atRest(ctx, sid, false)
			}
			interrupted = false
			if err := remoteChatCommand(ctx, r, c, sid, strings.TrimSpace(line)); err != nil {
				c.say("hitch: %v", err)
			}
		case <-sigs:
			s, err := r.c.Session(ctx, sid)
			if interrupted || err != nil || s.ActiveRun == "" {
				return false, nil
			}
			interrupted = true
			if _, err := r.c.Interrupt(ctx, sid); err != nil {
				c.say("hitch: %v", err)
			}
			c.say("  (interrupting the current turn; Ctrl-C again to leave)")
		}
	}
}

func remoteChatCommand(ctx context.Context, r *remote, c *chat, sid, line string) error {
	verb, rest, _ := strings.Cut(line, " ")
	send := func(text, mode string) error {
		s, err := r.c.Session(ctx, sid)
		if err != nil {
			return err
		}
		res, err := r.c.Send(ctx, sid, api.Send{Text: text, Mode: mode}, "")
		if err != nil {
			return err
		}
		if s.ActiveRun != "" && mode == api.ModeQueue {
			c.say("  (queued as %s behind the current turn)", res.MessageID)
		}
		return nil
	}
	switch verb {
	case "":
	case "/help":
		c.say("%s", chatHelp)
	case "/steer":
		return send(rest, api.ModeSteer)
	case "/interrupt":
		if strings.TrimSpace(rest) == "" {
			_, err := r.c.Interrupt(ctx, sid)
			return err
		}
		return send(rest, api.ModeInterrupt)
	case "/queue":
		q, err := r.c.Queue(ctx, sid)
		if err != nil {
			return err
		}
		for _, m := range q.Messages {
			c.say("  %s (%s): %s", m.ID, m.Mode, clip(m.Text, 120))
		}
		if len(q.Messages) == 0 {
			c.say("  (nothing queued)")
		}
	case "/status":
		st, err := r.c.SessionStatus(ctx, sid)
		if err != nil {
			return err
		}
		c.say("  %d submissions, %d queued, usage: %d generations", len(st.Submissions), len(st.Queue), st.Usage.Generations)
	case "/approvals":
		s, err := r.c.Session(ctx, sid)
		if err != nil || s.ActiveRun == "" {
			c.say("  (no approval requests)")
			return err
		}
		page, err := r.c.Approvals(ctx, s.ActiveRun, "", 10)
		if err != nil {
			return err
		}
		for _, p := range page.Approvals {
			c.say("  %s %s %s (%s): hitch approvals approve %s %s", p.RunID, p.Call, p.Tool, p.Requirement, p.RunID, p.Call)
		}
		if len(page.Approvals) == 0 {
			c.say("  (no approval requests)")
		}
	default:
		if strings.HasPrefix(verb, "/") {
			return fmt.Errorf("unknown command %s; /help lists them", verb)
		}
		return send(line, api.ModeQueue)
	}
	return nil
}
