package engine

import "sync"

// slots counts the runs an engine drives at once. A slot is taken before a
// run is claimed, never after, so a node never holds a lease it has no room
// to drive, and a caller never waits on a full node.
type slots struct {
	mu   sync.Mutex
	max  int
	used int
	// freed is closed, and replaced, whenever a slot is given back, so any
	// number of waiters can watch for room.
	freed chan struct{}
}

func newSlots(n int) *slots { return &slots{max: n, freed: make(chan struct{})} }

// take takes up to n free slots without waiting and returns how many it
// took.
func (s *slots) take(n int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n = max(min(n, s.max-s.used), 0)
	s.used += n
	return n
}

// give gives n slots back.
func (s *slots) give(n int) {
	if n <= 0 {
		return
	}
	s.mu.Lock()
	s.used -= n
	close(s.freed)
	s.freed = make(chan struct{})
	s.mu.Unlock()
}

// free is how many slots are free now.
func (s *slots) free() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.max - s.used
}

// inUse is how many slots are taken now.
func (s *slots) inUse() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.used
}

// wait returns a channel closed the next time a slot is given back.
func (s *slots) wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.freed
}
