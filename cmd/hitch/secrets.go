package main

import (
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/hitch-dev/hitch/secret"
)

// vault owns the variables hitch reads a credential from, read once: the
// config's (model keys, approver secrets, secrets:, server tokens) and
// the approver credential a command answers with. When the config is
// loaded they are taken out of the process environment (and, on Linux,
// out of the memory /proc/PID/environ shows), so no process hitch starts
// and no tool that reads its parent's environment finds them. Read them
// with getenv.
var vault = &envVault{kept: map[string]string{}}

type envVault struct {
	mu   sync.Mutex
	kept map[string]string
	// also are the command's own credential variables, dropped with the
	// config's.
	also []string
}

// credential names a variable the command reads a credential from, so it
// leaves the environment with the config's, and returns its value.
func (v *envVault) credential(k string) string {
	v.mu.Lock()
	if k != "" && !slices.Contains(v.also, k) {
		v.also = append(v.also, k)
	}
	v.mu.Unlock()
	return v.getenv(k)
}

// getenv reads a variable, from what was dropped if it was.
func (v *envVault) getenv(k string) string {
	v.mu.Lock()
	defer v.mu.Unlock()
	if val, ok := os.LookupEnv(k); ok {
		// A copy: the value's bytes may be scrubbed from the environment.
		return strings.Clone(val)
	}
	return v.kept[k]
}

// drop keeps the values of vars and of the command's credential
// variables, and takes them out of the environment. It returns a note for
// the operator when the start-up copy that /proc/PID/environ shows could
// not be scrubbed.
func (v *envVault) drop(vars []string) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	vars = append(slices.Clone(vars), v.also...)
	var gone []string
	for _, k := range vars {
		if val, ok := os.LookupEnv(k); ok {
			v.kept[k] = strings.Clone(val)
			os.Unsetenv(k)
			gone = append(gone, k)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	slices.Sort(gone)
	return scrubEnviron(slices.Compact(gone))
}

// redaction is the redactor every output of the command passes through;
// it is set once the config is loaded.
type redaction struct {
	mu sync.Mutex
	r  *secret.Redactor
}

func (r *redaction) set(red *secret.Redactor) {
	r.mu.Lock()
	r.r = red
	r.mu.Unlock()
}

func (r *redaction) get() *secret.Redactor {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.r
}

// redactWriter redacts what it writes, holding back a tail that could
// begin a secret until the next write or flush.
type redactWriter struct {
	w      io.Writer
	red    *redaction
	stream *secret.Stream
	owner  *secret.Redactor
}

func (w *redactWriter) Write(p []byte) (int, error) {
	r := w.red.get()
	if r.Empty() {
		return w.w.Write(p)
	}
	if w.stream == nil || w.owner != r {
		w.stream, w.owner = r.NewStream(), r
	}
	if _, err := io.WriteString(w.w, w.stream.Write(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (w *redactWriter) flush() {
	if w.stream != nil {
		_, _ = io.WriteString(w.w, w.stream.Flush())
	}
}
