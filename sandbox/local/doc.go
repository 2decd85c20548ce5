// Package local is the sandbox backend for directories on this machine.
//
// Every file operation goes through an os.Root opened on the root that holds
// the path, so "..", absolute names and symbolic links (in any component,
// dangling or chained) cannot reach outside the roots, even if the tree
// changes under a running operation. Writes replace files atomically, which
// also means a hard link to an outside file is detached rather than written
// through. A hard link that already sits inside a root is, as far as any path
// check can tell, a file inside the root: reading it reads the shared
// content. Creating hard links is not something the file operations do; a
// command can, unless bwrap is in effect, where the host is read-only.
//
// Commands run in a session of their own; when one ends, times out or is
// cancelled, every process it started is killed, and so are they when this
// process dies. Where bubblewrap (bwrap) is installed, commands run inside
// it, in a pid namespace that dies with bwrap: they see the system
// directories read-only (with what other users could not read under /etc
// hidden), the roots writable, a private /tmp and /proc, and nothing else of
// the host. Without it they run as plain processes, and Capabilities says so;
// on Linux they are started through a reaper (this program re-executed as a
// child subreaper, see reaper_linux.go) that keeps track of every process
// they start.
package local
