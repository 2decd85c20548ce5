package bench

import (
	"context"
	"iter"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hitch-dev/hitch/model"
)

// latencyModel makes every model call of the workload take a production
// model's time — Latency, give or take up to Jitter, drawn uniformly — and
// times what the runtime adds around the calls: from a run's start to its
// first request, and from each reply to the run's next request.
type latencyModel struct {
	model.Model
	latency, jitter time.Duration

	mu    sync.Mutex
	last  map[string]time.Time // by run input: when the run's previous reply (or start) was
	first map[string]bool      // by run input: the run has made its first request
	// starts are the gaps from a start to the run's first request, steps
	// those from a reply to the run's next request.
	starts, steps []time.Duration

	// requests counts the requests received; at countAt, onCount is
	// called once.
	requests atomic.Int64
	countAt  int64
	onCount  func()
}

// at calls f once when the model has received n requests.
func (m *latencyModel) at(n int, f func()) {
	m.countAt, m.onCount = int64(n), f
}

func newLatencyModel(m model.Model, latency, jitter time.Duration, runs int) *latencyModel {
	return &latencyModel{Model: m, latency: latency, jitter: jitter, last: make(map[string]time.Time, runs), first: make(map[string]bool, runs)}
}

// started notes when a run, named by its input, was started.
func (m *latencyModel) started(input string, at time.Time) {
	m.mu.Lock()
	m.last[input] = at
	m.mu.Unlock()
}

// note records the overhead before a request of the run with input, and
// starts its clock again at now.
func (m *latencyModel) note(input string, now time.Time, reply bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !reply {
		at, ok := m.last[input]
		switch {
		case !ok:
		case m.first[input]:
			m.steps = append(m.steps, now.Sub(at))
		default:
			m.first[input] = true
			m.starts = append(m.starts, now.Sub(at))
		}
		return
	}
	m.last[input] = now
}

func (m *latencyModel) Generate(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	input := firstUser(req)
	m.note(input, time.Now(), false)
	if n := m.requests.Add(1); n == m.countAt && m.onCount != nil {
		m.onCount()
	}
	return func(yield func(*model.Chunk, error) bool) {
		d := m.latency
		if m.jitter > 0 {
			d += time.Duration(rand.Int64N(int64(2*m.jitter)+1)) - m.jitter
		}
		if d > 0 {
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				yield(nil, ctx.Err())
				return
			}
		}
		for c, err := range m.Model.Generate(ctx, req) {
			if !yield(c, err) {
				break
			}
		}
		m.note(input, time.Now(), true)
	}
}

func firstUser(req *model.Request) string {
	for _, msg := range req.Messages {
		if msg.Role == model.RoleUser {
			return msg.Text
		}
	}
	return ""
}

// Overhead is the time the runtime adds beyond the model's latency: at a
// step, from a reply to the run's next model request (its journal
// commits, the tool call, the next request's assembly), and at the start,
// from Start to the run's first request.
type Overhead struct {
	Step, Start Quantiles
}

// Quantiles summarize durations.
type Quantiles struct {
	P50, P99, Max time.Duration
	Samples       int
}

func quantiles(d []time.Duration) Quantiles {
	if len(d) == 0 {
		return Quantiles{}
	}
	g := slices.Clone(d)
	slices.Sort(g)
	at := func(q float64) time.Duration { return g[min(int(q*float64(len(g))), len(g)-1)] }
	return Quantiles{P50: at(0.50), P99: at(0.99), Max: g[len(g)-1], Samples: len(g)}
}

func (m *latencyModel) overhead() Overhead {
	m.mu.Lock()
	defer m.mu.Unlock()
	return Overhead{Step: quantiles(m.steps), Start: quantiles(m.starts)}
}

// peaks samples the process's heap and goroutines while a measurement
// runs, and reads its peak resident set size at the end.
type peaks struct {
	stop chan struct{}
	done chan struct{}

	heap       uint64
	goroutines int
}

func watchPeaks(every time.Duration) *peaks {
	p := &peaks{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			p.heap = max(p.heap, ms.HeapInuse)
			p.goroutines = max(p.goroutines, runtime.NumGoroutine())
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
		}
	}()
	return p
}

// end stops sampling and returns the peak heap in use, the most
// goroutines seen, and the peak resident set size (0 where /proc is not).
func (p *peaks) end() (heap uint64, goroutines int, rss uint64) {
	close(p.stop)
	<-p.done
	return p.heap, p.goroutines, peakRSS()
}

// peakRSS reads the process's peak resident set size from /proc.
func peakRSS() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err == nil {
				return kb << 10
			}
		}
	}
	return 0
}
