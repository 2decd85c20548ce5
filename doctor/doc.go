// Package doctor checks a hitch deployment where it runs: the store (is it
// reachable, at this build's schema, configured to survive a crash, how
// long a commit takes, how far its clock is from this node's, which nodes
// are alive), the sandbox commands run in, the secrets, the MCP servers
// and the models' credentials, and the disk under the store.
//
// Run returns one Check a finding, each with a Verdict and, when it is not
// OK, what to do. The checks read; the only writes are the commits of the
// latency probe, to a scratch table or file that is removed afterwards.
// No check reports a secret's value: every text passes Config.Redactor.
//
// hitch doctor runs it in its own process, and a hitch serve answers it at
// GET /v1/doctor for admins; docs/operations.md says what each check means
// and how to fix what it finds.
package doctor
