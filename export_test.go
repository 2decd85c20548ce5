package hitch

import (
	"maps"

	"github.com/hitch-dev/hitch/internal/scope"
	"github.com/hitch-dev/hitch/internal/trigger"
)

// Closing is closed once rt.Close has begun and its runners are draining.
func Closing(rt *Runtime) <-chan struct{} { return rt.n.Eng.Closing() }

// WatchPrunes returns a channel that gets each retention pass's error; call
// it before Lead.
func WatchPrunes(rt *Runtime) <-chan error { return rt.n.Pruner.TestSignals.Pruned.Init() }

// TriggerPasses returns a channel that gets every pass of rt's trigger
// dispatcher; call it before RunTriggers.
func TriggerPasses(rt *Runtime) <-chan trigger.Pass { return rt.n.Trig.TestSignals.Passed.Init() }

// PokeTriggers wakes rt's trigger dispatcher.
func PokeTriggers(rt *Runtime) { rt.n.Trig.Poke() }

// ScopeRoles is the role table of Scope's methods.
func ScopeRoles() map[string]Role { return maps.Clone(scope.Roles) }
