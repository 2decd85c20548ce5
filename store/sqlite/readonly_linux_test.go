//go:build linux

package sqlite_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/sqlite"
	"github.com/hitch-dev/hitch/store/storetest"
)

// The child side of inReadOnlyDir reads what to do from these.
const (
	roDirEnv      = "HITCH_SQLITE_RO_DIR"
	roScenarioEnv = "HITCH_SQLITE_RO_SCENARIO"
)

// roScenarios run in a directory that the process cannot write to.
var roScenarios = map[string]func(t *testing.T, dir string){
	// A new store cannot be created there; the error names the file.
	"create": func(t *testing.T, dir string) {
		path := filepath.Join(dir, "new.db")
		s, err := sqlite.Open(t.Context(), path)
		storetest.OpenRefused(t, s, err, path)
		if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the file exists after the failed open: %v", err)
		}
	},
	// An existing store cannot be opened for writing; it is left alone.
	"write": func(t *testing.T, dir string) {
		path := filepath.Join(dir, "hitch.db")
		before := hashFile(t, path)
		s, err := sqlite.Open(t.Context(), path)
		storetest.OpenRefused(t, s, err, path)
		if hashFile(t, path) != before {
			t.Fatal("the failed open changed the file")
		}
	},
	// It can be opened read-only, and read.
	"read": func(t *testing.T, dir string) {
		checkReadOnly(t, filepath.Join(dir, "hitch.db"))
	},
	// Also while another process writes to it: the reader sees its
	// latest commit, still in the -wal file, through the writer's -shm.
	// A driver whose SQLite cannot use an -shm it cannot write refuses
	// with an error that says what to do.
	"read-live": func(t *testing.T, dir string) {
		path := filepath.Join(dir, "hitch.db")
		s, err := sqlite.Open(t.Context(), path, sqlite.ReadOnly())
		if err != nil && strings.Contains(err.Error(), "not yet moved into the file: open it read-write once") {
			t.Logf("refused: %v", err)
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		checkReadOnly(t, path)
		defer s.Close()
		if _, err := s.RunGet(t.Context(), "late"); err != nil {
			t.Fatalf("the writer's latest run: %v", err)
		}
	},
}

// TestReadOnlyChild is the child side of inReadOnlyDir: in its own mount
// namespace it bind-mounts the directory read-only over itself, proves that
// even root cannot write there, and runs the scenario.
func TestReadOnlyChild(t *testing.T) {
	dir := os.Getenv(roDirEnv)
	if dir == "" {
		t.Skip("run by inReadOnlyDir in a child process")
	}
	if err := syscall.Mount(dir, dir, "", syscall.MS_BIND, ""); err != nil {
		t.Fatalf("bind mount: %v", err)
	}
	if err := syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount read-only: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "probe"), nil, 0o600); err == nil {
		t.Fatal("the read-only mount is writable")
	}
	roScenarios[os.Getenv(roScenarioEnv)](t, dir)
}

// inReadOnlyDir runs a scenario with dir read-only to it. Permissions do not
// stop root, which is how CI runs, so root gets a child process in a mount
// namespace of its own where dir is a read-only bind mount; anyone else gets
// the write permission taken off dir and its files.
func inReadOnlyDir(t *testing.T, dir, scenario string) {
	t.Helper()
	if os.Geteuid() != 0 {
		files, _ := filepath.Glob(filepath.Join(dir, "*"))
		for _, p := range append(files, dir) {
			if err := os.Chmod(p, 0o500); err != nil {
				t.Fatal(err)
			}
		}
		t.Cleanup(func() {
			for _, p := range append(files, dir) {
				os.Chmod(p, 0o700)
			}
		})
		roScenarios[scenario](t, dir)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestReadOnlyChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), roDirEnv+"="+dir, roScenarioEnv+"="+scenario)
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	out, err := cmd.CombinedOutput()
	if errors.Is(err, syscall.EPERM) {
		t.Skipf("root without the right to make a mount namespace: %v", err)
	}
	if err != nil || !strings.Contains(string(out), "--- PASS: TestReadOnlyChild") {
		t.Fatalf("scenario %s in a read-only directory: %v\n%s", scenario, err, out)
	}
}

// A store whose writer is still running in another process (so its -wal and
// -shm files exist) can be read from a read-only view of its directory.
func TestReadOnlyDirectoryLiveWriter(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs a read-only view of a directory that the writer can still write to")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "hitch.db")
	seed(t, path)
	w := open(t, path)
	defer w.Close()
	if _, _, err := w.RunCreate(t.Context(), store.RunCreateParams{ID: "late", Agent: "a",
		Entries: []store.EntryInput{{Kind: "k", Data: []byte(`{}`)}}}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path + "-wal"); err != nil || fi.Size() == 0 {
		t.Fatalf("the writer's last write is not in the -wal file: %v", err)
	}
	inReadOnlyDir(t, dir, "read-live")
}

func TestOpenUnwritableDirectory(t *testing.T) {
	t.Parallel()
	inReadOnlyDir(t, t.TempDir(), "create")
}

func TestReadOnlyDirectory(t *testing.T) {
	t.Parallel()
	for _, scenario := range []string{"write", "read"} {
		t.Run(scenario, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			seed(t, filepath.Join(dir, "hitch.db"))
			inReadOnlyDir(t, dir, scenario)
		})
	}
}
