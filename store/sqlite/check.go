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
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	page := func(n int64) ([]byte, error) {
		var b []byte
		err := conn.QueryRowContext(ctx, "SELECT data FROM sqlite_dbpage WHERE pgno = ?", n).Scan(&b)
		return b, err
	}
	first, err := page(1)
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
	var pages, vacuum int64
	if err := conn.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
		return corrupt(err)
	}
	if err := conn.QueryRowContext(ctx, "PRAGMA auto_vacuum").Scan(&vacuum); err != nil {
		return corrupt(err)
	}
	rows, err := conn.QueryContext(ctx, "SELECT name, rootpage FROM sqlite_schema WHERE rootpage > 0 ORDER BY rootpage")
	if err != nil {
		return corrupt(err)
	}
	type root struct {
		name string
		pgno int64
	}
	var roots []root
	for rows.Next() {
		var r root
		if err := rows.Scan(&r.name, &r.pgno); err != nil {
			rows.Close()
			return corrupt(err)
		}
		roots = append(roots, r)
	}
	if err := rows.Close(); err != nil {
		return corrupt(err)
	}
	if err := rows.Err(); err != nil {
		return corrupt(err)
	}
	for _, r := range roots {
		if r.pgno > pages {
			return fmt.Errorf("%w: %s starts at page %d of %d", store.ErrCorrupt, r.name, r.pgno, pages)
		}
		b, err := page(r.pgno)
		if err != nil {
			return corrupt(err)
		}
		if why := btreePage(b, usable); why != "" {
			return fmt.Errorf("%w: page %d, the first of %s, %s", store.ErrCorrupt, r.pgno, r.name, why)
		}
	}
	if vacuum == 0 {
		return nil
	}
	// The pointer map: page 2, then one page after every usable/5 pages
	// it describes, each entry 5 bytes, a type 1 to 5 and a page number.
	per := usable / 5
	lock := int64(0x40000000)/size + 1 // the page that holds the lock bytes is never used
	for p := int64(2); p <= pages; p += per + 1 {
		b, err := page(p)
		if err != nil {
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
