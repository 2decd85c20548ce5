package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// The listener's own timings. They bound how long a dead connection goes
// unnoticed and how hard a node knocks on a database that is down.
const (
	listenPing     = 10 * time.Second // ping a quiet listener this often
	connectTimeout = 10 * time.Second // one connect and LISTEN
	minBackoff     = 100 * time.Millisecond
	maxBackoff     = 5 * time.Second
)

// wakeChannel is the channel the hitch_runs triggers notify; the payload is
// the schema of the run that changed.
const wakeChannel = "hitch_wake"

// Wake implements store.Notifier. The first call starts the listener: a
// connection of its own that LISTENs on hitch_wake and passes on every
// notification from this store's schema. The channel also receives after
// the listener (re)connects, since notifications sent while it was away
// are lost, and every poll interval (WithPollInterval), which covers wake
// times that came and is the only source of wakes with WithPollOnly.
func (s *Store) Wake() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing || s.listening {
		return s.wake
	}
	s.listening = true
	s.wg.Add(1)
	go s.pollLoop()
	if !s.cfg.pollOnly {
		ctx, cancel := context.WithCancel(context.Background())
		s.stopListen = cancel
		s.wg.Add(1)
		go s.listenLoop(ctx)
	}
	return s.wake
}

// signal wakes the receiver without ever blocking: a wake already pending
// stands for this one too.
func (s *Store) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Store) pollLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.pollInterval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.signal()
		}
	}
}

// listenLoop keeps a listener connected, reconnecting with a capped
// exponential backoff, until ctx ends.
func (s *Store) listenLoop(ctx context.Context) {
	defer s.wg.Done()
	backoff := minBackoff
	for {
		// A failed listen is retried; polling covers the gap.
		_ = s.listen(ctx, func() { backoff = minBackoff })
		if ctx.Err() != nil {
			return
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// listen connects, LISTENs and passes notifications on until the
// connection fails or ctx ends.
func (s *Store) listen(ctx context.Context, connected func()) error {
	cctx, cancel := context.WithTimeout(ctx, connectTimeout)
	cc := s.connCf.Copy()
	cc.RuntimeParams["application_name"] = "hitch wake " + s.schema
	conn, err := pgx.ConnectConfig(cctx, cc)
	if err == nil {
		if _, err = conn.Exec(cctx, "LISTEN "+wakeChannel); err != nil {
			_ = conn.Close(context.Background())
		}
	}
	cancel()
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
		defer cancel()
		_ = conn.Close(cctx)
	}()
	connected()
	s.signal() // what was notified while we were away is lost
	for {
		wctx, cancel := context.WithTimeout(ctx, listenPing)
		n, err := conn.WaitForNotification(wctx)
		cancel()
		switch {
		case err == nil:
			if n.Channel == wakeChannel && n.Payload == s.schema {
				s.signal()
			}
		case ctx.Err() != nil:
			return ctx.Err()
		case wctx.Err() != nil: // quiet for a while: is the connection still there?
			pctx, cancel := context.WithTimeout(ctx, connectTimeout)
			err := conn.Ping(pctx)
			cancel()
			if err != nil {
				return err
			}
		default:
			return err
		}
	}
}
