package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/hitch-dev/hitch/store"
)

//go:embed migrations/*.up.sql
var migrationFS embed.FS

// Migration is one numbered change of the schema, from the file
// migrations/NNN_name.up.sql of this package.
type Migration struct {
	Version int
	Name    string
	sql     string
}

// migrations are the embedded migrations in order; their versions run
// 1..n without gaps (a test keeps them so).
var migrations = mustLoadMigrations()

// SchemaVersion is the newest schema version this build knows.
var SchemaVersion = len(migrations)

func mustLoadMigrations() []Migration {
	ms, err := loadMigrations(migrationFS)
	if err != nil {
		panic(err)
	}
	return ms
}

func loadMigrations(fsys fs.FS) ([]Migration, error) {
	names, err := fs.Glob(fsys, "migrations/*.up.sql")
	if err != nil {
		return nil, err
	}
	ms := make([]Migration, 0, len(names))
	for i, path := range names { // fs.Glob sorts, and the numbers are zero-padded
		base := strings.TrimSuffix(strings.TrimPrefix(path, "migrations/"), ".up.sql")
		num, name, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || name == "" {
			return nil, fmt.Errorf("migration %s: want NNN_name.up.sql", path)
		}
		if v != i+1 {
			return nil, fmt.Errorf("migration %s: version %d, want %d (versions run 1..n without gaps)", path, v, i+1)
		}
		body, err := fs.ReadFile(fsys, path)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: name, sql: string(body)})
	}
	return ms, nil
}

// Migrate brings the schema named by the options (WithSchema, else the
// connection's search_path) up to SchemaVersion in one transaction, under a
// lock that makes concurrent migrations of one schema wait for each other.
// It returns the migrations it applied, or with dryRun the ones it would
// apply, writing nothing. A schema newer than this build is refused.
//
// Migrate is what a command such as hitch migrate calls; Open also runs it
// unless WithAutoMigrate(false) is given.
func Migrate(ctx context.Context, connString string, dryRun bool, opts ...Option) ([]Migration, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	cc, err := pgx.ParseConfig(connString)
	if err != nil {
		return nil, fmt.Errorf("migrate: parse connection string: %w", err)
	}
	cfg.applyConn(cc)
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("migrate: connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	ms, err := migrate(ctx, conn, cfg.schema, dryRun)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	return ms, nil
}

// migrate applies (or with dryRun lists) the pending migrations.
func migrate(ctx context.Context, conn *pgx.Conn, schema string, dryRun bool) (pending []Migration, err error) {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback(context.WithoutCancel(ctx))
		}
	}()
	if schema == "" {
		var cur *string
		if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&cur); err != nil {
			return nil, fmt.Errorf("read current schema: %w", err)
		}
		if cur == nil {
			return nil, errors.New("the search_path names no schema that exists; create one or use WithSchema")
		}
		schema = *cur
	}
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('hitch migrate ' || $1, 0))`, schema); err != nil {
		return nil, fmt.Errorf("lock schema %q: %w", schema, err)
	}
	version, exists, err := schemaVersion(ctx, tx, schema)
	if err != nil {
		return nil, err
	}
	if version > SchemaVersion {
		return nil, newerError(schema, version)
	}
	pending = migrations[version:]
	if dryRun || len(pending) == 0 {
		return pending, tx.Rollback(ctx)
	}
	if !exists {
		if _, err := tx.Exec(ctx, `CREATE SCHEMA `+pgx.Identifier{schema}.Sanitize()); err != nil {
			return nil, fmt.Errorf("create schema %q: %w", schema, err)
		}
	}
	q := pgx.Identifier{schema, "hitch_migrations"}.Sanitize()
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+q+` (
		version    integer     PRIMARY KEY,
		name       text        NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return nil, fmt.Errorf("create migrations table: %w", err)
	}
	// The migrations name no schema: they land in the first schema of the
	// search_path, which for this transaction is the one being migrated.
	if _, err := tx.Exec(ctx, `SELECT set_config('search_path', $1, true)`, pgx.Identifier{schema}.Sanitize()); err != nil {
		return nil, fmt.Errorf("set search_path: %w", err)
	}
	for _, m := range pending {
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return nil, fmt.Errorf("apply migration %03d_%s: %w", m.Version, m.Name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+q+` (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
			return nil, fmt.Errorf("record migration %03d_%s: %w", m.Version, m.Name, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("commit migrations: %w", err)
	}
	return pending, nil
}

// schemaVersion reads the newest applied migration of schema, 0 when none
// was; exists says whether the schema itself exists.
func schemaVersion(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, schema string) (version int, exists bool, err error) {
	var table *string
	err = q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1),
		to_regclass(quote_ident($1) || '.hitch_migrations')::text`, schema).Scan(&exists, &table)
	if err != nil {
		return 0, false, fmt.Errorf("read schema version of %q: %w", schema, err)
	}
	if table == nil {
		return 0, exists, nil
	}
	err = q.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+pgx.Identifier{schema, "hitch_migrations"}.Sanitize()).Scan(&version)
	if err != nil {
		return 0, exists, fmt.Errorf("read schema version of %q: %w", schema, err)
	}
	return version, exists, nil
}

func newerError(schema string, version int) error {
	return &store.SchemaVersionError{Schema: schema, Have: version, Build: SchemaVersion}
}
