package builtin

import (
	"strings"
	"testing"
)

// BenchmarkReadPage reads the first page of a 100,000-line file; the rest
// is only counted.
func BenchmarkReadPage(b *testing.B) {
	e := setup(b)
	e.write("big.txt", strings.Repeat("some ordinary line of source code\n", 100_000))
	for b.Loop() {
		e.mustCall("read", m{"path": "big.txt"})
	}
}

// BenchmarkEdit replaces one unique string in a 100 KiB file, which costs a
// read, a temporary file, an fsync and a rename.
func BenchmarkEdit(b *testing.B) {
	e := setup(b)
	e.write("f.txt", strings.Repeat("x", 100<<10)+"MARK0")
	for i := range b.N {
		e.mustCall("edit", m{"path": "f.txt", "oldText": markN(i), "newText": markN(i + 1)})
	}
}

func markN(i int) string { return "MARK" + strings.Repeat("|", i%2) + string(rune('0'+i%10)) }
