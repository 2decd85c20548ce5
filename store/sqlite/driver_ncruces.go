//go:build ncruces

package sqlite

import (
	"errors"

	"github.com/ncruces/go-sqlite3"
	_ "github.com/ncruces/go-sqlite3/driver" // registers "sqlite3"
)

// driverName is the database/sql driver the store runs on, selected by the
// ncruces build tag.
const driverName = "sqlite3"

// driverLabel names the driver in benchmark results.
const driverLabel = "ncruces"

// transient reports an error of another connection's doing that goes away
// when tried again: a lock held (SQLITE_BUSY and its variants), or a
// rollback journal that another connection deleted first
// (SQLITE_IOERR_DELETE_NOENT).
func transient(err error) bool {
	var e *sqlite3.Error
	if !errors.As(err, &e) {
		return false
	}
	return e.Code() == sqlite3.BUSY || e.ExtendedCode() == sqlite3.IOERR_DELETE_NOENT
}
