package client_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/hitch-dev/hitch/client"
)

// BenchmarkFollowShortStream follows a run's stream of five entries and
// its end event, as a client that starts and follows short runs does, and
// reports what a stream costs the client (-benchmem: its allocations).
func BenchmarkFollowShortStream(b *testing.B) {
	var body strings.Builder
	for pos := 1; pos <= 5; pos++ {
		fmt.Fprintf(&body, "id: %d\nevent: entry\ndata: {\"run\":\"r1\",\"pos\":%d,\"kind\":\"call.settled\",\"at\":\"2026-05-01T09:30:18.406950Z\",\"data\":{\"output\":\"a line of notes\"}}\n\n", pos, pos)
	}
	body.WriteString("event: end\ndata: {}\n\n")
	stream := body.String()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte(stream))
	}))
	defer hs.Close()
	c, err := client.New(hs.URL)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		for _, err := range c.Follow(ctx, "r1", 0) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != 5 {
			b.Fatalf("%d entries", n)
		}
	}
}
