//go:build !ncruces

package sqlite

import (
	"errors"

	"modernc.org/sqlite" // registers "sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// driverName is the database/sql driver the store runs on. modernc.org/sqlite
// is the default; build with -tags ncruces to use github.com/ncruces/go-sqlite3.
const driverName = "sqlite"

// driverLabel names the driver in benchmark results.
const driverLabel = "modernc"

// transient reports an error of another connection's doing that goes away
// when tried again: a lock held (SQLITE_BUSY and its variants), or a
// rollback journal that another connection deleted first
// (SQLITE_IOERR_DELETE_NOENT).
func transient(err error) bool {
	var e *sqlite.Error
	if !errors.As(err, &e) {
		return false
	}
	return e.Code()&0xff == sqlite3.SQLITE_BUSY || e.Code() == sqlite3.SQLITE_IOERR_DELETE_NOENT
}
