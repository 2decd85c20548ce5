// Package sqlite is hitch's embedded store: a store.Store kept in one SQLite
// file, in pure Go (no cgo), for one node running many runners.
//
// Writes (creating runs, appending, claiming, renewing, cancelling) are
// queued to a single writer goroutine. It takes whatever is waiting, up to
// the batch size, and commits it in one transaction, each write in its own
// savepoint, so one write's conflict does not fail the others. A write that
// finds the writer idle commits at once; no timer waits for company. Each
// caller is answered only after the commit is on disk. Reads use their own
// connections and, in WAL mode, never wait for the writer. The WAL is copied
// into the file by a connection of its own every second in which something
// was committed (WithCheckpointInterval), not inside the writer's commits.
//
// The store is a store.Notifier for the process that opened it: the
// writer signals Wake after the commit of a write that may have made a run
// claimable. Other processes on the file are not notified; their sweep
// interval bounds how late they see such writes.
//
// Durability defaults to SyncFull (synchronous=FULL): an acknowledged write
// survives a power loss. SyncNormal skips the sync at each commit and only
// guards against a crash of the process.
//
// Times are stored as microseconds since the Unix epoch, in UTC; the store
// clock is the process clock. The schema is versioned with PRAGMA
// user_version and migrated on Open; a file from a newer hitch is refused.
//
// The SQL driver is modernc.org/sqlite. Building with -tags ncruces swaps in
// github.com/ncruces/go-sqlite3 instead; docs/store-sqlite.md records how the
// two compare on hitch's own append path.
package sqlite
