package hitch_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// .ci/run never skips the PostgreSQL tests silently: where PostgreSQL can
// be installed (root, a cluster tool or apt-get) or CI is set, a database
// that does not start fails the run; HITCH_SKIP_POSTGRES=1 skips them on
// purpose; a machine where it cannot be installed skips them and says so.
// The cluster tools and id are stand-ins on PATH, so nothing real starts.
func TestCIFailsWhenPostgresDoesNotStart(t *testing.T) {
	t.Parallel()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	scripts := map[string]string{
		"pg_lsclusters": "#!/bin/sh\necho '15 main 5432 down postgres /var/lib/postgresql/15/main /var/log/postgresql/x.log'\n",
		"pg_ctlcluster": "#!/bin/sh\necho 'the cluster refuses to start' >&2\nexit 1\n",
	}
	root, user := t.TempDir(), t.TempDir()
	for dir, uid := range map[string]string{root: "0", user: "1000"} {
		scripts["id"] = "#!/bin/sh\necho " + uid + "\n"
		for name, body := range scripts {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, c := range []struct {
		name    string
		path    string
		env     []string
		fails   bool
		message string
	}{
		{"installable, does not start", root, nil, true, "failing rather than skipping"},
		{"installable, skipped on purpose", root, []string{"HITCH_SKIP_POSTGRES=1"}, false, "HITCH_SKIP_POSTGRES=1: the PostgreSQL tests will skip"},
		{"not installable", user, nil, false, "cannot be installed here (not root"},
		{"not installable, in CI", user, []string{"CI=true"}, true, "failing rather than skipping"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(bash, filepath.Join(".ci", "run"), "postgres")
			cmd.Env = append([]string{"PATH=" + c.path + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + t.TempDir()}, c.env...)
			out, err := cmd.CombinedOutput()
			if failed := err != nil; failed != c.fails {
				t.Errorf("failed: %v, want %v (%v)\n%s", failed, c.fails, err, out)
			}
			if !strings.Contains(string(out), c.message) {
				t.Errorf("output lacks %q:\n%s", c.message, out)
			}
		})
	}
}
