//go:build ncruces

package sqlite

import _ "github.com/ncruces/go-sqlite3/driver" // registers "sqlite3"

// driverName is the database/sql driver the store runs on, selected by the
// ncruces build tag.
const driverName = "sqlite3"

// driverLabel names the driver in benchmark results.
const driverLabel = "ncruces"
