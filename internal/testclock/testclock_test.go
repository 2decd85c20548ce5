package testclock_test

import (
	"testing"
	"time"

	"github.com/hitch-dev/hitch/internal/testclock"
)

func TestClockMovesOnlyWhenMoved(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	c := testclock.New(t0)
	if got := c.Now(); !got.Equal(t0) {
		t.Fatalf("new clock at %v, want %v", got, t0)
	}
	c.Add(time.Minute)
	if got := c.Now(); !got.Equal(t0.Add(time.Minute)) {
		t.Fatalf("after Add: %v", got)
	}
	c.Set(t0.Add(-time.Hour))
	if got := c.Now(); !got.Equal(t0.Add(-time.Hour)) {
		t.Fatalf("after Set: %v", got)
	}
}
