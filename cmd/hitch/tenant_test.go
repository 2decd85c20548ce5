package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestRunsListByTenantAndPages(t *testing.T) {
	t.Parallel()
	dir, cfg := scriptedConfig(t, "turns:\n  - text: hi\n")
	db := filepath.Join(dir, "runs.db")
	for _, r := range []struct{ id, tenant string }{{"a1", "acme"}, {"g1", "globex"}, {"a2", "acme"}, {"a3", "acme"}, {"d1", ""}} {
		args := []string{"run", "-c", cfg, "--id", r.id, "hi"}
		if r.tenant != "" {
			args = append(args, "--tenant", r.tenant)
		}
		if code, out, errOut := cli(t, args...); code != exitOK {
			t.Fatalf("run %s: exit %d\n%s%s", r.id, code, out, errOut)
		}
	}
	list := func(args ...string) (ids, tenants []string, errOut string) {
		t.Helper()
		code, out, errOut := cli(t, append([]string{"runs", "list", "--db", db, "--json"}, args...)...)
		if code != exitOK {
			t.Fatalf("runs list %v: exit %d\n%s%s", args, code, out, errOut)
		}
		for line := range strings.Lines(out) {
			var v struct{ ID, Tenant string }
			if err := json.Unmarshal([]byte(line), &v); err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			ids, tenants = append(ids, v.ID), append(tenants, v.Tenant)
		}
		return ids, tenants, errOut
	}
	if ids, tenants, _ := list("--tenant", "acme"); !slices.Equal(ids, []string{"a3", "a2", "a1"}) ||
		slices.ContainsFunc(tenants, func(s string) bool { return s != "acme" }) {
		t.Fatalf("acme's runs: %v %v", ids, tenants)
	}
	if ids, _, _ := list("--tenant", "default"); !slices.Equal(ids, []string{"d1"}) {
		t.Fatalf("default's runs: %v", ids)
	}
	if ids, _, _ := list("--agent", "nobody"); len(ids) != 0 {
		t.Fatalf("runs of an unknown agent: %v", ids)
	}
	// Pages of two, following the cursor printed on stderr.
	var all []string
	var args []string
	for range 4 {
		ids, _, errOut := list(append([]string{"--tenant", "acme", "--limit", "2"}, args...)...)
		all = append(all, ids...)
		_, cursor, ok := strings.Cut(strings.TrimSpace(errOut), "more: --after ")
		if !ok {
			break
		}
		args = []string{"--after", cursor}
	}
	if !slices.Equal(all, []string{"a3", "a2", "a1"}) {
		t.Fatalf("pages: %v", all)
	}
	for _, bad := range [][]string{{"--tenant", "ACME"}, {"--after", "junk"}} {
		code, out, errOut := cli(t, append([]string{"runs", "list", "--db", db}, bad...)...)
		if code != exitUsage || !strings.Contains(errOut, bad[0]) {
			t.Errorf("%v: exit %d, want %d naming the flag\n%s%s", bad, code, exitUsage, out, errOut)
		}
	}
	if code, out, errOut := cli(t, "run", "-c", cfg, "--tenant", "Bad Tenant", "hi"); code != exitUsage || !strings.Contains(errOut, "--tenant") {
		t.Errorf("run with a bad tenant: exit %d\n%s%s", code, out, errOut)
	}
}
