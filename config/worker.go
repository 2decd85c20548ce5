package config

import "github.com/hitch-dev/hitch"

// Worker configures the nodes that drive runs: hitch worker, hitch serve
// and hitch recover.
type Worker struct {
	// MaxRunners bounds the runs one node drives at once (its runs in
	// flight); the --max-runners flag wins. Default
	// hitch.DefaultMaxRunners; 1 to hitch.MaxMaxRunners.
	MaxRunners int `yaml:"max_runners,omitempty"`
}

// workerProblems checks the worker section.
func workerProblems(l locator, w *Worker) []Problem {
	if w == nil {
		return nil
	}
	var probs []Problem
	if w.MaxRunners != 0 && (w.MaxRunners < 1 || w.MaxRunners > hitch.MaxMaxRunners) {
		probs = append(probs, l.problem("worker.max_runners", "%d: want 1 to %d", w.MaxRunners, hitch.MaxMaxRunners))
	}
	return probs
}

// MaxRunners is the worker section's max_runners, or 0 when it sets none
// (the runtime's default then applies).
func (f *File) MaxRunners() int {
	if f == nil || f.Worker == nil {
		return 0
	}
	return f.Worker.MaxRunners
}
