package config

import (
	"strings"
	"testing"
)

func TestWorkerMaxRunners(t *testing.T) {
	t.Parallel()
	const head = `
models:
  demo: {provider: scripted, script: script.yaml}
agents:
  - {name: helper, model: demo, policy: allow_all}
`
	path := write(t, map[string]string{"script.yaml": script, "hitch.yaml": head + "worker:\n  max_runners: 10000\n"})
	cfg, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer cfg.Close()
	if n := cfg.File.MaxRunners(); n != 10000 {
		t.Errorf("max_runners = %d, want 10000", n)
	}
	for _, bad := range []string{"-1", "100001"} {
		path := write(t, map[string]string{"script.yaml": script, "hitch.yaml": head + "worker:\n  max_runners: " + bad + "\n"})
		_, err := Load(path, Options{})
		if want := `:7: worker.max_runners: ` + bad + `: want 1 to 100000`; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("max_runners %s: %v, want %q", bad, err, want)
		}
	}
}
