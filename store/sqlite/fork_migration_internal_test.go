package sqlite

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/hitch-dev/hitch/store/storetest"
)

// oldFile writes a file as the first n migrations left it, then runs stmts
// on it, and returns its path: a store written by an older build.
func oldFile(t *testing.T, n int, stmts ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "old.db")
	names, err := migrationFS.ReadDir("migrations")
	if err != nil || len(names) < n {
		t.Fatalf("%d migrations, want %d: %v", len(names), n, err)
	}
	var all []string
	for _, f := range names[:n] {
		body, err := migrationFS.ReadFile("migrations/" + f.Name())
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, string(body))
	}
	all = append(all, stmts...)
	all = append(all, fmt.Sprintf("PRAGMA user_version = %d", n), fmt.Sprintf("PRAGMA application_id = %d", applicationID))
	rawExec(t, path, all...)
	return path
}

// TestForkedFromMigrationBackfills upgrades a file written before runs kept
// their fork's source: a fork made then gets its source from its
// run.started, and any other run gets none.
func TestForkedFromMigrationBackfills(t *testing.T) {
	t.Parallel()
	path := oldFile(t, 10,
		`INSERT INTO runs (id, root_id, agent, version, input_hash, depth, status, position, created_at, updated_at)
			VALUES ('src', 'src', 'a', 1, '', 0, 'queued', 1, 1000, 1000), ('fork', 'fork', 'a', 1, '', 0, 'queued', 1, 1000, 1000),
			('odd', 'odd', 'a', 1, '', 0, 'queued', 1, 1000, 1000)`,
		`INSERT INTO journal (run_seq, pos, kind, at, data) VALUES
			(1, 1, 'run.started', 1000, '{"input":"x"}'),
			(2, 1, 'run.started', 1000, '{"input":"x","forked_from":{"run":"src","pos":1,"replay":true}}'),
			(3, 1, 'run.started', 1000, '{"input":"x","forked_from":null}')`)
	storetest.CheckForkMigration(t, openT(t, path))
}
