package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/hitch-dev/hitch/store"
)

// checkPages reads the pages every statement starts from and refuses a
// file where one of them is not a page SQLite wrote: the first page of
// each table and index, and, in a file with auto_vacuum, the pointer-map
// pages, which no query reads but a prune's vacuum trusts. A damaged file
// is then reported as corrupt (store.ErrCorrupt) when it is opened, never
// read as a healthy store. It costs a few reads: one page per table and
// index, and one in about every 800 pages of the file.
//
// A build whose SQLite lacks the sqlite_dbpage table (the ncruces
// driver) skips the check; SQLite's own errors still report damage it
// meets (IsCorrupt).
func checkPages(ctx context.Context, db *sql.DB) error {
	// One read transaction and three statements: every page comes from one
	// snapshot, SQLite takes its read lock once, and no statement is
	// prepared per page (a query a page cost more than reading the pages).
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return corrupt(err)
	}
	defer func() { _ = tx.Rollback() }()
	var first []byte
	var pages, vacuum int64
	err = tx.QueryRowContext(ctx, `SELECT (SELECT data FROM sqlite_dbpage WHERE pgno = 1),
		(SELECT page_count FROM pragma_page_count), (SELECT auto_vacuum FROM pragma_auto_vacuum)`).Scan(&first, &pages, &vacuum)
	switch {
	case err != nil && strings.Contains(err.Error(), "no such table"):
		return nil
	case err != nil:
		return corrupt(err)
	case len(first) < 100:
		return fmt.Errorf("%w: the first page is %d bytes", store.ErrCorrupt, len(first))
	}
	size := int64(len(first))
	usable := size - int64(first[20]) // less the bytes reserved at each page's end
	rows, err := tx.QueryContext(ctx, `SELECT s.name, s.rootpage, d.data FROM sqlite_schema AS s
		LEFT JOIN sqlite_dbpage AS d ON d.pgno = s.rootpage
		WHERE s.rootpage > 0 ORDER BY s.rootpage`)
	if err != nil {
		return corrupt(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var pgno int64
		var b []byte
		if err := rows.Scan(&name, &pgno, &b); err != nil {
			return corrupt(err)
		}
		if pgno > pages {
			return fmt.Errorf("%w: %s starts at page %d of %d", store.ErrCorrupt, name, pgno, pages)
		}
		if why := btreePage(b, usable); why != "" {
			return fmt.Errorf("%w: page %d, the first of %s, %s", store.ErrCorrupt, pgno, name, why)
		}
	}
	if err := rows.Err(); err != nil {
		return corrupt(err)
	}
	if err := rows.Close(); err != nil {
		return corrupt(err)
	}
	if vacuum == 0 {
		return nil
	}
	// The pointer map: page 2, then one page after every usable/5 pages
	// it describes, each entry 5 bytes, a type 1 to 5 and a page number.
	per := usable / 5
	lock := int64(0x40000000)/size + 1 // the page that holds the lock bytes is never used
	page, err := tx.PrepareContext(ctx, "SELECT data FROM sqlite_dbpage WHERE pgno = ?")
	if err != nil {
		return corrupt(err)
	}
	defer page.Close()
	for p := int64(2); p <= pages; p += per + 1 {
		var b []byte
		if err := page.QueryRowContext(ctx, p).Scan(&b); err != nil {
			return corrupt(err)
		}
		for i := range per {
			described := p + 1 + i
			if described > pages {
				break
			}
			if t := b[5*i]; (t < 1 || t > 5) && described != lock {
				return fmt.Errorf("%w: page %d, a pointer map, gives page %d the type %d", store.ErrCorrupt, p, described, t)
			}
		}
	}
	return nil
}

// btreePage says what is wrong with a b-tree page, or "" when its header
// is sound: a known page type, and cells that lie within the page.
func btreePage(b []byte, usable int64) string {
	if int64(len(b)) < usable || usable < 480 {
		return fmt.Sprintf("is %d bytes", len(b))
	}
	off := 0
	if binary.BigEndian.Uint32(b[:4]) == 0x53514c69 { // "SQLi": page 1, after the file header
		off = 100
	}
	h := b[off:]
	header := 8
	switch h[0] {
	case 2, 5: // interior index, interior table
		header = 12
	case 10, 13: // leaf index, leaf table
	default:
		return fmt.Sprintf("has the type %d", h[0])
	}
	cells := int64(binary.BigEndian.Uint16(h[3:5]))
	content := int64(binary.BigEndian.Uint16(h[5:7]))
	if content == 0 {
		content = 65536
	}
	end := int64(off+header) + 2*cells // the end of the cell pointers
	if end > content || content > usable {
		return fmt.Sprintf("says it holds %d cells from byte %d", cells, content)
	}
	for i := range cells {
		at := int64(binary.BigEndian.Uint16(h[header+2*int(i):]))
		if at < content || at >= usable {
			return fmt.Sprintf("has cell %d at byte %d, outside its content", i, at)
		}
	}
	return ""
}

// corrupt marks an error in which SQLite reports damage.
func corrupt(err error) error {
	if IsCorrupt(err) && !errors.Is(err, store.ErrCorrupt) {
		return fmt.Errorf("%w: %w", store.ErrCorrupt, err)
	}
	return err
}

// IsCorrupt reports whether err is SQLite's report of a damaged file
// (SQLITE_CORRUPT) or of a file that is not a database (SQLITE_NOTADB),
// whichever driver, or store.ErrCorrupt.
func IsCorrupt(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, store.ErrCorrupt) {
		return true
	}
	s := err.Error()
	return strings.Contains(s, "database disk image is malformed") || strings.Contains(s, "file is not a database")
}
