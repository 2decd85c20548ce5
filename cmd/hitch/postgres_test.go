package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hitch-dev/hitch/internal/pgtest"
)

// TestCommandsOnPostgres runs the CLI unchanged on a PostgreSQL store: the
// schema is migrated by hitch migrate, a run is started and read back, and
// a read command refuses a schema that is behind instead of migrating it.
func TestCommandsOnPostgres(t *testing.T) {
	base := pgtest.URL(t)
	schema := pgtest.Schema(t, "cli_")
	db := pgtest.WithParam(base, "schema", schema)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "hitch.yaml")
	files := map[string]string{
		"hitch.yaml":  "models:\n  m: {provider: scripted, script: script.yaml}\nagents:\n  - {name: hello, model: m, policy: allow_all}\n",
		"script.yaml": "turns:\n  - text: hello from postgres\n",
	}
	writeFilesIn(t, dir, files)

	code, out, errOut := cli(t, "runs", "list", "-c", cfg, "--db", db)
	if code == exitOK || !strings.Contains(errOut, "migrat") {
		t.Errorf("a read command on an empty schema: exit %d, %s%s", code, out, errOut)
	}
	code, out, errOut = cli(t, "migrate", "--dry-run", "-c", cfg, "--db", db)
	if code != exitOK || !strings.Contains(out, "would apply 001") {
		t.Fatalf("migrate --dry-run: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = cli(t, "migrate", "-c", cfg, "--db", db)
	if code != exitOK || !strings.Contains(out, "applied 001") {
		t.Fatalf("migrate: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = cli(t, "migrate", "--dry-run", "-c", cfg, "--db", db)
	if code != exitOK || !strings.Contains(out, "up to date") {
		t.Fatalf("migrate again: exit %d\n%s", code, out)
	}
	t.Setenv(databaseURLEnv, db) // the variable points every command at the database
	code, out, errOut = cli(t, "run", "-c", cfg, "--id", "pg-1", "say hello")
	if code != exitOK || !strings.Contains(out, "hello from postgres") {
		t.Fatalf("run: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = cli(t, "runs", "show", "pg-1", "-c", cfg)
	if code != exitOK || !strings.Contains(out, "completed") {
		t.Fatalf("runs show: exit %d\n%s", code, out)
	}
}
