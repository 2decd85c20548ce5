package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hitch-dev/hitch/store"
)

var _ store.Store = (*Store)(nil)

// ErrClosed is returned by every method called after Close, and to writes
// that were still queued when Close was called (none of them was written).
var ErrClosed = errors.New("sqlite store is closed")

// ErrReadOnly is returned by every write method of a store opened with
// ReadOnly; nothing was written.
var ErrReadOnly = errors.New("sqlite store is opened read-only")

// applicationID marks a file as a hitch store ("HTCH"), so that opening some
// other application's SQLite database fails instead of adding tables to it.
const applicationID = 0x48544348

//go:embed migrations/*.sql
var migrationFS embed.FS

// Store is a store.Store kept in one SQLite file. It is safe for concurrent
// use. Writes go through a single writer goroutine that commits them in
// groups; reads use a separate pool of connections.
type Store struct {
	path  string
	cfg   config
	wdb   *sql.DB // one connection, owned by the writer goroutine
	wconn *sql.Conn
	stmts *writeStmts
	rdb   *sql.DB // read pool
	reads reads

	queue chan *request
	// urgent carries the writes that keep leases alive (LeaseRenewMany),
	// claims of due runs and the creation of runs: the writer takes them
	// before the queue, in a transaction of their own, so a backlog of
	// appends can neither make a live node lose its leases nor hold a
	// start's answer for a whole batch.
	urgent  chan *request
	stop    chan struct{} // closed by Close
	exited  chan struct{} // closed when the writer goroutine returns
	mu      sync.RWMutex  // guards closing against senders joining
	closing bool
	senders sync.WaitGroup // callers between the closed check and the queue
	closed  atomic.Bool
	once    sync.Once
	err     error    // Close's answer
	notify  notifier // Wake's channel, signalled by the writer
	// commits counts the writer's commits, for the checkpointer.
	commits atomic.Uint64
	ckdb    *sql.DB // the checkpointer's connection; nil without one
	ckpt    *checkpointer
}

// Open opens the store at path, creating the file when it does not exist and
// bringing its schema up to date. The directory must exist. A file written by
// a newer hitch (a higher schema version) is refused.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("open store %q: %w", path, err)
	}
	uri, err := fileURI(path)
	if err != nil {
		return nil, fmt.Errorf("open store %q: %w", path, err)
	}
	s := &Store{
		path:   path,
		cfg:    cfg,
		queue:  make(chan *request, cfg.queueSize),
		urgent: make(chan *request, 16),
		stop:   make(chan struct{}),
		exited: make(chan struct{}),
	}
	if cfg.readOnly {
		if err := s.openReadOnly(ctx, path, uri); err != nil {
			s.closeDBs()
			return nil, fmt.Errorf("open store %q read-only: %w", path, corrupt(err))
		}
		if err := checkPages(ctx, s.rdb); err != nil {
			s.closeDBs()
			return nil, fmt.Errorf("open store %q read-only: %w", path, err)
		}
		s.prepareReads(ctx)
		close(s.exited) // no writer
		return s, nil
	}
	current, err := inspect(ctx, path, uri)
	if err != nil {
		return nil, fmt.Errorf("open store %q: %w", path, err)
	}
	unlock := func() {}
	if !current { // a store being created or upgraded: one process at a time
		if unlock, err = lockOpen(ctx, path, cfg.busyTimeout); err != nil {
			return nil, fmt.Errorf("open store %q: %w", path, err)
		}
	}
	err = s.open(ctx, uri, unlock)
	if err == nil {
		err = checkPages(ctx, s.rdb)
	}
	if err != nil {
		s.closeDBs()
		return nil, fmt.Errorf("open store %q: %w", path, corrupt(err))
	}
	s.prepareReads(ctx)
	if s.ckpt != nil {
		s.ckpt.start()
	}
	go s.writeLoop()
	return s, nil
}

