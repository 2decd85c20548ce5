// Package approval decides who may answer an approval request.
//
// A policy may require approval for a call, naming a requirement ("payments",
// "prod-deploy"). The run then waits. To answer, a person presents a
// Credential to the agent's Approvers, which check it for that requirement
// and return a short-lived Proof; approve and reject take the proof, and the
// runtime verifies it against the same Approvers before it records anything.
// Approvers are never stored: a recovered run is answered with the approvers
// of the agent value it was recovered with.
package approval
