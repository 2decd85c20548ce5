package nodetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"

	"github.com/hitch-dev/hitch/store/postgres"
)

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) != "" {
		os.Exit(workerMain())
	}
	goleak.VerifyTestMain(m)
}

// testURL is the database the tests use, from HITCH_TEST_POSTGRES; without
// it the test is skipped.
func testURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("HITCH_TEST_POSTGRES")
	if u == "" {
		t.Skip("HITCH_TEST_POSTGRES is not set: set it to a postgres:// URL of a database the tests may create schemas in")
	}
	return u
}

// newSchema returns a schema name of the test's own; the schema is created
// by the first Open and dropped with everything in it when the test ends.
func newSchema(t testing.TB) string {
	t.Helper()
	url := testURL(t)
	b := make([]byte, 6)
	rand.Read(b)
	name := "hitch_nodes_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Errorf("drop schema %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", name, err)
		}
	})
	return name
}

// withParam adds key=value to a connection URL's query.
func withParam(url, key, value string) string {
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + key + "=" + value
}

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
