// Package policy decides what each tool call may do.
//
// Every call a model asks for is put to the agent's Policy before anything
// runs. The engine fails closed: an error, a timeout or a missing decision
// means the call does not run and the run stops. There is no implicit
// allow; AllowAll is the explicit one.
//
// Rules is the policy the config file declares: ordered rules, each with
// tool-name globs and an optional condition, When, written in CEL
// (https://cel.dev). The first rule whose glob matches and whose condition
// holds decides; no match is a denial. A condition sees:
//
//	tool         string               the tool (or sub-agent) name
//	args         map(string, dyn)     the call's arguments, parsed from JSON
//	                                  (numbers are doubles, as in JSON)
//	agent        name, version
//	run          id, root_id, depth, metadata (map(string, string))
//	session      id, metadata; empty outside a session
//	requirement  the requirement an approval answered, when the policy is
//	             asked again at approval time; "" otherwise
//	hints        what the tool says of its effects (Action.Hints; an MCP
//	             server's annotations): stated, read_only, destructive,
//	             idempotent, open_world — all false when it says nothing
//
// It must give a bool. Conditions are type-checked when the rules are
// compiled, and evaluated within DefaultCostLimit and the decision's
// context. A condition that fails to evaluate (a missing argument, a wrong
// type, over its cost) denies the call with a reason naming the rule.
package policy
