package builtin

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

type readIn struct {
	Path   string `json:"path" jsonschema:"file to read, relative to the workspace root or absolute inside a granted root"`
	Offset int    `json:"offset,omitempty" jsonschema:"1-indexed line to start at (default 1)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"most lines to return (default and most: 2000)"`
}

const readDescription = `Read a text file. Returns the file's lines as they are, starting at offset (1-indexed, default 1), at most limit lines, and never more than 2000 lines or 50 KiB (51200 bytes) at once. When more lines follow, the output ends with a note naming the lines shown and the offset to continue from. A single line longer than 50 KiB is shown only up to 50 KiB, with a warning. An offset past the end of the file is an error that gives the file's line count.`

// readSchema is the read tool's input schema.
var readSchema = schemaFor[readIn](func(p map[string]*jsonschema.Schema) {
	p["offset"].Minimum = minimum(1)
	p["limit"].Minimum = minimum(1)
})

func (ts *toolset) read(ctx context.Context, in readIn) (string, error) {
	if in.Path == "" {
		return "", argError("read", "path is empty")
	}
	if in.Offset < 0 || in.Limit < 0 {
		return "", argError("read", "offset and limit must be 1 or more")
	}
	offset := max(in.Offset, 1)
	limit := ReadMaxLines
	if in.Limit > 0 {
		limit = min(in.Limit, ReadMaxLines)
	}
	fi, err := ts.sb.Stat(ctx, in.Path)
	if err != nil {
		return "", fmt.Errorf("read: %w", err)
	}
	if fi.IsDir() {
		return "", fmt.Errorf("read %s: it is a directory; list it with glob or bash", in.Path)
	}
	rc, err := ts.sb.Open(ctx, in.Path)
	if err != nil {
		return "", fmt.Errorf("read: %w", err)
	}
	defer rc.Close()
	return readLines(ctx, in.Path, rc, offset, limit)
}

// readLines renders lines offset..offset+limit-1 of r within the byte bound.
func readLines(ctx context.Context, name string, r io.Reader, offset, limit int) (string, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	skipped := 0
	for skipped < offset-1 {
		if skipped%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return "", err
			}
		}
		_, n, _, err := readLine(br, 0)
		if err != nil {
			return "", fmt.Errorf("read %s: %w", name, err)
		}
		if n == 0 {
			break
		}
		skipped++
	}
	if skipped < offset-1 {
		return "", fmt.Errorf("read %s: offset %d is past the end of the file, which has %d lines", name, offset, skipped)
	}

	var out bytes.Buffer
	shown := 0
	var longLine int64 // length of a first line too long to show whole
	more := false      // a line was read but not shown
	for shown < limit {
		line, n, newline, err := readLine(br, ReadMaxBytes+1)
		if err != nil {
			return "", fmt.Errorf("read %s: %w", name, err)
		}
		if n == 0 {
			break
		}
		content := bytes.TrimSuffix(line, []byte("\n"))
		if shown == 0 && int64(len(content)) > ReadMaxBytes || shown == 0 && n > ReadMaxBytes+1 {
			out.Write(utf8Prefix(content, ReadMaxBytes))
			longLine = n
			if newline {
				longLine--
			}
			shown = 1
			break
		}
		if int64(out.Len())+n > ReadMaxBytes && shown > 0 {
			more = true
			break
		}
		out.Write(line)
		shown++
	}
	if shown == 0 {
		if offset == 1 {
			return "(the file is empty)", nil
		}
		return "", fmt.Errorf("read %s: offset %d is past the end of the file, which has %d lines", name, offset, skipped)
	}
	rest, err := countLines(ctx, br)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", name, err)
	}
	if more {
		rest++
	}
	total := int64(offset-1+shown) + rest
	first, last := offset, offset+shown-1
	next := last + 1

	var note string
	switch {
	case longLine > 0:
		note = fmt.Sprintf("[Line %d is %d bytes long; only its first %d bytes are shown. The rest of this line cannot be reached by paging with offset and limit; use bash (for example cut -c or dd) or grep to see it.", first, longLine, out.Len())
		if rest > 0 {
			note += fmt.Sprintf(" The file has %d lines; use offset=%d to continue with the next line.", total, next)
		}
		note += "]"
	case more:
		note = fmt.Sprintf("[Showing lines %d-%d of %d; the 50 KiB output limit was reached. Use offset=%d to continue.]", first, last, total, next)
	case rest > 0:
		note = fmt.Sprintf("[Showing lines %d-%d of %d. Use offset=%d to continue.]", first, last, total, next)
	default:
		return out.String(), nil
	}
	if b := out.Bytes(); len(b) > 0 && b[len(b)-1] != '\n' {
		out.WriteByte('\n')
	}
	out.WriteByte('\n')
	out.WriteString(note)
	return out.String(), nil
}

// readLine reads one line, newline included, keeping at most keep bytes of
// it and discarding the rest, so a huge line costs no memory. n is the
// line's full length; zero means the end of input.
func readLine(br *bufio.Reader, keep int) (line []byte, n int64, newline bool, err error) {
	for {
		frag, ferr := br.ReadSlice('\n')
		n += int64(len(frag))
		if room := keep - len(line); room > 0 {
			line = append(line, frag[:min(room, len(frag))]...)
		}
		switch {
		case ferr == nil:
			return line, n, true, nil
		case errors.Is(ferr, bufio.ErrBufferFull):
			continue
		case errors.Is(ferr, io.EOF):
			return line, n, false, nil
		default:
			return nil, 0, false, ferr
		}
	}
}

// countLines counts the lines left in br; a last line without a newline
// counts.
func countLines(ctx context.Context, br *bufio.Reader) (int64, error) {
	buf := make([]byte, 64<<10)
	var lines int64
	last := byte('\n')
	for i := 0; ; i++ {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return 0, err
			}
		}
		n, err := br.Read(buf)
		if n > 0 {
			lines += int64(bytes.Count(buf[:n], []byte("\n")))
			last = buf[n-1]
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	if last != '\n' {
		lines++
	}
	return lines, nil
}

// utf8Prefix cuts b to at most max bytes without splitting a character.
func utf8Prefix(b []byte, max int) []byte {
	if len(b) <= max {
		return b
	}
	b = b[:max]
	start := len(b) - 1
	for start > 0 && start > len(b)-utf8.UTFMax && !utf8.RuneStart(b[start]) {
		start--
	}
	if !utf8.FullRune(b[start:]) {
		b = b[:start]
	}
	return b
}
