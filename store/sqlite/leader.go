package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/hitch-dev/hitch/store"
)

// electSQL takes a leadership that is free, run out or already ours. The
// single writer orders attempts; it returns no row when another leader's
// leadership is live.
const electSQL = `
INSERT INTO leaders (name, leader_id, elected_at, expires_at) VALUES (?1, ?2, ?3, ?4)
ON CONFLICT (name) DO UPDATE SET
    leader_id  = excluded.leader_id,
    elected_at = CASE WHEN leader_id = excluded.leader_id AND expires_at > excluded.elected_at
                      THEN elected_at ELSE excluded.elected_at END,
    expires_at = excluded.expires_at
WHERE leader_id = excluded.leader_id OR expires_at <= excluded.elected_at
RETURNING leader_id, elected_at, expires_at`

// LeaderAttemptElect elects p.LeaderID leader of p.Name when the leadership
// is free, run out, or already p.LeaderID's.
func (s *Store) LeaderAttemptElect(ctx context.Context, p store.LeaderElectParams) (store.Leadership, bool, error) {
	if err := errors.Join(store.CheckName("name", p.Name, true), store.CheckName("leader id", p.LeaderID, true)); err != nil {
		return store.Leadership{}, false, fmt.Errorf("leader attempt elect: %w", err)
	}
	if err := store.CheckLease(p.TTL, 0); err != nil {
		return store.Leadership{}, false, fmt.Errorf("leader attempt elect %q: %w", p.Name, err)
	}
	var l store.Leadership
	elected := false
	err := s.write(ctx, func(tx *wtx) error {
		l, elected = store.Leadership{Name: p.Name}, false
		var by string
		var at, until int64
		err := s.wconn.QueryRowContext(context.Background(), electSQL, p.Name, p.LeaderID, micros(tx.now), micros(tx.now.Add(p.TTL))).
			Scan(&by, &at, &until)
		if errors.Is(err, sql.ErrNoRows) {
			err = s.wconn.QueryRowContext(context.Background(), `SELECT leader_id, elected_at, expires_at FROM leaders WHERE name = ?`, p.Name).
				Scan(&by, &at, &until)
		} else {
			elected = err == nil
		}
		if err != nil {
			return err
		}
		l.LeaderID, l.ElectedAt, l.ExpiresAt = by, fromMicros(at), fromMicros(until)
		return nil
	})
	if err != nil {
		return store.Leadership{}, false, fmt.Errorf("leader attempt elect %q: %w", p.Name, err)
	}
	return l, elected, nil
}

// LeaderResign ends p.LeaderID's leadership of p.Name, if it holds it.
func (s *Store) LeaderResign(ctx context.Context, p store.LeaderResignParams) error {
	if err := errors.Join(store.CheckName("name", p.Name, true), store.CheckName("leader id", p.LeaderID, true)); err != nil {
		return fmt.Errorf("leader resign: %w", err)
	}
	err := s.write(ctx, func(*wtx) error {
		_, err := s.wconn.ExecContext(context.Background(), `DELETE FROM leaders WHERE name = ? AND leader_id = ?`, p.Name, p.LeaderID)
		return err
	})
	if err != nil {
		return fmt.Errorf("leader resign %q: %w", p.Name, err)
	}
	return nil
}
