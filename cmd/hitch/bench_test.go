package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestBenchNodes runs the workload on two worker processes of the real
// binary sharing one SQLite file, with model latency: every run completes,
// and the line says how many runs each node ended, which add up.
func TestBenchNodes(t *testing.T) {
	t.Parallel()
	code, out, errOut := inDir(t, t.TempDir(), "bench", "--nodes", "2", "--runs", "20", "--steps", "1",
		"--model-latency", "20ms", "--jitter", "10ms")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	m := regexp.MustCompile(`nodes=2 .* share=node1:(\d+)\(.*\),node2:(\d+)\(`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no share in %q", out)
	}
	a, _ := strconv.Atoi(m[1])
	b, _ := strconv.Atoi(m[2])
	if a+b != 20 {
		t.Errorf("the nodes ended %d and %d runs, want 20 in all", a, b)
	}
}

// TestBenchModelLatency: with --model-latency the line reports what the
// runtime added to a step beyond the model, and the process's peaks.
func TestBenchModelLatency(t *testing.T) {
	t.Parallel()
	code, out, errOut := inDir(t, t.TempDir(), "bench", "--runs", "20", "--steps", "2", "--model-latency", "10ms")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if !regexp.MustCompile(`runs=20 steps=2 .* model_latency=10ms .* step_overhead_ms_p50=[0-9.]+ p99=[0-9.]+ .* peak_rss_mib=[1-9]`).MatchString(out) {
		t.Errorf("line %q", out)
	}
	if code, _, errOut := inDir(t, t.TempDir(), "bench", "--model-latency", "1s", "--jitter", "2s"); code != 2 {
		t.Errorf("a jitter past the latency: exit %d, %s", code, errOut)
	}
}

// TestBenchRecover brings runs into flight on a worker process of the real
// binary, kills it with SIGKILL mid model call, and recovers them: every run
// completes after the recovery, and the line times its phases.
func TestBenchRecover(t *testing.T) {
	t.Parallel()
	code, out, errOut := inDir(t, t.TempDir(), "bench", "--recover", "20", "--steps", "1", "--lease", "1s", "--model-latency", "10ms")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if !regexp.MustCompile(`recover=20 steps=1 model_latency=10ms lease=1s claimed_s=[0-9.]+ in_flight_s=[0-9.]+ drained_s=[0-9.]+`).MatchString(out) {
		t.Errorf("line %q", out)
	}
	for _, bad := range [][]string{{"--recover", "-1"}, {"--recover", "5", "--lease", "10ms"}} {
		if code, _, errOut := inDir(t, t.TempDir(), append([]string{"bench"}, bad...)...); code != 2 {
			t.Errorf("bench %v: exit %d, %s", bad, code, errOut)
		}
	}
}

// TestBenchSecrets: with --secrets the workload runs with that many secret
// values declared, and says so; a count out of range is a usage error.
func TestBenchSecrets(t *testing.T) {
	t.Parallel()
	code, out, errOut := inDir(t, t.TempDir(), "bench", "--runs", "4", "--steps", "2", "--secrets", "10")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if !regexp.MustCompile(`runs=4 steps=2 .* secrets=10\b`).MatchString(out) {
		t.Errorf("line %q", out)
	}
	for _, bad := range []string{"-1", "1001"} {
		if code, _, errOut := inDir(t, t.TempDir(), "bench", "--secrets", bad); code != 2 {
			t.Errorf("bench --secrets %s: exit %d, %s", bad, code, errOut)
		}
	}
}

// TestBenchCPUProfile: --cpuprofile writes a profile of the API measurement
// as of the default one, and is refused where the runs are driven by other
// processes, rather than ignored.
func TestBenchCPUProfile(t *testing.T) {
	t.Parallel()
	for _, mode := range [][]string{{"--runs", "4", "--steps", "2"}, {"--clients", "2", "--runs", "4", "--steps", "1"}} {
		dir := t.TempDir()
		prof := filepath.Join(dir, "cpu.prof")
		code, out, errOut := inDir(t, dir, append([]string{"bench", "--cpuprofile", prof}, mode...)...)
		if code != 0 {
			t.Fatalf("bench %v: exit %d\n%s\n%s", mode, code, out, errOut)
		}
		if fi, err := os.Stat(prof); err != nil || fi.Size() == 0 {
			t.Errorf("bench %v: profile %v, %v: want a profile written", mode, fi, err)
		}
	}
	for _, other := range [][]string{{"--nodes", "2"}, {"--recover", "5"}, {"--wake", "5"}, {"--parked", "5"}} {
		dir := t.TempDir()
		code, _, errOut := inDir(t, dir, append([]string{"bench", "--cpuprofile", filepath.Join(dir, "cpu.prof")}, other...)...)
		if code != 2 || !strings.Contains(errOut, "--cpuprofile") {
			t.Errorf("bench --cpuprofile %v: exit %d, %q: want a usage error naming --cpuprofile", other, code, errOut)
		}
		if _, err := os.Stat(filepath.Join(dir, "cpu.prof")); err == nil {
			t.Errorf("bench --cpuprofile %v: a refused command wrote its profile", other)
		}
	}
}

// TestBenchRefusesFlagsItWouldIgnore: each measurement of bench reads some
// of its flags; a flag the chosen one would ignore is a usage error naming
// every such flag, and two measurements at once are refused.
func TestBenchRefusesFlagsItWouldIgnore(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--clients", "2", "--model-latency", "1s"}, []string{"--model-latency", "--clients"}},
		{[]string{"--clients", "2", "--secrets", "3", "--tracing", "otlp"}, []string{"--secrets", "--tracing"}},
		{[]string{"--recover", "5", "--runs", "10"}, []string{"--runs", "--recover"}},
		{[]string{"--recover", "5", "--max-runners", "10"}, []string{"--max-runners"}},
		{[]string{"--wake", "5", "--secrets", "3"}, []string{"--secrets", "--wake"}},
		{[]string{"--parked", "200", "--steps", "3"}, []string{"--steps", "--parked"}},
		{[]string{"--nodes", "2", "--tracing", "otlp"}, []string{"--tracing", "--nodes"}},
		{[]string{"--nodes", "2", "--step-concurrency", "4"}, []string{"--step-concurrency"}},
		{[]string{"--two-requests"}, []string{"--two-requests", "default"}},
		{[]string{"--lease", "3s", "--wake-here"}, []string{"--lease", "--wake-here"}},
		{[]string{"--wake", "3", "--clients", "2"}, []string{"--wake", "--clients", "one"}},
	} {
		code, out, errOut := inDir(t, t.TempDir(), append([]string{"bench"}, c.args...)...)
		if code != 2 {
			t.Errorf("bench %v: exit %d, %q %q: want 2", c.args, code, out, errOut)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("bench %v: %q does not name %s", c.args, errOut, w)
			}
		}
	}
}
