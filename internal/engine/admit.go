package engine

// A node may drive thousands of runs, nearly all of them waiting on a model,
// a commit or a timer. The few with CPU work to do (folding, building a
// request, staging entries) take a step slot for it, so that however many
// runs are ready the scheduler's queue holds only a few runners, and a
// request's goroutine (a start, a stream) gets a core soon. A runner gives
// its slot back for every wait, so a slow model or a commit never holds one.

// busy takes a step slot for the CPU work that follows, waiting for one if
// need be. When the runner's context ends first it goes on without one: it
// is about to return.
func (r *runner) busy() {
	if r.holding || r.e.steps == nil {
		return
	}
	select {
	case r.e.steps <- struct{}{}:
		r.holding = true
	case <-r.ctx.Done():
	}
}

// idle gives the step slot back before a wait.
func (r *runner) idle() {
	if r.holding {
		<-r.e.steps
		r.holding = false
	}
}
