package hitch

// Closing is closed once rt.Close has begun and its runners are draining.
func Closing(rt *Runtime) <-chan struct{} { return rt.eng.Closing() }
