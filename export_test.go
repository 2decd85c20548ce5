package hitch

import "maps"

// Closing is closed once rt.Close has begun and its runners are draining.
func Closing(rt *Runtime) <-chan struct{} { return rt.eng.Closing() }

// WatchPrunes returns a channel that gets each retention pass's error; call
// it before Lead.
func WatchPrunes(rt *Runtime) <-chan error { return rt.pruner.TestSignals.Pruned.Init() }

// OnTriggerPass lets a test see every pass of rt's trigger dispatcher.
func OnTriggerPass(rt *Runtime, f func(n int, err error)) { rt.trig.onPass = f }

// PokeTriggers wakes rt's trigger dispatcher.
func PokeTriggers(rt *Runtime) { rt.trig.poke() }

// ScopeRoles is the role table of Scope's methods.
func ScopeRoles() map[string]Role { return maps.Clone(scopeRoles) }
