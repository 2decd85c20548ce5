// Package api holds the wire types of hitch's HTTP API, version 1: the
// request and response bodies of every /v1 route, the server-sent event
// of the journal streams, and the problem types of its errors.
//
// It is a leaf package: it imports only the standard library, so a client (package client, a test, another program) speaks the API
// without the runtime. The server (package server) registers its routes
// with these types, and the OpenAPI document served at /v1/openapi.json is
// generated from them, so the document and the handlers cannot drift.
//
// Errors are RFC 9457 problem details (application/problem+json) whose
// type is one of the URIs in Problems; each class also names the exit code
// the hitch command gives for the same refusal. docs/api.md describes the
// routes.
package api
