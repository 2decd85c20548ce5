// Package server serves a hitch runtime over HTTP: the /v1 API of package
// api, with bearer-token auth and tenants, server-sent event streams of
// journals, health checks and the OpenAPI document.
//
// New returns the handler; Serve runs it on a listener until its context
// ends and then stops gracefully: it stops accepting, ends the event
// streams cleanly, and lets the caller drain the runtime. The process that
// serves is also a node: `hitch serve` runs the runtime's sweeper beside
// it. docs/api.md describes the routes, the problem types and the limits.
package server
