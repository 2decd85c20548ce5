package main

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

// TestVersion: hitch version needs no config and says what the binary is,
// as text and as JSON.
func TestVersion(t *testing.T) {
	t.Parallel()
	code, out, errOut := cli(t, "version")
	if code != exitOK || !strings.HasPrefix(out, "hitch ") || !strings.Contains(out, runtime.GOOS+"/"+runtime.GOARCH) {
		t.Fatalf("version: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = cli(t, "--json", "version")
	var b buildInfo
	if err := json.Unmarshal([]byte(out), &b); code != exitOK || err != nil {
		t.Fatalf("version --json: exit %d %v\n%s\n%s", code, err, out, errOut)
	}
	if b.Version == "" || b.Go == "" || b.Platform != runtime.GOOS+"/"+runtime.GOARCH {
		t.Errorf("version --json: %+v", b)
	}
	if code, _, _ := cli(t, "version", "extra"); code != exitUsage {
		t.Errorf("version with an argument: exit %d, want %d", code, exitUsage)
	}
}
