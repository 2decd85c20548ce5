// Package postgres is hitch's shared store: a store.Store kept in a
// PostgreSQL database, on pgx v5, for several nodes running many runners.
//
// Every operation is one statement where it can be, so it needs no
// transaction of its own: a claim of due runs is an UPDATE fed by a
// FOR UPDATE SKIP LOCKED CTE, an append is an UPDATE conditional on the
// lease token and the journal position with the entries inserted from the
// row it returned. Budget charges lock the budget row in the same
// transaction as the write they pay for. Sessions (store.SessionStore) lock
// the session's row for each change, so one session's changes are serial
// across nodes and only one submission of it is ever active.
//
// The clock is the database's (statement_timestamp()), so all nodes judge
// leases by one clock; WithClock replaces it in tests. A trigger notifies
// channel hitch_wake when a run may have become due; Wake (store.Notifier)
// passes those on, with a poll as the fallback (WithPollOnly for poolers
// that cannot LISTEN).
//
// The schema is versioned by embedded, numbered migrations recorded in
// hitch_migrations; Open applies them (or, with WithAutoMigrate(false),
// asks for Migrate), and refuses a schema newer than it knows.
// docs/store-postgres.md has the details.
package postgres
