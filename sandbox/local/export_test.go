package local

// ProbeCount returns how many bwrap probes this process has started.
func ProbeCount() int64 { return probeCount.Load() }
