package sqlite_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/internal/testproc"
	"github.com/hitch-dev/hitch/store/sqlite"
)

// openChildEnv names the file a child process opens in TestOpenChild.
const openChildEnv = "HITCH_SQLITE_OPEN_CHILD"

// openMany opens path n times at once and closes every store it got.
func openMany(path string, n int) error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	stores := make([]*sqlite.Store, n)
	for i := range n {
		// A long timeout: the test is about waiting instead of failing,
		// and a loaded machine running it under the race detector is slow.
		wg.Go(func() {
			stores[i], errs[i] = sqlite.Open(context.Background(), path, sqlite.WithBusyTimeout(time.Minute))
		})
	}
	wg.Wait()
	for i, s := range stores {
		if s != nil {
			if err := s.Close(); err != nil && errs[i] == nil {
				errs[i] = err
			}
		}
	}
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("open %d of %d: %w", i+1, n, err)
		}
	}
	return nil
}

// TestOpenChild is the child side of TestConcurrentOpenNewFile: it says it is
// ready, waits for the word on stdin, and opens the file.
func TestOpenChild(t *testing.T) {
	path := os.Getenv(openChildEnv)
	if path == "" {
		t.Skip("run by TestConcurrentOpenNewFile in a child process")
	}
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		t.Fatalf("wait for the start: %v", err)
	}
	if err := openMany(path, 5); err != nil {
		t.Fatal(err)
	}
}

// TestConcurrentOpenNewFile creates one new store from many connections at
// once: goroutines of this process and of two child processes. Every open
// must wait for the others on the busy timeout, never fail on a lock.
func TestConcurrentOpenNewFile(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts child processes")
	}
	const rounds, children = 20, 2
	for round := range rounds {
		path := filepath.Join(t.TempDir(), fmt.Sprintf("new-%d.db", round))
		type child struct {
			cmd   *exec.Cmd
			start io.WriteCloser
			out   *bufio.Reader
		}
		var kids []child
		for range children {
			cmd := exec.Command(os.Args[0], "-test.run=^TestOpenChild$", "-test.count=1")
			testproc.DieWithParent(cmd)
			cmd.Env = append(os.Environ(), openChildEnv+"="+path)
			cmd.Stderr = os.Stderr
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			out := bufio.NewReader(stdout)
			if line, err := out.ReadString('\n'); err != nil || line != "ready\n" {
				t.Fatalf("child: %q %v", line, err)
			}
			kids = append(kids, child{cmd: cmd, start: stdin, out: out})
		}
		for _, k := range kids {
			if _, err := io.WriteString(k.start, "go\n"); err != nil {
				t.Fatal(err)
			}
		}
		err := openMany(path, 10)
		for i, k := range kids {
			k.start.Close()
			rest, _ := k.out.ReadString(0)
			if werr := k.cmd.Wait(); werr != nil {
				t.Errorf("round %d: child %d: %v\n%s", round, i, werr, rest)
			}
		}
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if t.Failed() {
			return
		}
	}
}
