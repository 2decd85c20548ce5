package server_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hitch-dev/hitch/api"
)

// BenchmarkServeLoad runs a real hitch serve on loopback and 64 clients
// that each start runs of a scripted agent and follow their event
// streams to the end, b.N runs in all (bounded by -benchtime Nx). It
// reports runs/s, requests/s (a start and a stream per run), p50 and p99
// from sending the start to receiving the stream's first event, and the
// server's peak RSS. docs/benchmarks.md has the command and figures.
func BenchmarkServeLoad(b *testing.B) {
	const clients = 64
	dir := testConfig(b, true)
	p := serve(b, dir, "--streams-per-token", strconv.Itoa(2*clients))
	admin := &client{t: b, url: p.URL, token: tokAdmin}
	var next atomic.Int64
	lat := make([][]time.Duration, clients)
	replies := make([][]time.Duration, clients)
	errs := make(chan error, clients)
	b.ResetTimer()
	t0 := time.Now()
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				d, r, err := startAndFollow(admin, fmt.Sprintf("load-%d-%d", time.Now().UnixNano(), i))
				if err != nil {
					errs <- err
					return
				}
				lat[c] = append(lat[c], d)
				replies[c] = append(replies[c], r)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(t0)
	b.StopTimer()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	pct := func(per [][]time.Duration, q float64) float64 {
		var all []time.Duration
		for _, l := range per {
			all = append(all, l...)
		}
		slices.Sort(all)
		return float64(all[min(len(all)-1, int(q*float64(len(all))))].Microseconds()) / 1000
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "runs/s")
	b.ReportMetric(2*float64(b.N)/elapsed.Seconds(), "requests/s")
	b.ReportMetric(pct(lat, 0.50), "p50_first_event_ms")
	b.ReportMetric(pct(lat, 0.99), "p99_first_event_ms")
	b.ReportMetric(pct(replies, 0.50), "p50_start_reply_ms")
	b.ReportMetric(peakRSS(b, p.Pid()), "server_peak_rss_MiB")
	b.ReportMetric(cpuSeconds(b, p.Pid())*1000/float64(b.N), "server_cpu_ms/run")
	b.ReportMetric(0, "ns/op")
}

// startAndFollow starts a run and follows its stream to the end event; it
// returns the time from sending the start to the first event, and to the
// start's reply.
func startAndFollow(c *client, id string) (first, reply time.Duration, err error) {
	t0 := time.Now()
	req, _ := newRequest("POST", c.url+"/v1/runs", strings.NewReader(fmt.Sprintf(`{"agent":"quick","input":"go","id":%q}`, id)), c.token)
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, 0, err
	}
	resp.Body.Close()
	reply = time.Since(t0)
	if resp.StatusCode != 201 {
		return 0, 0, fmt.Errorf("start: %d", resp.StatusCode)
	}
	s, err := c.openStream(context.Background(), "/v1/runs/"+id+"/events", "")
	if err != nil {
		return 0, 0, err
	}
	defer s.Body.Close()
	if s.StatusCode != 200 {
		return 0, 0, fmt.Errorf("stream: %d", s.StatusCode)
	}
	ended := false
	err = readEvents(s.Body, func(ev event) bool {
		if first == 0 {
			first = time.Since(t0)
		}
		ended = ev.kind == api.EventEnd
		return !ended
	})
	if !ended {
		return 0, 0, fmt.Errorf("stream of %s ended early: %v", id, err)
	}
	return first, reply, nil
}

// cpuSeconds reads a process's user and system CPU time from /proc.
func cpuSeconds(b *testing.B, pid int) float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Logf("no /proc: %v", err)
		return 0
	}
	// The fields after the command name, which is in parentheses.
	f := strings.Fields(string(raw[strings.LastIndexByte(string(raw), ')')+2:]))
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // clock ticks of 1/100 s
}

// peakRSS reads a process's peak resident set, in MiB, from /proc.
func peakRSS(b *testing.B, pid int) float64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Logf("no /proc: %v", err)
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}
