package builtin

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestWrite(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.mustCall("write", m{"path": "deep/er/f.txt", "content": "one"})
	if got := e.readFile("deep/er/f.txt"); got != "one" {
		t.Fatalf("content = %q", got)
	}
	e.mustCall("write", m{"path": "deep/er/f.txt", "content": "two"})
	if got := e.readFile("deep/er/f.txt"); got != "two" {
		t.Fatalf("content after replace = %q", got)
	}
	bin := []byte{0, 1, 2, 0xff, 0xfe}
	e.mustCall("write", m{"path": "bin", "content": base64.StdEncoding.EncodeToString(bin), "encoding": "base64"})
	if got := e.readFile("bin"); got != string(bin) {
		t.Fatalf("bytes = %q", got)
	}
	if err := os.Chmod(filepath.Join(e.dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	e.mustCall("write", m{"path": "bin", "content": "#!/bin/sh\n"})
	if fi, _ := os.Stat(filepath.Join(e.dir, "bin")); fi.Mode().Perm() != 0o755 {
		t.Errorf("mode after write = %v, want 0755 kept", fi.Mode().Perm())
	}
	for _, args := range []m{
		{"path": "x", "content": "!!", "encoding": "base64"},
		{"path": "x", "content": "a", "encoding": "utf16"},
		{"path": "deep", "content": "a"},
		{"path": "", "content": "a"},
		{"content": "a"},
	} {
		if _, err := e.call("write", args); err == nil {
			t.Errorf("write %v: no error", args)
		}
	}
	entries, _ := os.ReadDir(filepath.Join(e.dir, "deep/er"))
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
}

func TestEdit(t *testing.T) {
	t.Parallel()
	e := setup(t)
	tests := []struct {
		name    string
		content string
		args    m
		want    string
		wantErr string
	}{
		{name: "once", content: "a b c", args: m{"oldText": "b", "newText": "B"}, want: "a B c"},
		{name: "multi-line", content: "x\ny\nz\n", args: m{"oldText": "y\nz", "newText": "Y"}, want: "x\nY\n"},
		{name: "delete", content: "keep drop keep", args: m{"oldText": " drop", "newText": ""}, want: "keep keep"},
		{name: "not found", content: "abc", args: m{"oldText": "abd", "newText": "x"}, wantErr: "not found"},
		{name: "whitespace differs", content: "\tindented\n", args: m{"oldText": "    indented", "newText": "x"}, wantErr: "not found"},
		{name: "crlf hint", content: "a\r\nb\r\n", args: m{"oldText": "a\nb", "newText": "x"}, wantErr: "CRLF"},
		{name: "twice", content: "x = 1\nx = 1\n", args: m{"oldText": "x = 1", "newText": "x = 2"}, wantErr: "occurs 2 times; include more surrounding lines"},
		{name: "overlapping", content: "aaa", args: m{"oldText": "aa", "newText": "b"}, wantErr: "occurs 2 times"},
		{name: "replaceAll", content: "x = 1\nx = 1\n", args: m{"oldText": "x = 1", "newText": "x = 2", "replaceAll": true}, want: "x = 2\nx = 2\n"},
		{name: "replaceAll none", content: "abc", args: m{"oldText": "q", "newText": "x", "replaceAll": true}, wantErr: "not found"},
		{name: "empty oldText", content: "abc", args: m{"oldText": "", "newText": "x"}, wantErr: "oldText is empty"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("e%d.txt", i)
			_, err := e.call("edit", e.fileArgs(name, tc.content, tc.args))
			got := e.readFile(name)
			if erred(t, err, tc.wantErr) {
				if got != tc.content {
					t.Fatalf("failed edit changed the file to %q", got)
				}
				return
			}
			if got != tc.want {
				t.Fatalf("content = %q, want %q", got, tc.want)
			}
		})
	}
	if _, err := e.call("edit", m{"path": "nope.txt", "oldText": "a", "newText": "b"}); err == nil {
		t.Error("edit of a missing file succeeded")
	}
}

// TestEditsInDispatchOrder holds the file's lock, queues many edits
// behind it in a known order, and checks they all land in that order.
func TestEditsInDispatchOrder(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.write("f.txt", "END")
	queued := make(chan string)
	e.ts.locks.queued = func(key string) { queued <- key }

	gate := make(chan struct{})
	go func() {
		release, err := e.ts.locks.lock(context.Background(), func() (string, error) { return e.sb.Resolve("f.txt") })
		if err != nil {
			panic(err)
		}
		<-gate
		release()
	}()
	key := <-queued

	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			args, _ := json.Marshal(m{"path": "f.txt", "oldText": "END", "newText": fmt.Sprintf("%d\nEND", i)})
			if _, err := e.tools["edit"].Call(context.Background(), args); err != nil {
				errs <- err
			}
		})
		if got := <-queued; got != key {
			t.Fatalf("edit %d queued on %q, want %q", i, got, key)
		}
	}
	e.ts.locks.queued = nil // every waiter is in line; later locks do not report
	close(gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	var want strings.Builder
	for i := range n {
		fmt.Fprintf(&want, "%d\n", i)
	}
	want.WriteString("END")
	if got := e.readFile("f.txt"); got != want.String() {
		t.Fatalf("edits applied out of order:\n%s", got)
	}
	if len(e.ts.locks.tails) != 0 {
		t.Errorf("lock table not emptied: %v", e.ts.locks.tails)
	}
}

