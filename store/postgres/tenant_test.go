package postgres_test

import (
	"testing"

	"github.com/hitch-dev/hitch/store/storetest"
)

// TestTenantMigrationKeepsRows upgrades a schema written before tenants:
// its runs and sessions belong to the default tenant and are listed under
// it.
func TestTenantMigrationKeepsRows(t *testing.T) {
	t.Parallel()
	schema := oldSchema(t, 3,
		`INSERT INTO hitch_runs (id, root_id, agent, version, input_hash, depth, status, position, created_at, updated_at)
			VALUES ('old', 'old', 'a', 1, '', 0, 'queued', 1, now(), now())`,
		`INSERT INTO hitch_journal (run_seq, pos, kind, at, data) SELECT seq, 1, 'run.started', now(), '{"input":"Fix the build"}' FROM hitch_runs`,
		`INSERT INTO hitch_sessions (id, agent, version, metadata, created_at, updated_at) VALUES ('s', 'a', 1, '{}', now(), now())`)

	s := openIn(t, schema)
	defer s.Close()
	storetest.CheckTenantMigration(t, s)
}
