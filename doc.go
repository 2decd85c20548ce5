// Package hitch is a durable runtime for LLM agents.
//
// An agent is a validated definition (Build): a model, instructions, tools,
// a policy and limits. A run is one durable execution of an agent on one
// input. Every model reply and every tool effect is written to the run's
// journal before the next step acts on it, so a run survives a crash, a
// restart or a lost node, and a tool body whose effect may have happened is
// never run again on its own: it becomes an uncertain effect that someone
// reconciles.
//
// The journal lives in a store.Store: an embedded SQLite file for one
// machine (store/sqlite), shared by runners that each hold a fenced lease on
// the runs they drive. A Runtime starts, awaits, cancels, reconciles and
// recovers runs on top of it:
//
//	agent, err := hitch.Build(hitch.Spec{Name: "helper", Model: m, Tools: tools, Policy: policy.AllowAll()})
//	rt, err := hitch.Open(hitch.Config{Store: st, Agents: []*hitch.Agent{agent}})
//	res, err := rt.Start(ctx, agent, "What is 2+3?", hitch.WithID("job-42"))
//	run, err := rt.Await(ctx, res.Run.ID)
//
// A program that serves several users or tenants (the HTTP API, the
// console, the MCP tools) reaches the runtime through Runtime.As: a Scope,
// one principal's view, which checks the principal's role and keeps it to
// its tenant's runs and sessions, in its tenant's own ids.
//
// Every limit has a default in one table (see Defaults and docs/defaults.md).
package hitch
