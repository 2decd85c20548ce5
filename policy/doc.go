// Package policy decides what each tool call may do.
//
// Every call a model asks for is put to the agent's Policy before anything
// runs. The engine fails closed: an error, a timeout or a missing decision
// means the call does not run and the run stops. There is no implicit
// allow; AllowAll is the explicit one.
package policy
