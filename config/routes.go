package config

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/hitch-dev/hitch/internal/ident"
	"github.com/hitch-dev/hitch/model"
	"github.com/hitch-dev/hitch/model/route"
)

// Route is a route's settings: models asked in order, each moving on to
// the next after a failure of a moving class.
type Route struct {
	// Models name models of the file's models section, in the order they
	// are asked. At least one.
	Models []string `yaml:"models"`
	// CoolDown is how long a model that failed with a moving class is
	// skipped by every run of the node: a duration, or "off". Default 1m.
	CoolDown string `yaml:"cool_down,omitempty"`
	// PerModel adjusts how the route treats one of its models, by name.
	PerModel map[string]RouteModel `yaml:"per_model,omitempty"`
}

// RouteModel is how a route treats one of its models.
type RouteModel struct {
	// MoveOn are the failure classes that move a request on: unreachable
	// (also spelled unavailable), overloaded, rate_limited, timed_out.
	// Default all four.
	MoveOn []string `yaml:"move_on,omitempty"`
	// Attempts is how many attempts in a row a request makes at this
	// model before a moving failure sends it on. Default 1.
	Attempts *int `yaml:"attempts,omitempty"`
	// Timeout bounds one attempt at this model. Default: the agent's
	// limits.model_timeout only.
	Timeout string `yaml:"timeout,omitempty"`
	// Tools: false says the model cannot call tools; requests that offer
	// tools pass it over. Default true.
	Tools *bool `yaml:"tools,omitempty"`
	// StructuredOutput: false says the model cannot give structured
	// output; requests for an answer schema pass it over. Default true.
	StructuredOutput *bool `yaml:"structured_output,omitempty"`
	// ContextWindow is the model's window in tokens when it is smaller
	// than the agent's limits.context_window: a request for it is
	// compacted to fit first. Default: the agent's.
	ContextWindow *int64 `yaml:"context_window,omitempty"`
}

// maxRouteAttempts bounds a route model's attempt budget; the agent's
// model_attempts bounds the run's in any case.
const maxRouteAttempts = 100

// classes are the failure classes a route may move on from, by the names
// the file may use.
var classes = map[string]model.Kind{
	"unreachable":  model.KindUnreachable,
	"unavailable":  model.KindUnreachable,
	"overloaded":   model.KindOverloaded,
	"rate_limited": model.KindRateLimited,
	"timed_out":    model.KindTimedOut,
}

// routes builds the file's routes over its built models. A route whose
// settings have problems is left out, and each problem is reported.
func (c *Config) routes(l locator, f *File) []Problem {
	var probs []Problem
	for _, name := range slices.Sorted(maps.Keys(f.Routes)) {
		y, field := f.Routes[name], "routes."+name
		n := len(probs)
		if !ident.Name(name) {
			probs = append(probs, l.problem(field, "%q: want 1–64 letters, digits, '.', '_' or '-', starting with a letter or digit", name))
		}
		if _, clash := f.Models[name]; clash {
			probs = append(probs, l.problem(field, "%q is also the name of a model; an agent's model: names one or the other", name))
		}
		if len(y.Models) == 0 {
			probs = append(probs, l.problem(field+".models", "is empty: list the models to ask, in order"))
		}
		var members []route.Member
		seen := map[string]int{}
		for i, m := range y.Models {
			mf := fmt.Sprintf("%s.models[%d]", field, i)
			if j, dup := seen[m]; dup {
				probs = append(probs, l.problem(mf, "%q is already models[%d]", m, j))
				continue
			}
			seen[m] = i
			built, ok := c.Models[m]
			_, declared := f.Models[m]
			_, isRoute := f.Routes[m]
			switch {
			case ok:
				members = append(members, route.Member{Model: built})
			case isRoute:
				probs = append(probs, l.problem(mf, "%q is a route: a route lists models, not routes", m))
			case !declared:
				probs = append(probs, l.problem(mf, "%q is not declared under models (have %v)", m, slices.Sorted(maps.Keys(f.Models))))
			}
		}
		for _, m := range slices.Sorted(maps.Keys(y.PerModel)) {
			pf := field + ".per_model." + m
			i, in := seen[m]
			if !in {
				probs = append(probs, l.problem(pf, "%q is not one of this route's models %v", m, y.Models))
				continue
			}
			member, mp := routeModel(l, pf, y.PerModel[m])
			probs = append(probs, mp...)
			if i < len(members) && members[i].Model == c.Models[m] {
				member.Model = members[i].Model
				members[i] = member
			}
		}
		coolDown := time.Duration(0)
		switch d, err := duration(y.CoolDown, false); {
		case y.CoolDown == "off":
			coolDown = -1
		case err != nil:
			probs = append(probs, l.problem(field+".cool_down", "%v, nor off", err))
		case y.CoolDown != "" && (d < time.Second || d > 24*time.Hour):
			probs = append(probs, l.problem(field+".cool_down", "%q: want 1s to 24h, or off", y.CoolDown))
		default:
			coolDown = d
		}
		if len(probs) > n || len(members) != len(y.Models) {
			continue
		}
		r, err := route.New(route.Config{Name: name, Members: members, CoolDown: coolDown})
		if err != nil {
			probs = append(probs, l.problem(field, "%v", err))
			continue
		}
		c.Routes[name] = r
	}
	return probs
}

// routeModel reads one model's settings within a route; the Model is the
// caller's to set.
func routeModel(l locator, field string, y RouteModel) (route.Member, []Problem) {
	var probs []Problem
	var m route.Member
	if y.MoveOn != nil {
		m.MoveOn = []model.Kind{}
	}
	for i, c := range y.MoveOn {
		k, ok := classes[c]
		if !ok {
			why := "is not a failure class"
			if slices.Contains([]model.Kind{model.KindUnauthorized, model.KindInvalidRequest, model.KindMalformed, model.KindCancelled}, model.Kind(c)) {
				why = "never moves on: trying another model does not mend it"
			}
			probs = append(probs, l.problem(fmt.Sprintf("%s.move_on[%d]", field, i), "%q %s; want any of unreachable (or unavailable), overloaded, rate_limited, timed_out", c, why))
			continue
		}
		m.MoveOn = append(m.MoveOn, k)
	}
	if y.Attempts != nil {
		if *y.Attempts < 1 || *y.Attempts > maxRouteAttempts {
			probs = append(probs, l.problem(field+".attempts", "%d: want 1–%d", *y.Attempts, maxRouteAttempts))
		}
		m.Attempts = *y.Attempts
	}
	if y.Timeout != "" {
		d, err := duration(y.Timeout, false)
		switch {
		case err != nil:
			probs = append(probs, l.problem(field+".timeout", "%v", err))
		case d < time.Millisecond || d > 24*time.Hour:
			probs = append(probs, l.problem(field+".timeout", "%q: want 1ms to 24h", y.Timeout))
		}
		m.Timeout = d
	}
	if y.ContextWindow != nil {
		if *y.ContextWindow < 1 {
			probs = append(probs, l.problem(field+".context_window", "%d: want a window in tokens, 1 or more", *y.ContextWindow))
		}
		m.Window = *y.ContextWindow
	}
	m.NoTools = y.Tools != nil && !*y.Tools
	m.NoAnswer = y.StructuredOutput != nil && !*y.StructuredOutput
	return m, probs
}
