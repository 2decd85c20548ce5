package builtin

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGlobBounds(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for i := range 1001 {
		dir := "many"
		if i == 1000 {
			dir = "many/last" // the 1001st sits deeper
		}
		e.write(fmt.Sprintf("%s/f%04d.dat", dir, i), "")
	}
	for i := range 1000 {
		e.write(fmt.Sprintf("exact/f%04d.dat", i), "")
	}
	tests := []struct {
		name  string
		args  m
		paths int
		note  string
	}{
		{name: "1000 paths", args: m{"pattern": "*.dat", "cwd": "exact"}, paths: 1000},
		{name: "1001 paths", args: m{"pattern": "*.dat", "cwd": "many"}, paths: 1000, note: "first 1000 paths; more match"},
		{name: "maxMatches", args: m{"pattern": "*.dat", "cwd": "exact", "maxMatches": 10}, paths: 10, note: "maxMatches=10"},
		{name: "maxMatches above the cap", args: m{"pattern": "*.dat", "cwd": "many", "maxMatches": 9999}, paths: 1000, note: "first 1000 paths"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out := e.mustCall("glob", tc.args)
			lines := strings.Split(out, "\n")
			var paths []string
			for _, l := range lines {
				if !strings.HasPrefix(l, "[") {
					paths = append(paths, l)
				}
			}
			if len(paths) != tc.paths {
				t.Fatalf("%d paths, want %d", len(paths), tc.paths)
			}
			for i := 1; i < len(paths); i++ {
				if paths[i-1] >= paths[i] {
					t.Fatalf("not sorted at %d: %q then %q", i, paths[i-1], paths[i])
				}
			}
			if tc.note == "" && len(lines) != len(paths) {
				t.Errorf("unexpected note: %q", lines[len(lines)-1])
			}
			if tc.note != "" && !strings.Contains(out, tc.note) {
				t.Errorf("note lacks %q: %q", tc.note, lines[len(lines)-1])
			}
		})
	}
}

func TestGlob(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for _, f := range []string{"main.go", "src/a.go", "src/b_test.go", "src/deep/c.go", "src/deep/c.txt", "docs/go.md", "x.go/inner.txt"} {
		e.write(f, "")
	}
	if err := os.Symlink(filepath.Join(e.dir, "src"), filepath.Join(e.dir, "link")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args m
		want string
	}{
		{m{"pattern": "*.go"}, "main.go\nsrc/a.go\nsrc/b_test.go\nsrc/deep/c.go\nx.go/"},
		{m{"pattern": "*_test.go"}, "src/b_test.go"},
		{m{"pattern": "c.*", "cwd": "src"}, "src/deep/c.go\nsrc/deep/c.txt"},
		{m{"pattern": "src/**/*.go"}, "src/a.go\nsrc/b_test.go\nsrc/deep/c.go"},
		{m{"pattern": "deep/*.txt", "cwd": "src"}, "src/deep/c.txt"},
		{m{"pattern": "link"}, "link"},
		{m{"pattern": "*.rs"}, "No paths matched."},
		{m{"pattern": "[ab].go"}, "src/a.go"},
	}
	for _, tc := range tests {
		if got := e.mustCall("glob", tc.args); got != tc.want {
			t.Errorf("glob %v = %q, want %q", tc.args, got, tc.want)
		}
	}
	for _, args := range []m{{"pattern": "[a"}, {"pattern": ""}, {"pattern": "*", "cwd": "nope"}, {"pattern": "*", "cwd": "main.go"}} {
		if _, err := e.call("glob", args); err == nil {
			t.Errorf("glob %v: no error", args)
		}
	}
}
