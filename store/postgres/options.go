package postgres

import (
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Defaults and bounds of the options.
const (
	// DefaultPollInterval is how often Wake fires when nothing was
	// notified: the fallback for a lost notification, a listener that is
	// reconnecting, a wake time that came, and the only source of wakes
	// with WithPollOnly.
	DefaultPollInterval = time.Second
	MinPollInterval     = time.Millisecond
	MaxPollInterval     = time.Hour
	// MaxConns bounds WithMaxConns.
	MaxConns = 1000
	// maxSchemaBytes is PostgreSQL's identifier length.
	maxSchemaBytes = 63
)

// Option configures Open and Migrate.
type Option func(*config)

type config struct {
	schema       string
	schemaSet    bool
	maxConns     int // 0: the URL's pool_max_conns, or pgxpool's default
	maxConnsSet  bool
	autoMigrate  bool
	pollOnly     bool
	pollInterval time.Duration
	clock        func() time.Time // nil: database time
	tracer       pgx.QueryTracer  // a test's, to see every statement
}

func defaultConfig() config {
	return config{autoMigrate: true, pollInterval: DefaultPollInterval}
}

func (c config) validate() error {
	switch {
	case c.schemaSet && c.schema == "":
		return fmt.Errorf("WithSchema: the name is empty")
	case len(c.schema) > maxSchemaBytes:
		return fmt.Errorf("WithSchema: %q is longer than %d bytes", c.schema, maxSchemaBytes)
	case c.maxConnsSet && (c.maxConns < 1 || c.maxConns > MaxConns):
		return fmt.Errorf("WithMaxConns: %d is outside 1..%d", c.maxConns, MaxConns)
	case c.pollInterval < MinPollInterval || c.pollInterval > MaxPollInterval:
		return fmt.Errorf("WithPollInterval: %v is outside %v..%v", c.pollInterval, MinPollInterval, MaxPollInterval)
	}
	for _, r := range c.schema {
		if r == 0 {
			return fmt.Errorf("WithSchema: %q contains a NUL byte", c.schema)
		}
	}
	return nil
}

// WithSchema keeps hitch's tables in the named schema: every connection of
// the store is opened with search_path set to it, and Migrate creates it
// when it does not exist. Default: the connection's own search_path (for
// most roles, public).
func WithSchema(name string) Option {
	return func(c *config) { c.schema, c.schemaSet = name, true }
}

// WithMaxConns bounds the store's connection pool (the listener of Wake
// uses one more connection of its own). Default: the URL's pool_max_conns,
// else pgxpool's default of max(4, number of CPUs). Range 1..1000.
func WithMaxConns(n int) Option {
	return func(c *config) { c.maxConns, c.maxConnsSet = n, true }
}

// WithAutoMigrate says whether Open brings the schema up to date. With
// false, Open refuses a schema that is behind and asks for a migration
// (Migrate, or hitch migrate). Default true.
func WithAutoMigrate(on bool) Option { return func(c *config) { c.autoMigrate = on } }

// WithPollOnly makes Wake rely on polling alone, for connection poolers
// that cannot hold a LISTEN (PgBouncer in transaction mode). Default false.
func WithPollOnly(on bool) Option { return func(c *config) { c.pollOnly = on } }

// WithPollInterval sets how often Wake fires without a notification.
// Default 1s, range 1ms..1h.
func WithPollInterval(d time.Duration) Option { return func(c *config) { c.pollInterval = d } }

// WithClock replaces database time with now, for tests that pin or advance
// the clock. Every statement is then given now's reading (in UTC, to the
// microsecond) instead of reading the database's clock. Default: database
// time. A nil clock restores database time.
func WithClock(now func() time.Time) Option { return func(c *config) { c.clock = now } }
