package builtin

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// backends returns a setup for each grep backend this machine has.
func backends(t *testing.T) map[string]func(t *testing.T) *env {
	out := map[string]func(t *testing.T) *env{
		"grep": func(t *testing.T) *env {
			e := setup(t)
			e.ts.rgOnce.Do(func() { e.ts.rg = false })
			return e
		},
	}
	if _, err := exec.LookPath("rg"); err == nil {
		out["rg"] = func(t *testing.T) *env {
			e := setup(t)
			if !e.ts.hasRG() {
				t.Fatal("rg is on PATH but the probe did not find it")
			}
			return e
		}
	} else {
		t.Log("rg not installed; its cases are skipped")
	}
	return out
}

func repeatLines(line string, n int) string {
	return strings.Repeat(line+"\n", n)
}

func TestGrep(t *testing.T) {
	t.Parallel()
	for name, mk := range backends(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := mk(t)
			e.write("hundred.txt", repeatLines("needle", 100))
			e.write("more/hundred1.txt", repeatLines("pin", 101))
			e.write("wide/500.txt", strings.Repeat("é", 499)+"Z\n")
			e.write("wide/501.txt", strings.Repeat("é", 500)+"Y\n")
			e.write("huge/one.txt", "W"+strings.Repeat("w", 1<<20)+"\n")
			e.write("code/a.go", "func Alpha() {}\n")
			e.write("code/a.txt", "func Alpha() {}\n")
			e.write("code/dots.txt", "abc\na.c\n")
			e.write("odd/a:b.txt", "colon:in:name\n")
			e.write("case.txt", "MiXeD\n")

			tests := []struct {
				name    string
				args    m
				lines   int // result lines before any note
				want    []string
				not     []string
				wantErr string
			}{
				{name: "100 matches", args: m{"pattern": "needle", "path": "hundred.txt"}, lines: 100, not: []string{"more exist"}},
				{name: "101 matches", args: m{"pattern": "pin", "path": "more"}, lines: 100, want: []string{"first 100 matches; more exist"}},
				{name: "maxMatches below the cap", args: m{"pattern": "pin", "path": "more", "maxMatches": 10}, lines: 10, want: []string{"maxMatches=10"}},
				{name: "maxMatches above the cap", args: m{"pattern": "pin", "path": "more", "maxMatches": 5000}, lines: 100, want: []string{"first 100 matches"}},
				{name: "500 characters kept", args: m{"pattern": "Z", "path": "wide"}, lines: 1, want: []string{strings.Repeat("é", 499) + "Z"}, not: []string{"cut"}},
				{name: "501 characters cut", args: m{"pattern": "Y", "path": "wide"}, lines: 1,
					want: []string{": " + strings.Repeat("é", 500) + " … [line cut at 500 characters]"}, not: []string{"éY"}},
				{name: "huge line", args: m{"pattern": "W", "path": "huge"}, lines: 1, want: []string{"line cut at 500"}},
				{name: "include", args: m{"pattern": "Alpha", "path": "code", "include": "*.go"}, lines: 1, want: []string{"code/a.go:1: func Alpha() {}"}},
				{name: "regex", args: m{"pattern": "a.c", "path": "code/dots.txt"}, lines: 2},
				{name: "literal", args: m{"pattern": "a.c", "path": "code/dots.txt", "literal": true}, lines: 1, want: []string{"code/dots.txt:2: a.c"}},
				{name: "case sensitive", args: m{"pattern": "mixed", "path": "case.txt"}, want: []string{"No matches found."}},
				{name: "ignoreCase", args: m{"pattern": "mixed", "path": "case.txt", "ignoreCase": true}, lines: 1, want: []string{"case.txt:1: MiXeD"}},
				{name: "colon in file name", args: m{"pattern": "colon", "path": "odd"}, lines: 1, want: []string{"odd/a:b.txt:1: colon:in:name"}},
				{name: "bad regex", args: m{"pattern": "(", "path": "case.txt"}, wantErr: "grep"},
				{name: "missing path", args: m{"pattern": "x", "path": "nope"}, wantErr: "no such file"},
				{name: "outside", args: m{"pattern": "root", "path": "/etc"}, wantErr: "outside the workspace roots"},
			}
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					out, err := e.call("grep", tc.args)
					if tc.wantErr != "" {
						if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
							t.Fatalf("error = %v, want one containing %q (output %.200q)", err, tc.wantErr, out)
						}
						return
					}
					if err != nil {
						t.Fatal(err)
					}
					results := 0
					for _, l := range strings.Split(out, "\n") {
						if l != "" && !strings.HasPrefix(l, "[") && l != "No matches found." {
							results++
							if n := len([]rune(l)); n > 700 {
								t.Errorf("result line of %d characters", n)
							}
						}
					}
					if results != tc.lines {
						t.Errorf("%d results, want %d:\n%.300s", results, tc.lines, out)
					}
					contains(t, "output", out, tc.want, tc.not)
				})
			}
		})
	}
}

func TestGrepSorted(t *testing.T) {
	t.Parallel()
	for name, mk := range backends(t) {
		t.Run(name, func(t *testing.T) {
			e := mk(t)
			for _, f := range []string{"c.txt", "a/z.txt", "b.txt", "a/b.txt"} {
				e.write(f, "hit\nmiss\nhit\n")
			}
			out := e.mustCall("grep", m{"pattern": "hit"})
			var want []string
			for _, f := range []string{"a/b.txt", "a/z.txt", "b.txt", "c.txt"} {
				want = append(want, fmt.Sprintf("%s:1: hit\n%s:3: hit", f, f))
			}
			if out != strings.Join(want, "\n") {
				t.Fatalf("output:\n%s", out)
			}
		})
	}
}
