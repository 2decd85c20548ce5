// Package testclock is a clock for tests that moves only when the test
// moves it: a store's clock (sqlite.WithClock) or a breaker's, so that
// leases, expiries and cool-downs pass without sleeping.
package testclock

import (
	"sync"
	"time"
)

// Clock is a time that stands still until Add or Set moves it. It is safe
// for concurrent use.
type Clock struct {
	mu sync.Mutex
	at time.Time
}

// New returns a clock standing at at.
func New(at time.Time) *Clock { return &Clock{at: at} }

// Now returns the clock's time; pass it where a func() time.Time is wanted.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at
}

// Add moves the clock by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at = c.at.Add(d)
}

// Set moves the clock to t, forward or back.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at = t
}
