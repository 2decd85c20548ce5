package hitch

// Closing is closed once rt.Close has begun and its runners are draining.
func Closing(rt *Runtime) <-chan struct{} { return rt.eng.Closing() }

// WatchPrunes returns a channel that gets each retention pass's error; call
// it before Lead.
func WatchPrunes(rt *Runtime) <-chan error {
	rt.testPruned = make(chan error, 16)
	return rt.testPruned
}
