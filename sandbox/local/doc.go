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
// Commands run in their own process group, which is killed when the command
// ends, times out or is cancelled, so no process outlives its call. Where
// bubblewrap (bwrap) is installed, commands run inside it: the host file
// system is mounted read-only, the roots are the only writable paths, /tmp
// is private, and the process tree dies with the command. Without it they run
// as plain processes and Capabilities says so.
package local
