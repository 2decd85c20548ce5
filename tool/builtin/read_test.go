package builtin

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"unicode/utf8"
)

func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestReadBounds(t *testing.T) {
	t.Parallel()
	e := setup(t)
	kiloLines := strings.Repeat(strings.Repeat("x", 999)+"\n", 100)
	tests := []struct {
		name    string
		content string
		args    m
		want    string // the whole output, when set
		prefix  string // the content part, when want is not set
		note    []string
		wantErr string
	}{
		{name: "exactly 2000 lines", content: numbered(2000), want: numbered(2000)},
		{name: "2001 lines", content: numbered(2001), prefix: numbered(2000),
			note: []string{"Showing lines 1-2000 of 2001", "offset=2001"}},
		{name: "2001 lines, second page", content: numbered(2001), args: m{"offset": 2001}, want: "line 2001\n"},
		{name: "limit above 2000 is capped", content: numbered(2001), args: m{"limit": 5000}, prefix: numbered(2000),
			note: []string{"offset=2001"}},
		{name: "limit", content: numbered(5), args: m{"limit": 2}, prefix: "line 1\nline 2\n",
			note: []string{"Showing lines 1-2 of 5", "offset=3"}},
		{name: "offset and limit", content: numbered(5), args: m{"offset": 2, "limit": 2}, prefix: "line 2\nline 3\n",
			note: []string{"Showing lines 2-3 of 5", "offset=4"}},
		{name: "50 KiB reached before 2000 lines", content: kiloLines, prefix: kiloLines[:51*1000],
			note: []string{"Showing lines 1-51 of 100", "50 KiB", "offset=52"}},
		{name: "line of exactly 50 KiB", content: strings.Repeat("y", ReadMaxBytes) + "\n",
			want: strings.Repeat("y", ReadMaxBytes) + "\n"},
		{name: "first line one byte over 50 KiB", content: strings.Repeat("y", ReadMaxBytes+1) + "\nnext\n",
			prefix: strings.Repeat("y", ReadMaxBytes),
			note:   []string{"Line 1 is 51201 bytes long", "cannot be reached by paging", "offset=2"}},
		{name: "two-byte character across the cut", content: strings.Repeat("a", ReadMaxBytes-1) + "é",
			prefix: strings.Repeat("a", ReadMaxBytes-1), note: []string{"cannot be reached by paging"}},
		{name: "three-byte character across the cut", content: strings.Repeat("a", ReadMaxBytes-2) + "€tail",
			prefix: strings.Repeat("a", ReadMaxBytes-2), note: []string{"cannot be reached by paging"}},
		{name: "character ending at the cut", content: strings.Repeat("a", ReadMaxBytes-2) + "é" + "z",
			prefix: strings.Repeat("a", ReadMaxBytes-2) + "é", note: []string{"cannot be reached by paging"}},
		{name: "long line after a short one", content: "short\n" + strings.Repeat("z", 60000) + "\nend\n",
			prefix: "short\n", note: []string{"Showing lines 1-1 of 3", "offset=2"}},
		{name: "long line reached by offset", content: "short\n" + strings.Repeat("z", 60000) + "\nend\n",
			args: m{"offset": 2}, prefix: strings.Repeat("z", ReadMaxBytes),
			note: []string{"Line 2 is 60000 bytes long", "offset=3"}},
		{name: "last line without newline", content: "a\nb", want: "a\nb"},
		{name: "offset at the last line", content: numbered(3), args: m{"offset": 3}, want: "line 3\n"},
		{name: "offset one past the end", content: numbered(3), args: m{"offset": 4}, wantErr: "offset 4 is past the end of the file, which has 3 lines"},
		{name: "offset past the end, no final newline", content: "a\nb", args: m{"offset": 3}, wantErr: "which has 2 lines"},
		{name: "offset far past the end", content: numbered(3), args: m{"offset": 1000}, wantErr: "which has 3 lines"},
		{name: "empty file", content: "", want: "(the file is empty)"},
		{name: "empty file with offset 2", content: "", args: m{"offset": 2}, wantErr: "which has 0 lines"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := e.call("read", e.fileArgs(fmt.Sprintf("f%d.txt", i), tc.content, tc.args))
			if erred(t, err, tc.wantErr) {
				return
			}
			if !utf8.ValidString(out) {
				t.Fatal("output is not valid UTF-8")
			}
			if tc.want != "" {
				if out != tc.want {
					t.Fatalf("output = %.200q…, want %.200q…", out, tc.want)
				}
				return
			}
			if !strings.HasPrefix(out, tc.prefix) {
				t.Fatalf("output does not start with the expected %d bytes: %.200q", len(tc.prefix), out)
			}
			note := out[len(tc.prefix):]
			if strings.Contains(strings.TrimPrefix(note, "\n"), "\n\n") || !strings.HasPrefix(note, "\n") {
				t.Fatalf("after the content comes more than one note: %q", note)
			}
			if len(tc.prefix) > ReadMaxBytes {
				t.Fatalf("test expects %d content bytes, over the bound", len(tc.prefix))
			}
			contains(t, "note", note, tc.note, nil)
		})
	}
}

func TestReadErrors(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.write("dir/f", "x")
	if _, err := e.call("read", m{"path": "missing.txt"}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
	if _, err := e.call("read", m{"path": "dir"}); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("directory: %v", err)
	}
	for _, args := range []m{{"path": "dir/f", "offset": 0}, {"path": "dir/f", "limit": 0}, {"path": "dir/f", "offset": -1}, {}} {
		if _, err := e.call("read", args); err == nil {
			t.Errorf("read %v: no error", args)
		}
	}
}
