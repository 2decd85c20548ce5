// Package e2e drives whole runs through the engine against local servers
// that speak each provider's streaming wire format: OpenAI Chat
// Completions, the OpenAI Responses API and Anthropic Messages. Its tests
// check what only the full path shows — that a tool result reaches the
// provider under the call id the provider chose, that usage is summed from
// what the provider reported and stays null where it reported nothing, and
// that a process killed in the middle of a model call is recovered from its
// SQLite journal without running a settled tool body twice. The package
// holds tests only.
package e2e