// TestEditsOnOtherPathsRunAtOnce shows that a held lock on one file does
// not hold up edits and writes of others.
func TestEditsOnOtherPathsRunAtOnce(t *testing.T) {
	t.Parallel()
	e := setup(t)
	e.write("a.txt", "a")
	release, err := e.ts.locks.lock(context.Background(), func() (string, error) { return e.sb.Resolve("a.txt") })
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			name := fmt.Sprintf("other%d.txt", i)
			e.mustCall("write", m{"path": name, "content": "x"})
			e.mustCall("edit", m{"path": name, "oldText": "x", "newText": "y"})
		})
	}
	wg.Wait() // would never return if the other files waited on a.txt
	for i := range 8 {
		if got := e.readFile(fmt.Sprintf("other%d.txt", i)); got != "y" {
			t.Errorf("other%d.txt = %q", i, got)
		}
	}
}

// TestLockCancelKeepsOrder cancels a waiter in the middle of the line; the
// ones behind it still wait for the ones before it.
func TestLockCancelKeepsOrder(t *testing.T) {
	t.Parallel()
	var l pathLocks
	key := func() (string, error) { return "k", nil }
	first, err := l.lock(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.lock(ctx, key); err == nil {
		t.Fatal("lock with a cancelled context succeeded while held")
	}
	got := make(chan struct{})
	go func() {
		release, err := l.lock(context.Background(), key)
		if err == nil {
			release()
		}
		close(got)
	}()
	select {
	case <-got:
		t.Fatal("third waiter got the lock while the first held it")
	default:
	}
	first()
	<-got
}

func FuzzEdit(f *testing.F) {
	seeds := []struct {
		content, old, new string
		all               bool
	}{
		{"hello world", "world", "there", false},
		{"aaa", "aa", "b", false},
		{"aaa", "aa", "b", true},
		{"x\r\ny\r\n", "x\ny", "z", false},
		{"", "a", "b", false},
		{"abcabc", "abc", "", true},
		{"é€😀", "€", "e", false},
		{"line1\nline2\nline1\n", "line1\n", "L\n", false},
	}
	for _, s := range seeds {
		f.Add(s.content, s.old, s.new, s.all)
	}
	dir := f.TempDir()
	e := setup(f, localConfig(dir))
	f.Fuzz(func(t *testing.T, content, oldText, newText string, all bool) {
		e.t = t
		name := "fuzz.txt"
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := e.call("edit", m{"path": name, "oldText": oldText, "newText": newText, "replaceAll": all})
		got := e.readFile(name)
		// JSON carries strings as UTF-8; what the tool saw is the
		// round-tripped text.
		oldText, newText = roundTrip(oldText), roundTrip(newText)
		n := countOverlapping(content, oldText)
		switch {
		case oldText == "":
			if err == nil {
				t.Fatal("empty oldText accepted")
			}
		case n == 0 || (!all && n > 1):
			if err == nil {
				t.Fatalf("edit succeeded with %d overlapping matches (replaceAll %v)", n, all)
			}
		case all:
			if err != nil {
				t.Fatal(err)
			}
			if want := strings.ReplaceAll(content, oldText, newText); got != want {
				t.Fatalf("replaceAll gave %q, want %q", got, want)
			}
			return
		default:
			if err != nil {
				t.Fatal(err)
			}
			i := strings.Index(content, oldText)
			if want := content[:i] + newText + content[i+len(oldText):]; got != want {
				t.Fatalf("edit gave %q, want %q", got, want)
			}
			return
		}
		if got != content {
			t.Fatalf("failed edit changed the file from %q to %q", content, got)
		}
	})
}

func roundTrip(s string) string {
	b, _ := json.Marshal(s)
	var out string
	json.Unmarshal(b, &out)
	return out
}
