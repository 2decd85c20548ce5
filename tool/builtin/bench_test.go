package builtin

import (
	"strings"
	"testing"

	"github.com/hitch-dev/hitch/sandbox"
	"github.com/hitch-dev/hitch/sandbox/local"
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

// BenchmarkBashTrue runs the smallest command, to show what starting one
// costs under each isolation.
func BenchmarkBashTrue(b *testing.B) {
	for _, iso := range []sandbox.Isolation{sandbox.IsolationNone, sandbox.IsolationBwrap} {
		b.Run(string(iso), func(b *testing.B) {
			sb, err := local.New(local.Config{Root: b.TempDir(), Isolation: iso})
			if err != nil {
				b.Skip(err)
			}
			sb.Close()
			e := setup(b, local.Config{Isolation: iso})
			for b.Loop() {
				e.mustCall("bash", m{"command": "true"})
			}
		})
	}
}
