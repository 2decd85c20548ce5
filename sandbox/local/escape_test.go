package local_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hitch-dev/hitch/internal/testproc"
	"github.com/hitch-dev/hitch/sandbox"
	"github.com/hitch-dev/hitch/sandbox/local"
)

// bwrapOrSkip skips a test that needs bubblewrap, saying why.
func bwrapOrSkip(t *testing.T) {
	t.Helper()
	if _, err := local.New(local.Config{Root: t.TempDir(), Isolation: sandbox.IsolationBwrap}); err != nil {
		t.Skipf("bubblewrap is not usable here, so the bwrap view cannot be tested: %v", err)
	}
}

// run runs a shell script in sb and returns its combined output.
func run(t *testing.T, sb *local.Sandbox, script string) string {
	t.Helper()
	var out testproc.Buffer
	if _, err := sb.Exec(context.Background(), sandbox.Cmd{Args: []string{"sh", "-c", script}, Stdout: &out}); err != nil {
		t.Fatalf("%s: %v", script, err)
	}
	return out.String()
}

// Under bwrap, a command sees the system directories and its roots, not the
// host's secrets (/etc/shadow, /root, credential files under ~/.aws,
// ~/.ssh and ~/.config), other users' homes, or the environment of this
// process, of pid 1 or of the process that started it. Without a usable
// bwrap it is skipped, saying so.
func TestBwrapEscapeCorpus(t *testing.T) {
	bwrapOrSkip(t)
	canary := fmt.Sprintf("canary-%d-secret", os.Getpid())
	t.Setenv("HITCH_TEST_CANARY", canary)

	// Files holding the canary where credentials live: another user's
	// home with ~/.aws, ~/.ssh and ~/.config, and a file under /root,
	// when this test may create them; a directory in this user's own
	// ~/.config always. Each must be refused or empty inside the view.
	homes := []string{"/root"}
	var planted []string
	plant := func(path string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(canary+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		planted = append(planted, path)
	}
	if os.Getuid() == 0 {
		home, err := os.MkdirTemp("/home", "hitch-escape-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(home) })
		for _, f := range []string{"secret", ".aws/credentials", ".ssh/id_ed25519", ".config/gh/hosts.yml"} {
			plant(filepath.Join(home, f))
		}
		// Another user's: nobody owns it.
		if err := filepath.Walk(home, func(p string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Chown(p, 65534, 65534)
		}); err != nil {
			t.Fatal(err)
		}
		f, err := os.CreateTemp("/root", "hitch-escape-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(f.Name()) })
		f.WriteString(canary)
		f.Close()
		planted = append(planted, f.Name())
		homes = append(homes, home)
	}
	own, err := os.UserHomeDir()
	if err != nil {
		t.Fatalf("this user's home: %v", err)
	}
	homes = append(homes, own)
	cfgDir, err := os.MkdirTemp(filepath.Join(own, ".config"), "hitch-escape-")
	if err != nil {
		if err := os.MkdirAll(filepath.Join(own, ".config"), 0o700); err != nil {
			t.Fatal(err)
		}
		if cfgDir, err = os.MkdirTemp(filepath.Join(own, ".config"), "hitch-escape-"); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { os.RemoveAll(cfgDir) })
	plant(filepath.Join(cfgDir, "token"))

	sb := open(t, local.Config{Isolation: sandbox.IsolationBwrap})

	// Sanity: the commands below would find something if the view let
	// them.
	if out := run(t, sb, "ls /usr/bin | grep -cx sh; cat /etc/passwd | grep -c '^root:'"); out != "1\n1\n" {
		t.Fatalf("the system directories are not usable: %q", out)
	}

	probes := []string{
		"cat /etc/shadow", "cat /etc/gshadow", "cat /etc/shadow-", "cat /etc/ssl/private/*",
		"ls -la /home", "ls -la /root", "cat /root/* /root/.* /home/*/* /home/*/.*",
		"cat ~/.ssh/* ~/.aws/* ~/.config/*",
		"cat /proc/1/environ", "cat /proc/$PPID/environ", fmt.Sprintf("cat /proc/%d/environ", os.Getpid()),
		"cat /proc/*/environ", "env", "ls /run /var /srv /mnt",
		// The process that started the command, and its parent: hitch.
		"read -r _ _ _ pp _ < /proc/$PPID/stat; cat /proc/$pp/environ",
		"cat /proc/1/root/etc/shadow /proc/1/root/root/* /proc/1/cwd/*",
		"find / -maxdepth 3 -path /proc -prune -o -name 'hitch-escape-*' -print",
	}
	for _, h := range homes {
		probes = append(probes, "ls -la "+h, "cat "+h+"/* "+h+"/.*",
			"HOME="+h+"; cat ~/.ssh/* ~/.aws/* ~/.config/* ~/.config/*/* ~/.config/*/*/*")
	}
	// Each planted file, named: refused or empty.
	refuse := map[string]bool{}
	for _, f := range planted {
		p := "cat " + f
		probes = append(probes, p)
		refuse[p] = true
	}
	var shadow []string
	for _, f := range []string{"/etc/shadow", "/etc/gshadow"} {
		if b, err := os.ReadFile(f); err == nil {
			for l := range strings.Lines(string(b)) {
				if l = strings.TrimSpace(l); l != "" {
					shadow = append(shadow, l)
				}
			}
		}
	}
	for _, p := range probes {
		out := run(t, sb, p+" 2>&1")
		if strings.Contains(out, canary) {
			t.Errorf("%s: the canary leaked: %q", p, lineWith(out, canary))
		}
		for _, l := range shadow {
			if strings.Contains(out, l) {
				t.Errorf("%s: a shadow entry leaked: %q", p, l)
			}
		}
		if !strings.Contains(p, "hitch-escape-") && strings.Contains(out, "hitch-escape-") {
			t.Errorf("%s: shows a file this test hid: %q", p, lineWith(out, "hitch-escape-"))
		}
		if refuse[p] && out != "" && !strings.Contains(out, "No such file") && !strings.Contains(out, "Permission denied") {
			t.Errorf("%s: neither refused nor empty: %q", p, out)
		}
	}
	if len(planted) < 2 && os.Getuid() == 0 {
		t.Fatalf("planted only %v", planted)
	}
}

// ReadPaths widens the bwrap view, read-only.
func TestBwrapReadPaths(t *testing.T) {
	t.Parallel()
	bwrapOrSkip(t)
	// /tmp is private inside bwrap, so the extra directory lives elsewhere.
	extra, err := os.MkdirTemp("/var/tmp", "hitch-read-")
	if err != nil {
		t.Skipf("no host directory outside /tmp: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(extra) })
	if err := os.WriteFile(filepath.Join(extra, "f.txt"), []byte("visible\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("cat %[1]s/f.txt; touch %[1]s/new 2>/dev/null && echo wrote", extra)
	if out := run(t, open(t, local.Config{Isolation: sandbox.IsolationBwrap}), script); strings.Contains(out, "visible") {
		t.Fatalf("a path outside the view is readable: %q", out)
	}
	out := run(t, open(t, local.Config{Isolation: sandbox.IsolationBwrap, ReadPaths: []string{extra}}), script)
	if out != "visible\n" {
		t.Fatalf("with ReadPaths: %q, want the file read and the write refused", out)
	}
	// /tmp is private, but a path in it can still be added.
	inTmp := t.TempDir()
	if err := os.WriteFile(filepath.Join(inTmp, "f.txt"), []byte("visible\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out = run(t, open(t, local.Config{Isolation: sandbox.IsolationBwrap, ReadPaths: []string{inTmp}}), "cat "+inTmp+"/f.txt")
	if out != "visible\n" {
		t.Fatalf("with ReadPaths in /tmp: %q", out)
	}
	for _, bad := range [][]string{{"relative"}, {"/no/such/path"}, {""}} {
		if _, err := local.New(local.Config{Root: t.TempDir(), Isolation: sandbox.IsolationBwrap, ReadPaths: bad}); err == nil || !strings.Contains(err.Error(), "ReadPaths") {
			t.Errorf("ReadPaths %q: error %v, want one naming ReadPaths", bad, err)
		}
	}
}

// lineWith returns the first line of s that holds sub, so that a failure
// names what leaked without printing whatever else the command could read.
func lineWith(s, sub string) string {
	for l := range strings.Lines(s) {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}
