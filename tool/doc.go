// Package tool is hitch's port to the things a model can call.
//
// A Tool declares itself (name, description, JSON Schema, replay and timeout
// settings) and runs a body on raw JSON arguments. New binds a typed Go
// function, infers its schema and checks arguments before the body runs.
//
// What a body's error means matters for durability: a plain error is a
// definite failure (nothing happened that matters; the model sees the
// message), while an error wrapped by Uncertain says the effect may have
// happened. The engine never runs a non-replayable body twice, so an
// uncertain call waits to be reconciled instead.
package tool
