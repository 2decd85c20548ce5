// Package builtin holds the coding tools a model gets out of the box: read,
// write, edit, bash, grep and glob. They act through a sandbox.Sandbox, so
// every path they touch is confined to its roots, and each output is bounded
// and says in plain words what was cut and how to see the rest.
//
// Build them with New. Tools from one New call share state: writes and
// edits to the same resolved file are applied one at a time in the order
// their calls began, and grep probes for ripgrep once. Call New once per
// sandbox.
package builtin
