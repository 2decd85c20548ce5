// Package sandbox is hitch's port to the place where coding tools act: a set
// of workspace roots that files may be read and written under, and, where the
// backend allows it, a way to run commands.
//
// Backends differ (a local directory, a container, a remote machine), so a
// Sandbox reports what it can do through Capabilities instead of letting
// callers assume; an operation a backend lacks fails with ErrUnsupported.
// Every path is confined to the roots: a path that would leave them, by "..",
// by an absolute name or through a symbolic link, fails with ErrOutsideRoots.
// Roots can be granted and revoked while a run is live, so the engine can
// journal each change as a plain method call.
package sandbox
