package builtin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hitch-dev/hitch/sandbox"
	"github.com/hitch-dev/hitch/sandbox/local"
)

// snapshot records every file under dir with its content and mode.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		v := fi.Mode().String()
		if fi.Mode().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			v += " " + string(b)
		}
		out[p] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestNoEscape runs every tool and every sandbox file operation on a corpus
// of paths that try to leave the root. None may read the secret, and the
// tree outside the root must be left exactly as it was.
func TestNoEscape(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	root, outside := filepath.Join(top, "root"), filepath.Join(top, "outside")
	mustDo := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{root + "/sub", outside + "/dir"} {
		mustDo(os.MkdirAll(d, 0o755))
	}
	mustDo(os.WriteFile(outside+"/secret.txt", []byte("SECRET one\n"), 0o644))
	mustDo(os.WriteFile(outside+"/dir/secret2.txt", []byte("SECRET two\n"), 0o644))
	mustDo(os.WriteFile(outside+"/linked.txt", []byte("HARDLINKED SECRET-FREE\n"), 0o644))
	mustDo(os.WriteFile(root+"/inside.txt", []byte("inside\n"), 0o644))
	links := map[string]string{
		"lfile":     "../outside/secret.txt",
		"labs":      outside + "/secret.txt",
		"ldir":      "../outside/dir",
		"ldangling": "../outside/created-through-link",
		"ldang2":    "ldangling",
		"lchain1":   "lchain2",
		"lchain2":   "../outside/secret.txt",
		"lmid":      "sub/../../outside/secret.txt",
		"sub/lup":   "../../outside",
		"lroot":     "..",
		"loop":      "loop",
		"labsdir":   outside,
	}
	for name, target := range links {
		mustDo(os.Symlink(target, filepath.Join(root, name)))
	}
	// A hard link made before the sandbox existed: inside by definition.
	mustDo(os.Link(outside+"/linked.txt", root+"/hard"))
	before := snapshot(t, outside)
	topBefore, _ := os.ReadDir(top)

	e := setup(t, local.Config{Root: root, Isolation: sandbox.IsolationNone})
	ctx := context.Background()
	long := strings.Repeat("a/../", 300) + "../outside/secret.txt"

	cases := []struct {
		path string
		// inside: the path names something in the root (maybe odd, maybe
		// missing), so an operation may succeed; otherwise every operation
		// must fail.
		inside bool
	}{
		{path: "../outside/secret.txt"},
		{path: "../../../../../../etc/passwd"},
		{path: "sub/../../outside/secret.txt"},
		{path: "sub/./../../outside/secret.txt"},
		{path: "./../outside/secret.txt"},
		{path: "sub//..//..//outside/secret.txt"},
		{path: "../root/../outside/secret.txt"},
		{path: ".."},
		{path: long},
		{path: outside + "/secret.txt"},
		{path: outside},
		{path: top},
		{path: "/etc/passwd"},
		{path: "/"},
		{path: "lfile"},
		{path: "labs"},
		{path: "lmid"},
		{path: "ldir"},
		{path: "ldir/secret2.txt"},
		{path: "labsdir/secret.txt"},
		{path: "ldangling"},
		{path: "ldang2"},
		{path: "lchain1"},
		{path: "sub/lup/secret.txt"},
		{path: "sub/lup/dir/secret2.txt"},
		{path: "sub/lup"},
		{path: "lroot"},
		{path: "lroot/outside/secret.txt"},
		{path: "loop"},
		{path: "lfile/"},
		{path: "ldir/"},
		{path: "../outside/secret.txt/"},
		{path: "inside.txt\x00../../outside/secret.txt"},
		{path: "\x00"},
		{path: "%2e%2e/outside/secret.txt", inside: true},
		{path: "..%2f..%2foutside%2fsecret.txt", inside: true},
		{path: "\xc0\xae\xc0\xae/outside/secret.txt", inside: true}, // overlong "..": invalid UTF-8
		{path: "\xff\xfe/../../outside/secret.txt"},
		{path: "\u2025/outside/secret.txt", inside: true}, // two-dot leader, not ".."
		{path: "ldir/../secret.txt", inside: true},        // lexically root/secret.txt
		{path: "~/secret.txt", inside: true},
		{path: "...", inside: true},
		{path: strings.Repeat("n", 300), inside: true},
		{path: "sub/", inside: true},
		{path: "hard", inside: true},
	}
	if len(cases) < 30 {
		t.Fatalf("corpus has %d cases", len(cases))
	}

	type op struct {
		name string
		run  func(p string) (string, error)
	}
	readAll := func(rc io.ReadCloser, err error) (string, error) {
		if err != nil {
			return "", err
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		return string(b), err
	}
	ops := []op{
		{"read tool", func(p string) (string, error) { return e.call("read", m{"path": p}) }},
		{"write tool", func(p string) (string, error) { return e.call("write", m{"path": p, "content": "PWNED"}) }},
		{"edit tool", func(p string) (string, error) {
			return e.call("edit", m{"path": p, "oldText": "SECRET", "newText": "PWNED", "replaceAll": true})
		}},
		{"edit tool on hard link", func(p string) (string, error) {
			return e.call("edit", m{"path": p, "oldText": "HARDLINKED", "newText": "PWNED"})
		}},
		{"glob tool", func(p string) (string, error) { return e.call("glob", m{"pattern": "*", "cwd": p}) }},
		{"grep tool", func(p string) (string, error) { return e.call("grep", m{"pattern": "SECRET", "path": p}) }},
		{"bash cwd", func(p string) (string, error) {
			return e.call("bash", m{"command": "cat secret.txt dir/secret2.txt 2>/dev/null; echo PWNED > pwned.txt", "cwd": p})
		}},
		{"Stat", func(p string) (string, error) {
			fi, err := e.sb.Stat(ctx, p)
			return fi.Path, err
		}},
		{"Resolve", func(p string) (string, error) { return e.sb.Resolve(p) }},
		{"Open", func(p string) (string, error) { return readAll(e.sb.Open(ctx, p)) }},
		{"ReadFile", func(p string) (string, error) {
			b, err := e.sb.ReadFile(ctx, p)
			return string(b), err
		}},
		{"WriteFile", func(p string) (string, error) { return "", e.sb.WriteFile(ctx, p, []byte("PWNED")) }},
		{"Walk", func(p string) (string, error) {
			var seen []string
			err := e.sb.Walk(ctx, p, func(rel string, d fs.DirEntry) error {
				seen = append(seen, rel)
				return nil
			})
			return strings.Join(seen, "\n"), err
		}},
	}

	for _, c := range cases {
		for _, o := range ops {
			out, err := o.run(c.path)
			label := fmt.Sprintf("%s %.60q", o.name, c.path)
			if strings.Contains(out, "SECRET one") || strings.Contains(out, "SECRET two") || strings.Contains(out, "secret2.txt") {
				t.Errorf("%s: leaked outside content: %.200q", label, out)
			}
			if !c.inside && err == nil {
				t.Errorf("%s: no error (output %.100q)", label, out)
			}
			if !c.inside && err != nil && !errors.Is(err, sandbox.ErrOutsideRoots) && !errors.Is(err, sandbox.ErrInvalidPath) {
				// Some refusals come from the system instead (a loop, a
				// file used as a directory); they must still be errors.
				t.Logf("%s: refused with %v", label, err)
			}
			if o.name == "Resolve" && err == nil && out != root && !strings.HasPrefix(out, root+"/") {
				t.Errorf("%s: resolved outside the root to %q", label, out)
			}
		}
	}

	if after := snapshot(t, outside); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the tree outside the root changed:\nbefore %v\nafter  %v", before, after)
	}
	if topAfter, _ := os.ReadDir(top); len(topAfter) != len(topBefore) {
		t.Errorf("new entries next to the root: %v", topAfter)
	}
	// The hard link was written through the tools, but atomically, so it
	// was detached from the outside file instead of changing it.
	if b, _ := os.ReadFile(root + "/hard"); string(b) == "HARDLINKED SECRET-FREE\n" {
		t.Errorf("writes to the hard link did not land inside the root")
	}
}
