package config

import (
	"fmt"
	"strings"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/triggers"
)

// Trigger declares a trigger binding (see docs/triggers.md): a schedule,
// a target and a lifecycle. The CLI's dispatchers (hitch worker, hitch
// serve) store every declared binding when they start, replacing one of
// the same name whose definition changed.
type Trigger struct {
	// Name is the binding's id: letters, digits and . _ : -, at most 64.
	Name string `yaml:"name"`
	// Cron is a five-field schedule or a macro such as @daily, in Zone
	// (an IANA time zone; default UTC). At is a one-shot time instead
	// (RFC 3339, such as 2027-05-01T09:00:00Z).
	Cron string `yaml:"cron,omitempty"`
	Zone string `yaml:"zone,omitempty"`
	At   string `yaml:"at,omitempty"`
	// Agent (of this file) and Input: each occurrence starts a run.
	Agent   string `yaml:"agent,omitempty"`
	Version int    `yaml:"version,omitempty"`
	Input   string `yaml:"input,omitempty"`
	// Session and Text: each occurrence sends the session a message.
	Session string `yaml:"session,omitempty"`
	Text    string `yaml:"text,omitempty"`
	// Once ends a cron binding after its first fire (max_fires: 1).
	Once bool `yaml:"once,omitempty"`
	// MaxFires ends the binding after this many fires.
	MaxFires int64 `yaml:"max_fires,omitempty"`
	// ExpiresAt ends the binding (RFC 3339): no occurrence after it fires.
	ExpiresAt string `yaml:"expires_at,omitempty"`
	// Missed is what occurrences missed while nothing ran do: once
	// (default: fire once for them all) or skip.
	Missed string `yaml:"missed,omitempty"`
	// Grace is how late an occurrence may be and still be on time
	// (default 1m).
	Grace string `yaml:"grace,omitempty"`
	// Paused creates the binding paused.
	Paused bool `yaml:"paused,omitempty"`
}

// ConfiguredTrigger is a checked binding of the file.
type ConfiguredTrigger struct {
	Spec   triggers.Spec
	Paused bool
}

// checkTriggers checks the file's bindings; agents are the file's agent names.
func checkTriggers(l locator, list []Trigger, agents map[string]int) ([]ConfiguredTrigger, []Problem) {
	var (
		probs []Problem
		out   []ConfiguredTrigger
		seen  = map[string]int{}
	)
	for i, y := range list {
		field := fmt.Sprintf("triggers[%d]", i)
		n := len(probs)
		if j, dup := seen[y.Name]; dup && y.Name != "" {
			probs = append(probs, l.problem(field+".name", "%q is already the name of triggers[%d]", y.Name, j))
		}
		seen[y.Name] = i
		spec := triggers.Spec{ID: y.Name, Cron: y.Cron, Zone: y.Zone, Agent: y.Agent, Version: y.Version, Input: y.Input,
			Session: y.Session, Text: y.Text, MaxFires: y.MaxFires, Missed: y.Missed}
		at := func(key, v string) time.Time {
			if v == "" {
				return time.Time{}
			}
			t, err := time.Parse(time.RFC3339, v)
			if err != nil {
				probs = append(probs, l.problem(field+"."+key, "%q: want an RFC 3339 time such as 2027-05-01T09:00:00Z", v))
			}
			return t
		}
		spec.At, spec.ExpiresAt = at("at", y.At), at("expires_at", y.ExpiresAt)
		if y.Grace != "" {
			d, err := time.ParseDuration(y.Grace)
			if err != nil {
				probs = append(probs, l.problem(field+".grace", "%q: want a duration such as 1m", y.Grace))
			}
			spec.Grace = d
		}
		if y.Once {
			if y.MaxFires > 1 {
				probs = append(probs, l.problem(field+".once", "contradicts max_fires: %d", y.MaxFires))
			}
			spec.MaxFires = 1
		}
		if y.Agent != "" {
			if _, ok := agents[y.Agent]; !ok {
				probs = append(probs, l.problem(field+".agent", "%q is not an agent in this file", y.Agent))
			}
			if strings.TrimSpace(y.Input) == "" && y.Text == "" {
				probs = append(probs, l.problem(field+".input", "missing: a binding that starts runs of %q needs their input", y.Agent))
			}
		}
		if err := spec.Validate(); err != nil {
			if ces, ok := err.(hitch.ConfigErrors); ok {
				for _, ce := range ces {
					key := ce.Field
					if key == "id" {
						key = "name"
					}
					probs = append(probs, l.problem(field+"."+key, "%s", ce.Problem))
				}
			} else {
				probs = append(probs, l.problem(field, "%v", err))
			}
		}
		if len(probs) == n {
			out = append(out, ConfiguredTrigger{Spec: spec, Paused: y.Paused})
		}
	}
	return out, probs
}
