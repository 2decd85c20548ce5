package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/hitch-dev/hitch/store"
)

var _ store.Diagnoser = (*Store)(nil)

// diagnoseSettings are the server settings that decide whether a commit
// survives a crash, read with SHOW as this store's sessions see them.
var diagnoseSettings = []string{"synchronous_commit", "fsync", "wal_level", "full_page_writes"}

// DiagnoseSettings reads the schema version and the durability settings
// as a session of this store sees them: set for the server, the database,
// the role or the connection.
func (s *Store) DiagnoseSettings(ctx context.Context) (store.Diagnosis, error) {
	if s.closed.Load() {
		return store.Diagnosis{}, ErrClosed
	}
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return store.Diagnosis{}, fmt.Errorf("diagnose settings: %w", err)
	}
	defer c.Release()
	d := store.Diagnosis{Driver: "postgres", Build: SchemaVersion, Settings: map[string]string{}}
	if d.Schema, _, err = schemaVersion(ctx, c, s.schema); err != nil {
		return store.Diagnosis{}, fmt.Errorf("diagnose settings: %w", err)
	}
	for _, name := range diagnoseSettings {
		var v string
		if err := c.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v); err != nil {
			return store.Diagnosis{}, fmt.Errorf("diagnose settings: %s: %w", name, err)
		}
		d.Settings[name] = v
	}
	return d, nil
}

// DiagnoseCommits commits n one-row transactions to a scratch table made
// for the call in the store's schema and dropped afterwards: a logged
// table, so each commit waits for the WAL as the store's own do.
func (s *Store) DiagnoseCommits(ctx context.Context, n int) (took []time.Duration, err error) {
	if err := s.ready(store.CheckDiagnoseCommits(n), "diagnose commits", ""); err != nil {
		return nil, err
	}
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("diagnose commits: %w", err)
	}
	defer c.Release()
	var tag [6]byte
	_, _ = rand.Read(tag[:])
	table := pgx.Identifier{s.schema, "hitch_doctor_" + hex.EncodeToString(tag[:])}.Sanitize()
	if _, err := c.Exec(ctx, "CREATE TABLE "+table+" (n integer NOT NULL)"); err != nil {
		return nil, fmt.Errorf("diagnose commits: create scratch table: %w", err)
	}
	defer func() {
		// Dropped even when ctx has ended, within a bound of its own.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if _, derr := c.Exec(dctx, "DROP TABLE IF EXISTS "+table); derr != nil {
			err = errors.Join(err, fmt.Errorf("diagnose commits: drop scratch table %s: %w", table, derr))
		}
	}()
	took = make([]time.Duration, 0, n)
	for i := range n {
		begin := time.Now()
		if _, err := c.Exec(ctx, "INSERT INTO "+table+" (n) VALUES ($1)", i); err != nil {
			return nil, fmt.Errorf("diagnose commits: commit %d: %w", i+1, err)
		}
		took = append(took, time.Since(begin))
	}
	return took, nil
}

// DiagnoseNodes lists the nodes holding live leases and the leaderships
// that have not run out, by the database's clock.
func (s *Store) DiagnoseNodes(ctx context.Context) (store.Nodes, error) {
	if s.closed.Load() {
		return store.Nodes{}, ErrClosed
	}
	var (
		out store.Nodes
		err error
	)
	out.Holders, err = readAll(ctx, s.pool, func(sc pgx.Row) (store.LeaseHolder, error) { return store.ScanLeaseHolder(sc) },
		`SELECT lease_owner, count(*) FROM hitch_runs
		WHERE status IN ('queued', 'running') AND lease_expires > `+nowSQL+` AND lease_owner <> ''
		GROUP BY lease_owner ORDER BY lease_owner LIMIT $2`, s.clockArg(), store.MaxListLimit)
	if err == nil {
		out.Leaders, err = readAll(ctx, s.pool, scanLeadership, `SELECT name, leader_id, elected_at, expires_at FROM hitch_leaders
			WHERE expires_at > `+nowSQL+` ORDER BY name LIMIT $2`, s.clockArg(), store.MaxListLimit)
	}
	return store.Result(out, err, "diagnose nodes", "")
}

func scanLeadership(sc pgx.Row) (store.Leadership, error) {
	var l store.Leadership
	err := sc.Scan(&l.Name, &l.LeaderID, &l.ElectedAt, &l.ExpiresAt)
	l.ElectedAt, l.ExpiresAt = l.ElectedAt.UTC(), l.ExpiresAt.UTC()
	return l, err
}