// openReadOnly opens only the read pool, with SQLite's read-only mode, on a
// store that must exist with this build's schema.
func (s *Store) openReadOnly(ctx context.Context, path, uri string) error {
	if fi, err := os.Stat(path); errors.Is(err, os.ErrNotExist) || (err == nil && fi.Size() == 0) {
		return errors.New("no store here (a read-only open creates nothing)")
	} else if err != nil {
		return err
	}
	if _, err := inspect(ctx, path, uri); err != nil {
		return err
	}
	q := url.Values{}
	q.Add("mode", "ro")
	q.Add("_pragma", "busy_timeout("+strconv.FormatInt(s.cfg.busyTimeout.Milliseconds(), 10)+")")
	q.Add("_pragma", "synchronous("+s.cfg.sync.String()+")")
	q.Add("_pragma", "query_only(1)")
	version, appID, err := s.openReadPool(ctx, uri+"?"+q.Encode())
	if err != nil {
		// SQLite reads a WAL-mode file through its -shm companion, which
		// it cannot create in a directory it cannot write to. With no
		// -wal file (the last writer closed cleanly) the main file holds
		// everything, and can be read as an immutable file instead.
		if fi, serr := os.Stat(path + "-wal"); serr == nil && fi.Size() > 0 {
			return fmt.Errorf("%w (the store has writes in %s-wal not yet moved into the file: open it read-write once, "+
				"or from a process that can write to its directory)", err, filepath.Base(path))
		}
		_ = s.rdb.Close()
		q.Add("immutable", "1")
		if version, appID, err = s.openReadPool(ctx, uri+"?"+q.Encode()); err != nil {
			return err
		}
	}
	names, err := migrationFS.ReadDir("migrations")
	if err != nil {
		return fmt.Errorf("read migrations: %w", err)
	}
	switch latest := len(names); {
	case appID != applicationID:
		return fmt.Errorf("file is not a hitch store (application_id %#x)", appID)
	case version > latest:
		return &store.SchemaVersionError{Have: version, Build: latest}
	case version < latest:
		return fmt.Errorf("schema version %d is older than this build's (%d); open the store read-write once to upgrade it",
			version, latest)
	}
	return nil
}

// fileURI turns a file system path into an SQLite URI, so that characters
// such as '?' and '#' in a file name are not taken for URI syntax.
func fileURI(path string) (string, error) {
	if strings.TrimSpace(path) == "" {
		return "", errors.New("path is empty")
	}
	if path == ":memory:" || strings.HasPrefix(path, "file:") {
		return "", errors.New("path must name a file, not an SQLite URI or the in-memory database")
	}
	if strings.ContainsRune(path, 0) {
		return "", errors.New("path contains a NUL byte")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	if fi, err := os.Stat(abs); err == nil && fi.IsDir() {
		return "", errors.New("path is a directory")
	}
	if fi, err := os.Stat(filepath.Dir(abs)); err != nil {
		return "", fmt.Errorf("directory: %w", err)
	} else if !fi.IsDir() {
		return "", fmt.Errorf("%s is not a directory", filepath.Dir(abs))
	}
	u := url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}
	if !strings.HasPrefix(u.Path, "/") { // Windows drive letters
		u.Path = "/" + u.Path
	}
	return u.String(), nil
}

// open opens the writer and the read pool; unlock is called once the
// opening steps that must not race with other processes are done.
func (s *Store) open(ctx context.Context, uri string, unlock func()) error {
	defer unlock() // on an early return; calling it twice is harmless
	busy := strconv.FormatInt(s.cfg.busyTimeout.Milliseconds(), 10)
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+busy+")")
	q.Add("_pragma", "synchronous("+s.cfg.sync.String()+")")
	var err error
	if s.wdb, err = sql.Open(s.cfg.driver, uri+"?"+q.Encode()); err != nil {
		return err
	}
	s.wdb.SetMaxOpenConns(1)
	s.wdb.SetMaxIdleConns(1)
	s.wdb.SetConnMaxLifetime(0)
	s.wdb.SetConnMaxIdleTime(0)
	if s.wconn, err = s.wdb.Conn(ctx); err != nil {
		return err
	}
	// A new file gives the pages that prunes free back to the file system
	// (RunPrune runs an incremental vacuum). The mode can only be chosen
	// before the file's first page is written, which switching to WAL
	// does; an older file keeps "none" until it is vacuumed once
	// (docs/retention.md).
	if err := whileBusy(ctx, s.cfg.busyTimeout, func() error {
		var objects int
		if err := s.wconn.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&objects); err != nil || objects > 0 {
			return err
		}
		_, err := s.wconn.ExecContext(ctx, "PRAGMA auto_vacuum = INCREMENTAL")
		return err
	}); err != nil {
		return fmt.Errorf("set auto_vacuum: %w", err)
	}
	// Switching a new file to WAL needs an exclusive lock, and SQLite
	// answers SQLITE_BUSY at once rather than calling the busy handler
	// when another process holds one (as when two processes create the
	// store together), so the wait on the busy timeout is done here. In
	// the same race a connection may find the rollback journal of the
	// switch already deleted by another (SQLITE_IOERR_DELETE_NOENT).
	var mode string
	if err := whileBusy(ctx, s.cfg.busyTimeout, func() error {
		return s.wconn.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode)
	}); err != nil {
		return fmt.Errorf("set journal mode: %w", err)
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("set journal mode: the file system kept %q instead of WAL", mode)
	}
	for _, p := range []string{
		"PRAGMA busy_timeout = " + busy,
		"PRAGMA synchronous = " + s.cfg.sync.String(),
		"PRAGMA foreign_keys = ON",
		// A batch's savepoints keep their undo pages in memory: a
		// temporary file costs a write call a page, and nothing in it
		// outlives the transaction.
		"PRAGMA temp_store = MEMORY",
		// With a checkpointer the writer checkpoints only when it falls
		// far behind; without one, at SQLite's default of 1,000 pages.
		"PRAGMA wal_autocheckpoint = " + strconv.Itoa(s.cfg.autocheckpoint()),
	} {
		if _, err := s.wconn.ExecContext(ctx, p); err != nil {
			return fmt.Errorf("%s: %w", strings.ToLower(p), err)
		}
	}
	if err := whileBusy(ctx, s.cfg.busyTimeout, func() error { return migrate(ctx, s.wconn) }); err != nil {
		return err
	}
	unlock()
	s.stmts = newWriteStmts(s.wconn)

	q.Add("_pragma", "query_only(1)")
	if s.rdb, err = sql.Open(s.cfg.driver, uri+"?"+q.Encode()); err != nil {
		return err
	}
	s.rdb.SetMaxOpenConns(s.cfg.readers)
	s.rdb.SetMaxIdleConns(s.cfg.readers)
	s.rdb.SetConnMaxLifetime(0)
	s.rdb.SetConnMaxIdleTime(0)
	if err := s.rdb.PingContext(ctx); err != nil {
		return fmt.Errorf("open read pool: %w", err)
	}
	if s.cfg.checkpointInterval > 0 {
		return s.openCheckpointer(uri, busy)
	}
	return nil
}

