package postgres_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/hitch-dev/hitch/internal/pgtest"
	"github.com/hitch-dev/hitch/store/storetest"
)

// TestForkedFromMigrationBackfills upgrades a schema written before runs
// kept their fork's source: a fork made then gets its source from its
// run.started, and any other run gets none.
// oldSchema writes a schema as the first n migrations left it, then runs
// stmts in it, and returns its name: a store written by an older build.
func oldSchema(t *testing.T, n int, stmts ...string) string {
	t.Helper()
	ctx, url, schema := t.Context(), pgtest.URL(t), newSchema(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	all := []string{
		`CREATE SCHEMA ` + pgx.Identifier{schema}.Sanitize(),
		`SET LOCAL search_path TO ` + pgx.Identifier{schema}.Sanitize(),
		`CREATE TABLE hitch_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
	}
	files, err := filepath.Glob("migrations/*.up.sql")
	if err != nil || len(files) < n {
		t.Fatalf("%d migrations, want %d: %v", len(files), n, err)
	}
	for i, f := range files[:n] {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(f), ".up.sql")[4:]
		all = append(all, string(body), fmt.Sprintf(`INSERT INTO hitch_migrations (version, name) VALUES (%d, '%s')`, i+1, name))
	}
	for _, q := range append(all, stmts...) {
		if _, err := tx.Exec(ctx, q); err != nil {
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return schema
}

// TestForkedFromMigrationBackfills upgrades a schema written before runs
// kept their fork's source: a fork made then gets its source from its
// run.started, and any other run gets none.
func TestForkedFromMigrationBackfills(t *testing.T) {
	t.Parallel()
	schema := oldSchema(t, 10,
		`INSERT INTO hitch_runs (id, root_id, agent, version, input_hash, depth, status, position, created_at, updated_at)
			VALUES ('src', 'src', 'a', 1, '', 0, 'queued', 1, now(), now()), ('fork', 'fork', 'a', 1, '', 0, 'queued', 1, now(), now()),
			('odd', 'odd', 'a', 1, '', 0, 'queued', 1, now(), now())`,
		`INSERT INTO hitch_journal (run_seq, pos, kind, at, data) SELECT seq, 1, 'run.started', now(),
			CASE id WHEN 'fork' THEN '{"input":"x", "forked_from": {"run":"src","pos":1,"replay":true}}'::json
				WHEN 'odd' THEN '{"input":"x","forked_from":null}'::json ELSE '{"input":"x"}'::json END FROM hitch_runs`)
	s := openIn(t, schema)
	defer s.Close()
	storetest.CheckForkMigration(t, s)
}
