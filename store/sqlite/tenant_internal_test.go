package sqlite

import (
	"testing"

	"github.com/hitch-dev/hitch/store/storetest"
)

// TestTenantMigrationKeepsRows upgrades a file written before tenants: its
// runs and sessions belong to the default tenant and are listed under it.
func TestTenantMigrationKeepsRows(t *testing.T) {
	t.Parallel()
	path := oldFile(t, 4,
		`INSERT INTO runs (id, root_id, agent, version, input_hash, depth, status, position, created_at, updated_at)
			VALUES ('old', 'old', 'a', 1, '', 0, 'queued', 1, 1000, 1000)`,
		`INSERT INTO journal (run_seq, pos, kind, at, data) VALUES (1, 1, 'run.started', 1000, '{"input":"Fix the build"}')`,
		`INSERT INTO sessions (id, agent, version, metadata, created_at, updated_at) VALUES ('s', 'a', 1, '{}', 1000, 1000)`)

	storetest.CheckTenantMigration(t, openT(t, path))
}