// openCheckpointer makes the checkpointer; Open starts it. Its connection is
// opened at its first checkpoint: a process that commits once and closes
// (hitch run --detach) never opens it.
func (s *Store) openCheckpointer(uri, busy string) error {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+busy+")")
	q.Add("_pragma", "synchronous("+s.cfg.sync.String()+")")
	var err error
	if s.ckdb, err = sql.Open(s.cfg.driver, uri+"?"+q.Encode()); err != nil {
		return err
	}
	s.ckdb.SetMaxOpenConns(1)
	s.ckdb.SetMaxIdleConns(1)
	s.ckdb.SetConnMaxLifetime(0)
	s.ckdb.SetConnMaxIdleTime(0)
	s.ckpt = &checkpointer{db: s.ckdb, interval: s.cfg.checkpointInterval, commits: &s.commits}
	return nil
}

// inspect refuses a file that is not a hitch store before anything is
// written to it: turning on WAL mode alone would rewrite another
// application's file. It reads the database header itself, and asks SQLite
// (read-only) only whether a file without an application id holds tables.
// A missing or empty file is a new store. A hitch store in WAL mode may have
// a stale header in the main file; a hitch store is never in rollback mode,
// so that header is trusted, and migrate checks again under the write lock.
//
// current reports a hitch store in WAL mode at this build's schema version,
// whose opening steps change nothing.
func inspect(ctx context.Context, path, uri string) (current bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	var h [100]byte
	n, err := io.ReadFull(f, h[:])
	switch {
	case n == 0:
		return false, nil // empty: a new store, or one being created by another process
	case err != nil || string(h[:16]) != "SQLite format 3\x00":
		return false, errors.New("file is not an SQLite database")
	}
	version := binary.BigEndian.Uint32(h[60:64])
	appID := binary.BigEndian.Uint32(h[68:72])
	wal := h[18] == 2 && h[19] == 2
	names, err := migrationFS.ReadDir("migrations")
	if err != nil {
		return false, fmt.Errorf("read migrations: %w", err)
	}
	switch {
	case appID != 0 && appID != applicationID:
		return false, fmt.Errorf("file belongs to another application (application_id %#x)", appID)
	case version > 0 && appID != applicationID:
		return false, fmt.Errorf("file is not a hitch store (schema version %d without the hitch application id)", version)
	case appID == applicationID || wal:
		return appID == applicationID && wal && int(version) == len(names), nil
	}
	// An SQLite file in rollback mode without an application id: hitch
	// takes it only when it is empty.
	db, err := sql.Open(driverName, uri+"?mode=ro")
	if err != nil {
		return false, err
	}
	defer db.Close()
	// A store being created by another process holds a lock here for a
	// moment (a new file is written in rollback mode until it switches
	// to WAL).
	var objects int
	if err := whileBusy(ctx, DefaultBusyTimeout, func() error {
		return db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&objects)
	}); err != nil {
		return false, fmt.Errorf("inspect schema: %w", err)
	}
	if objects > 0 {
		// Another process may have made the store meanwhile: its header
		// says so now, and migrate checks again under the write lock.
		var id int
		if err := db.QueryRowContext(ctx, "PRAGMA application_id").Scan(&id); err == nil && id == applicationID {
			return false, nil
		}
		return false, fmt.Errorf("file is not a hitch store (it holds %d schema objects and no schema version)", objects)
	}
	return false, nil
}

