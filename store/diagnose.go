package store

import (
	"context"
	"fmt"
	"time"
)

// Diagnoser is a Store that reports on the deployment beneath it, for
// hitch doctor (package doctor): the settings that decide whether a commit
// survives a crash, how long a commit takes there, and which nodes are
// alive. Both drivers implement it. It only reads and reports: what a
// value means, and whether it is good, is decided by package doctor.
type Diagnoser interface {
	// DiagnoseSettings reads the store's schema version and the settings
	// that decide durability, as the database reports them to this
	// connection.
	DiagnoseSettings(ctx context.Context) (Diagnosis, error)
	// DiagnoseCommits commits n one-row transactions (1 to
	// MaxDiagnoseCommits), each on its own, to a scratch table or file
	// made for the call beside the store, and returns how long each
	// commit took. The scratch is removed before it returns, whatever
	// happened; hitch's own tables are never written.
	DiagnoseCommits(ctx context.Context, n int) ([]time.Duration, error)
	// DiagnoseNodes lists the nodes that hold live leases, by the
	// store's clock, and the leaderships that are held.
	DiagnoseNodes(ctx context.Context) (Nodes, error)
}

// MaxDiagnoseCommits bounds the commits of one DiagnoseCommits call.
const MaxDiagnoseCommits = 1000

// CheckDiagnoseCommits checks DiagnoseCommits's n.
func CheckDiagnoseCommits(n int) error {
	if n < 1 || n > MaxDiagnoseCommits {
		return fmt.Errorf("commits: %d, want 1 to %d", n, MaxDiagnoseCommits)
	}
	return nil
}

// Diagnosis is what DiagnoseSettings reads.
type Diagnosis struct {
	// Driver names the driver: "sqlite" or "postgres".
	Driver string
	// Schema is the store's schema version; Build the newest this build
	// knows.
	Schema, Build int
	// Path is a SQLite store's file; empty for PostgreSQL.
	Path string
	// Settings are the durability settings by their database's names
	// (SQLite "synchronous", "journal_mode"; PostgreSQL
	// "synchronous_commit", "fsync", "wal_level", "full_page_writes"),
	// with their values as the database spells them.
	Settings map[string]string
}

// Nodes is what DiagnoseNodes reads.
type Nodes struct {
	// Holders are the nodes holding live leases, at most MaxListLimit of
	// them, by name, with how many runs each holds.
	Holders []LeaseHolder
	// Leaders are the leaderships that have not run out.
	Leaders []Leadership
}

// LeaseHolder is a node and the number of live leases it holds.
type LeaseHolder struct {
	Node string
	Runs int
}

// ScanLeaseHolder reads a row of a node's name and the live leases it
// holds.
func ScanLeaseHolder(sc Scanner) (LeaseHolder, error) {
	var h LeaseHolder
	return h, sc.Scan(&h.Node, &h.Runs)
}

// SchemaVersionError is returned by a driver's Open when the store's
// schema was written by a newer hitch than this build: this build refuses
// to run on it.
type SchemaVersionError struct {
	// Schema names a PostgreSQL schema; empty for SQLite.
	Schema string
	// Have is the store's schema version, Build the newest this build
	// knows.
	Have, Build int
}

func (e *SchemaVersionError) Error() string {
	if e.Schema != "" {
		return fmt.Sprintf("schema %q is at version %d, newer than this build knows (%d); use a newer hitch", e.Schema, e.Have, e.Build)
	}
	return fmt.Sprintf("schema version %d is newer than this build supports (%d); use a newer hitch", e.Have, e.Build)
}
