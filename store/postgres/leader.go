package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/hitch-dev/hitch/store"
)

// electSQL takes a leadership that is free, run out or already ours, in one
// statement: the row lock of the conflicting row orders concurrent
// attempts, and each re-checks the row as committed. It returns no row
// when another leader's leadership is live.
const electSQL = `
INSERT INTO hitch_leaders AS l (name, leader_id, elected_at, expires_at)
VALUES ($2, $3, ` + nowSQL + `, ` + nowSQL + ` + $4 * interval '1 microsecond')
ON CONFLICT (name) DO UPDATE SET
    leader_id  = EXCLUDED.leader_id,
    elected_at = CASE WHEN l.leader_id = EXCLUDED.leader_id AND l.expires_at > EXCLUDED.elected_at
                      THEN l.elected_at ELSE EXCLUDED.elected_at END,
    expires_at = EXCLUDED.expires_at
WHERE l.leader_id = EXCLUDED.leader_id OR l.expires_at <= EXCLUDED.elected_at
RETURNING leader_id, elected_at, expires_at`

// LeaderAttemptElect elects p.LeaderID leader of p.Name when the leadership
// is free, run out, or already p.LeaderID's.
func (s *Store) LeaderAttemptElect(ctx context.Context, p store.LeaderElectParams) (store.Leadership, bool, error) {
	if err := checkLeader(p.Name, p.LeaderID); err != nil {
		return store.Leadership{}, false, fmt.Errorf("leader attempt elect: %w", err)
	}
	if err := store.CheckLease(p.TTL, 0); err != nil {
		return store.Leadership{}, false, fmt.Errorf("leader attempt elect %q: %w", p.Name, err)
	}
	l := store.Leadership{Name: p.Name}
	elected := false
	err := s.retry(ctx, func() error {
		err := s.pool.QueryRow(ctx, electSQL, s.clockArg(), p.Name, p.LeaderID, p.TTL.Microseconds()).
			Scan(&l.LeaderID, &l.ElectedAt, &l.ExpiresAt)
		if errors.Is(err, pgx.ErrNoRows) {
			elected = false
			return s.pool.QueryRow(ctx, `SELECT leader_id, elected_at, expires_at FROM hitch_leaders WHERE name = $1`, p.Name).
				Scan(&l.LeaderID, &l.ElectedAt, &l.ExpiresAt)
		}
		elected = err == nil
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		// The live leader resigned between the two statements: the
		// leadership is free, but this attempt did not take it.
		return store.Leadership{Name: p.Name}, false, nil
	}
	if err != nil {
		return store.Leadership{}, false, fmt.Errorf("leader attempt elect %q: %w", p.Name, err)
	}
	l.ElectedAt, l.ExpiresAt = l.ElectedAt.UTC(), l.ExpiresAt.UTC()
	return l, elected, nil
}

// LeaderResign ends p.LeaderID's leadership of p.Name, if it holds it.
func (s *Store) LeaderResign(ctx context.Context, p store.LeaderResignParams) error {
	if err := checkLeader(p.Name, p.LeaderID); err != nil {
		return fmt.Errorf("leader resign: %w", err)
	}
	err := s.retry(ctx, func() error {
		_, err := s.pool.Exec(ctx, `DELETE FROM hitch_leaders WHERE name = $1 AND leader_id = $2`, p.Name, p.LeaderID)
		return err
	})
	if err != nil {
		return fmt.Errorf("leader resign %q: %w", p.Name, err)
	}
	return nil
}

func checkLeader(name, leaderID string) error {
	return errors.Join(store.CheckName("name", name, true), store.CheckName("leader id", leaderID, true))
}
