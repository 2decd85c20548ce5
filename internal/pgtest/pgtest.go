// Package pgtest gives tests a PostgreSQL database of their own: the URL
// of HITCH_TEST_POSTGRES (a test is skipped without it) and schemas that
// are dropped, with everything in them, when the test ends.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Env names the variable that holds the tests' database URL.
const Env = "HITCH_TEST_POSTGRES"

// URL is the database the tests use, from HITCH_TEST_POSTGRES; without it
// t is skipped.
func URL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(Env)
	if u == "" {
		t.Skip(Env + " is not set: set it to a postgres:// URL of a database the tests may create schemas in")
	}
	return u
}

// Schema returns the name of a schema of t's own, prefix and random
// letters, which is dropped with everything in it when t ends. It is not
// created: opening a store in it creates it.
func Schema(t testing.TB, prefix string) string {
	t.Helper()
	url := URL(t)
	b := make([]byte, 6)
	rand.Read(b)
	name := prefix + hex.EncodeToString(b)
	DropAtEnd(t, url, name)
	return name
}

// DropAtEnd drops schema, with everything in it, from the database at url
// when t ends.
func DropAtEnd(t testing.TB, url, schema string) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
}

// WithParam adds key=value to a connection URL's query.
func WithParam(url, key, value string) string {
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	return url + sep + key + "=" + value
}
