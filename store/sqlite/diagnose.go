package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hitch-dev/hitch/store"
)

var _ store.Diagnoser = (*Store)(nil)

// syncNames are the values of PRAGMA synchronous.
var syncNames = map[int]string{0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}

// DiagnoseSettings reads the schema version, synchronous and journal_mode
// as this store's connections have them.
func (s *Store) DiagnoseSettings(ctx context.Context) (store.Diagnosis, error) {
	if s.closed.Load() {
		return store.Diagnosis{}, ErrClosed
	}
	names, err := migrationFS.ReadDir("migrations")
	if err != nil {
		return store.Diagnosis{}, fmt.Errorf("diagnose settings: read migrations: %w", err)
	}
	d := store.Diagnosis{Driver: "sqlite", Build: len(names), Path: s.path, Settings: map[string]string{}}
	// One connection answers all three: synchronous is a connection's
	// setting, and every connection of the store is opened with the same.
	conn, err := s.rdb.Conn(ctx)
	if err != nil {
		return store.Diagnosis{}, fmt.Errorf("diagnose settings: %w", err)
	}
	defer conn.Close()
	var sync int
	var mode string
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&d.Schema); err != nil {
		return store.Diagnosis{}, fmt.Errorf("diagnose settings: schema version: %w", err)
	}
	if err := conn.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&sync); err != nil {
		return store.Diagnosis{}, fmt.Errorf("diagnose settings: synchronous: %w", err)
	}
	if err := conn.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return store.Diagnosis{}, fmt.Errorf("diagnose settings: journal mode: %w", err)
	}
	d.Settings["synchronous"] = syncNames[sync]
	if d.Settings["synchronous"] == "" {
		d.Settings["synchronous"] = strconv.Itoa(sync)
	}
	d.Settings["journal_mode"] = strings.ToLower(mode)
	return d, nil
}

// DiagnoseCommits commits n one-row transactions to a scratch file beside
// the store, in WAL mode with the store's synchronous setting: the same
// file system and the same waits for the disk as the store's commits,
// without touching the store.
func (s *Store) DiagnoseCommits(ctx context.Context, n int) (took []time.Duration, err error) {
	if err := s.ready(store.CheckDiagnoseCommits(n), "diagnose commits", ""); err != nil {
		return nil, err
	}
	var tag [6]byte
	_, _ = rand.Read(tag[:])
	path := filepath.Join(filepath.Dir(s.path), "."+filepath.Base(s.path)+".doctor-"+hex.EncodeToString(tag[:]))
	defer func() {
		var errs []error
		for _, p := range []string{path, path + "-wal", path + "-shm", path + "-journal"} {
			if rerr := os.Remove(p); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				errs = append(errs, rerr)
			}
		}
		if rerr := errors.Join(errs...); rerr != nil && err == nil {
			err = fmt.Errorf("diagnose commits: remove scratch file: %w", rerr)
		}
	}()
	uri, err := fileURI(path)
	if err != nil {
		return nil, fmt.Errorf("diagnose commits: %w", err)
	}
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous("+s.cfg.sync.String()+")")
	db, err := sql.Open(s.cfg.driver, uri+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("diagnose commits: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, "CREATE TABLE probe (n INTEGER NOT NULL)"); err != nil {
		return nil, fmt.Errorf("diagnose commits: scratch file %s: %w", path, err)
	}
	took = make([]time.Duration, 0, n)
	for i := range n {
		begin := time.Now()
		if _, err := db.ExecContext(ctx, "INSERT INTO probe (n) VALUES (?)", i); err != nil {
			return nil, fmt.Errorf("diagnose commits: commit %d: %w", i+1, err)
		}
		took = append(took, time.Since(begin))
	}
	if err := db.Close(); err != nil {
		return nil, fmt.Errorf("diagnose commits: close scratch file: %w", err)
	}
	return took, nil
}

// DiagnoseNodes lists the nodes holding live leases and the leaderships
// that have not run out.
func (s *Store) DiagnoseNodes(ctx context.Context) (store.Nodes, error) {
	if s.closed.Load() {
		return store.Nodes{}, ErrClosed
	}
	now := micros(s.now())
	var (
		out store.Nodes
		err error
	)
	out.Holders, err = readAll(ctx, s, store.ScanLeaseHolder, `SELECT lease_owner, count(*) FROM runs INDEXED BY runs_lease_due
		WHERE status IN ('queued', 'running') AND lease_expires > ?1 AND lease_owner <> ''
		GROUP BY lease_owner ORDER BY lease_owner LIMIT ?2`, now, store.MaxListLimit)
	if err == nil {
		out.Leaders, err = readAll(ctx, s, scanLeadership, `SELECT name, leader_id, elected_at, expires_at FROM leaders
			WHERE expires_at > ?1 ORDER BY name LIMIT ?2`, now, store.MaxListLimit)
	}
	return store.Result(out, err, "diagnose nodes", "")
}

func scanLeadership(sc scanner) (store.Leadership, error) {
	var (
		l         store.Leadership
		at, until int64
	)
	err := sc.Scan(&l.Name, &l.LeaderID, &at, &until)
	l.ElectedAt, l.ExpiresAt = fromMicros(at), fromMicros(until)
	return l, err
}
