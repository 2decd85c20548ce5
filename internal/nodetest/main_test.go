package nodetest

import (
	"context"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/hitch-dev/hitch/internal/pgtest"
	"github.com/hitch-dev/hitch/store/postgres"
)

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) != "" {
		os.Exit(workerMain())
	}
	goleak.VerifyTestMain(m)
}

// newSchema returns the name of a schema of the test's own (see
// pgtest.Schema).
func newSchema(t testing.TB) string { return pgtest.Schema(t, "hitch_nodes_") }

// openStore opens a store of its own (a pool and a listener, as a node
// has) in schema; it is closed when the test ends.
func openStore(t testing.TB, url, schema string, opts ...postgres.Option) *postgres.Store {
	t.Helper()
	st, err := postgres.Open(context.Background(), url, append([]postgres.Option{postgres.WithSchema(schema)}, opts...)...)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
