// Package model is hitch's port to language models.
//
// A Model turns a Request (instructions, messages, tool specs and an optional
// answer schema) into a stream of Chunks whose last one carries the whole
// Reply. Providers live in sub-packages (scripted, openai, anthropic); the
// engine only sees this package. Provider failures are reported as *Error
// with a Kind, so the engine can decide what to retry without knowing any
// provider's wire format.
package model
