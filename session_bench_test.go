package hitch_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/internal/hitchtest"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/sessions"
)

// BenchmarkSend measures durable admissions through Runtime.Sessions().Send: into one
// session, and spread over 64. Each session's first message starts a
// submission whose model call holds until the benchmark ends, so every
// other send is an admission to the queue (one fenced SQLite commit,
// synchronous=FULL).
func BenchmarkSend(b *testing.B) {
	for _, count := range []int{1, 64} {
		b.Run(fmt.Sprintf("sessions=%d", count), func(b *testing.B) {
			release := make(chan struct{})
			m := &funcModel{fn: func(ctx context.Context, _ *model.Request) (*model.Reply, error) {
				select {
				case <-release:
				case <-ctx.Done():
				}
				return nil, context.Canceled
			}}
			a := buildB(b, hitch.Spec{Name: "chat", Model: m})
			rt := openB(b, filepath.Join(b.TempDir(), "hitch.db"), a)
			ctx := context.Background()
			for i := range count {
				id := fmt.Sprintf("s%d", i)
				if _, _, err := rt.Sessions().Open(ctx, a, sessions.Options{ID: id}); err != nil {
					b.Fatal(err)
				}
				if _, err := rt.Sessions().Send(ctx, id, "start", sessions.SendOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			var n atomic.Int64
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := n.Add(1)
					if _, err := rt.Sessions().Send(ctx, fmt.Sprintf("s%d", i%int64(count)), "a message to queue", sessions.SendOptions{}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "sends/s")
			close(release)
		})
	}
}

func buildB(b *testing.B, spec hitch.Spec) *hitch.Agent {
	b.Helper()
	spec.Policy = policy.AllowAll()
	a, err := hitch.Build(spec)
	if err != nil {
		b.Fatal(err)
	}
	return a
}

func openB(b *testing.B, path string, agents ...*hitch.Agent) *hitch.Runtime {
	b.Helper()
	return hitchtest.Open(b, hitch.Config{Store: hitchtest.OpenStore(b, path), Agents: agents})
}

// BenchmarkSendToFirstRequest measures the latency from Runtime.Sessions().Send into
// an idle session to its submission's first model request, on one node
// (SQLite, synchronous=FULL): the admission's commit, the submission's
// start (session row, run and first entry in one commit), the claim, the
// transcript and the request. Each op sends into a session of its own and
// waits for the submission to end; p50 and p99 are of the ops' latencies.
func BenchmarkSendToFirstRequest(b *testing.B) {
	first := make(chan time.Time, 1)
	m := &funcModel{fn: func(context.Context, *model.Request) (*model.Reply, error) {
		select {
		case first <- time.Now():
		default:
		}
		return &model.Reply{Text: "ok"}, nil
	}}
	a := buildB(b, hitch.Spec{Name: "chat", Model: m})
	rt := openB(b, filepath.Join(b.TempDir(), "hitch.db"), a)
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	for i := 0; b.Loop(); i++ {
		id := fmt.Sprintf("s%d", i)
		if _, _, err := rt.Sessions().Open(ctx, a, sessions.Options{ID: id}); err != nil {
			b.Fatal(err)
		}
		m.mu.Lock()
		m.reqs = m.reqs[:0] // keep memory flat
		m.mu.Unlock()
		sent := time.Now()
		if _, err := rt.Sessions().Send(ctx, id, "hello", sessions.SendOptions{}); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, (<-first).Sub(sent))
		if _, err := rt.Sessions().Await(ctx, id); err != nil {
			b.Fatal(err)
		}
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
