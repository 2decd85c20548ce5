package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/hitch-dev/hitch/store"
)

var (
	_ store.Store    = (*Store)(nil)
	_ store.Notifier = (*Store)(nil)
)

// ErrClosed is returned by every method called after Close.
var ErrClosed = errors.New("postgres store is closed")

// Store is a store.Store kept in a PostgreSQL database, shared by any number
// of nodes. It is safe for concurrent use.
type Store struct {
	cfg    config
	pool   *pgxpool.Pool
	connCf *pgx.ConnConfig // for the listener's own connection
	schema string          // resolved at Open; the payload of our notifications
	closed atomic.Bool

	mu         sync.Mutex // guards closing, listening and stopListen
	closing    bool
	listening  bool
	stopListen context.CancelFunc
	wake       chan struct{} // capacity 1: wakes coalesce
	stop       chan struct{} // closed by Close
	// group queues appends for the grouping goroutine (group.go), which
	// closes grouped when it returns.
	group   chan *groupReq
	grouped chan struct{}
	wg      sync.WaitGroup
	once    sync.Once
}

// Open connects to the database at connString (a URL or keyword/value
// string, as pgx parses it), brings the schema up to date (unless
// WithAutoMigrate(false)) and returns the store. A schema newer than this
// build is refused, and so, without auto-migration, is one that is behind.
func Open(ctx context.Context, connString string, opts ...Option) (*Store, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, fmt.Errorf("open postgres store: %w", err)
	}
	pc, err := pgxpool.ParseConfig(connString)
	if err != nil {
		return nil, fmt.Errorf("open postgres store: parse connection string: %w", err)
	}
	cfg.applyConn(pc.ConnConfig)
	if cfg.maxConns > 0 {
		pc.MaxConns = int32(cfg.maxConns)
	}
	s := &Store{cfg: cfg, connCf: pc.ConnConfig.Copy(), wake: make(chan struct{}, 1), stop: make(chan struct{}),
		group: make(chan *groupReq, groupQueue), grouped: make(chan struct{})}
	if s.pool, err = pgxpool.NewWithConfig(ctx, pc); err != nil {
		return nil, fmt.Errorf("open postgres store: %w", err)
	}
	if err := s.prepare(ctx); err != nil {
		s.pool.Close()
		return nil, fmt.Errorf("open postgres store: %w", err)
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.groupLoop()
	}()
	return s, nil
}

func newConfig(opts []Option) (config, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	return cfg, cfg.validate()
}

// applyConn sets what every connection of the store needs: the schema, as
// the search_path sent when the connection starts.
func (c config) applyConn(cc *pgx.ConnConfig) {
	if c.schema != "" {
		cc.RuntimeParams["search_path"] = pgx.Identifier{c.schema}.Sanitize()
	}
	if c.tracer != nil {
		cc.Tracer = c.tracer
	}
}

// prepare migrates (or checks) the schema and learns its name.
func (s *Store) prepare(ctx context.Context) error {
	c, err := s.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer c.Release()
	if s.cfg.autoMigrate {
		if _, err := migrate(ctx, c.Conn(), s.cfg.schema, false); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
	}
	var cur *string
	if err := c.QueryRow(ctx, `SELECT current_schema()`).Scan(&cur); err != nil {
		return fmt.Errorf("read current schema: %w", err)
	}
	if cur == nil {
		return fmt.Errorf("schema %q does not exist; migrate it first", s.cfg.schema)
	}
	s.schema = *cur
	v, _, err := schemaVersion(ctx, c, s.schema)
	switch {
	case err != nil:
		return err
	case v > SchemaVersion:
		return newerError(s.schema, v)
	case v < SchemaVersion:
		return fmt.Errorf("schema %q is at version %d, older than this build needs (%d); run the migrations (hitch migrate)",
			s.schema, v, SchemaVersion)
	}
	return nil
}

// Close stops the listener and closes the pool. It is idempotent. Leases are
// not released.
func (s *Store) Close() error {
	s.once.Do(func() {
		s.closed.Store(true)
		s.mu.Lock()
		s.closing = true
		if s.stopListen != nil {
			s.stopListen()
		}
		s.mu.Unlock()
		close(s.stop)
		s.wg.Wait()
		s.pool.Close()
	})
	return nil
}

// Now returns the store clock: the database's statement_timestamp() (or
// the WithClock reading), in UTC, to the microsecond.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	if s.closed.Load() {
		return time.Time{}, ErrClosed
	}
	var now time.Time
	if err := s.pool.QueryRow(ctx, `SELECT `+nowSQL, s.clockArg()).Scan(&now); err != nil {
		return time.Time{}, fmt.Errorf("now: %w", err)
	}
	return now.UTC(), nil
}

// nowSQL is the store clock inside a statement; $1 of every statement that
// reads the clock is the test clock's reading, or NULL for database time.
//
// statement_timestamp() is fixed for the whole statement, so one statement
// judges expiry and stamps the new lease with a single instant (unlike
// clock_timestamp(), which moves from row to row and cannot drive an index
// scan), and every statement gets its own reading (unlike now(), which
// stays at the start of the transaction). Its one error is to lag by the
// time the statement waited for a row lock: a lease then looks live a
// little longer and a new lease ends a little sooner, both on the safe side.
const nowSQL = `coalesce($1::timestamptz, statement_timestamp())`

// clockArg is $1 of a statement that reads the clock.
func (s *Store) clockArg() any {
	if s.cfg.clock == nil {
		return nil
	}
	return s.cfg.clock().UTC().Truncate(time.Microsecond)
}

// Retries of a transaction that PostgreSQL aborted to break a deadlock or a
// serialization conflict. Nothing of an aborted try was written.
const maxTries = 5

// retryable says whether err is a deadlock or serialization failure.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

// translate maps PostgreSQL's errors onto the store's sentinels: a
// duplicate journal position, or a conflict that outlived its retries, is
// store.ErrConflict.
func translate(err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return err
	}
	switch pe.Code {
	case "23505": // unique_violation: another writer took the position
		return fmt.Errorf("%w (%s)", store.ErrConflict, pe.Message)
	case "40001", "40P01":
		return fmt.Errorf("%w (%s after %d tries)", store.ErrConflict, pe.Message, maxTries)
	}
	return err
}

// inTx runs fn in a transaction, again on a deadlock or serialization
// failure, and commits it. fn must be safe to run more than once.
func (s *Store) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	if s.closed.Load() {
		return ErrClosed
	}
	var err error
	for try := 0; try < maxTries; try++ {
		err = pgx.BeginFunc(ctx, s.pool, fn)
		if !retryable(err) {
			break
		}
	}
	return translate(err)
}

// retry runs a single statement's fn again on a deadlock or serialization
// failure.
func (s *Store) retry(ctx context.Context, fn func() error) error {
	if s.closed.Load() {
		return ErrClosed
	}
	var err error
	for try := 0; try < maxTries; try++ {
		if err = fn(); !retryable(err) {
			break
		}
	}
	return translate(err)
}