// whileBusy calls fn until it returns anything but a transient error, for
// at most timeout, pausing a little longer each time.
func whileBusy(ctx context.Context, timeout time.Duration, fn func() error) error {
	deadline := time.Now().Add(timeout)
	pause := time.Millisecond
	for {
		err := fn()
		if !transient(err) || time.Now().Add(pause).After(deadline) {
			return err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return errors.Join(err, ctx.Err())
		case <-t.C:
		}
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// openReadPool opens the read pool on dsn and reads the file's schema
// version and application id through it.
func (s *Store) openReadPool(ctx context.Context, dsn string) (version, appID int, err error) {
	if s.rdb, err = sql.Open(s.cfg.driver, dsn); err != nil {
		return 0, 0, err
	}
	s.rdb.SetMaxOpenConns(s.cfg.readers)
	s.rdb.SetMaxIdleConns(s.cfg.readers)
	s.rdb.SetConnMaxLifetime(0)
	s.rdb.SetConnMaxIdleTime(0)
	if err := s.rdb.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return 0, 0, fmt.Errorf("read schema version: %w", err)
	}
	if err := s.rdb.QueryRowContext(ctx, "PRAGMA application_id").Scan(&appID); err != nil {
		return 0, 0, fmt.Errorf("read application id: %w", err)
	}
	return version, appID, nil
}

// migrate brings the schema to the newest version in one transaction.
func migrate(ctx context.Context, conn *sql.Conn) (err error) {
	names, err := migrationFS.ReadDir("migrations")
	if err != nil {
		return fmt.Errorf("read migrations: %w", err)
	}
	latest := len(names)
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer func() {
		if err != nil {
			_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
		}
	}()
	var version, appID int
	if err := conn.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if err := conn.QueryRowContext(ctx, "PRAGMA application_id").Scan(&appID); err != nil {
		return fmt.Errorf("read application id: %w", err)
	}
	if appID != 0 && appID != applicationID {
		return fmt.Errorf("file belongs to another application (application_id %#x)", appID)
	}
	if version > latest {
		return &store.SchemaVersionError{Have: version, Build: latest}
	}
	if version > 0 && appID != applicationID {
		return fmt.Errorf("file is not a hitch store (schema version %d without the hitch application id)", version)
	}
	if version == 0 {
		var n int
		if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema").Scan(&n); err != nil {
			return fmt.Errorf("inspect schema: %w", err)
		}
		if n > 0 {
			return fmt.Errorf("file is not a hitch store (it holds %d schema objects and no schema version)", n)
		}
	}
	for i := version; i < latest; i++ {
		body, err := migrationFS.ReadFile("migrations/" + names[i].Name())
		if err != nil {
			return fmt.Errorf("read migration %s: %w", names[i].Name(), err)
		}
		if _, err := conn.ExecContext(ctx, string(body)); err != nil {
			return fmt.Errorf("apply migration %s: %w", names[i].Name(), err)
		}
	}
	if version < latest {
		if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", latest)); err != nil {
			return fmt.Errorf("set schema version: %w", err)
		}
		if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d", applicationID)); err != nil {
			return fmt.Errorf("set application id: %w", err)
		}
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("commit migration: %w", err)
	}
	return nil
}

// Now returns the store clock: the process clock in UTC, truncated to the
// microsecond precision in which times are stored.
func (s *Store) Now(ctx context.Context) (time.Time, error) {
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	return s.now(), nil
}

func (s *Store) now() time.Time {
	return s.cfg.clock().UTC().Truncate(time.Microsecond)
}

// Close stops the writer, answers writes still queued with ErrClosed, and
// closes the database. Writes already being committed finish first. Close is
// idempotent. Leases are not released.
func (s *Store) Close() error {
	s.once.Do(func() {
		s.mu.Lock()
		s.closing = true
		close(s.stop)
		s.mu.Unlock()
		s.closed.Store(true)
		<-s.exited
		if s.ckpt != nil {
			s.ckpt.halt()
		}
		s.err = s.closeDBs()
		if s.err != nil {
			s.err = fmt.Errorf("close store %q: %w", s.path, s.err)
		}
	})
	return s.err
}

func (s *Store) closeDBs() error {
	var errs []error
	errs = append(errs, s.reads.close())
	if s.ckdb != nil {
		errs = append(errs, s.ckdb.Close())
	}
	if s.rdb != nil {
		errs = append(errs, s.rdb.Close())
	}
	if s.stmts != nil {
		errs = append(errs, s.stmts.close())
	}
	if s.wconn != nil {
		errs = append(errs, s.wconn.Close())
	}
	if s.wdb != nil {
		errs = append(errs, s.wdb.Close())
	}
	return errors.Join(errs...)
}

// micros stores a time; the zero time is stored as 0.
func micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

// fromMicros reverses micros.
func fromMicros(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMicro(v).UTC()
}
