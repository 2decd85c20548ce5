// Package mcp serves the tools of Model Context Protocol servers as hitch
// tools.
//
// Connect reaches one Server — a program started and spoken to over stdio,
// or a streamable-HTTP endpoint — and lists its tools. Each becomes a
// tool.Tool named ToolName(server, tool), "server__tool", which every model
// provider accepts; two tools whose names collide once mapped are refused.
// Descriptions and input schemas pass through, the schema's root made an
// object.
//
// Replay follows the server's annotations: a tool that says it is read-only
// or idempotent may run again (DefaultReplay attempts); any other runs at
// most once. A Server's Tools overrides win. HintsOf exposes the annotations
// (destructive, open world …) for a policy to weigh.
//
// What a call's failure means:
//
//   - the tool answered with isError, or the server refused the request
//     (a protocol error, an HTTP 4xx): a definite failure; the text goes to
//     the model;
//   - the connection failed before the request left: a definite failure,
//     after one more try on a new session;
//   - the connection failed, or the call timed out, after the request left:
//     tool.Uncertain — the server may have acted. A replayable tool run by
//     the runtime is run again by it, up to its attempts, each lost attempt
//     journaled (call.lost), and its last attempt fails definitely; called
//     directly, it is tried once more on a new session, then fails
//     definitely.
//
// A session that ends (a stdio program exits, an HTTP server forgets the
// session and answers 404) is replaced on the next call, a stdio program
// started again; failed reconnects back off from ReconnectMinDelay to
// ReconnectMaxDelay. When a server says its tool list changed, the client
// fetches it again and publishes a new Snapshot; Changed tells a waiter.
package mcp
