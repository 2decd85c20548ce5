//go:build !ncruces

package sqlite

import _ "modernc.org/sqlite" // registers "sqlite"

// driverName is the database/sql driver the store runs on. modernc.org/sqlite
// is the default; build with -tags ncruces to use github.com/ncruces/go-sqlite3.
const driverName = "sqlite"

// driverLabel names the driver in benchmark results.
const driverLabel = "modernc"
