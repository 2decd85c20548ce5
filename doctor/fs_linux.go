package doctor

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// fileSystems names the file systems by their statfs magic, with what
// they mean for a SQLite store: a verdict and a fix when not OK.
var fileSystems = map[int64]finding{
	unix.EXT4_SUPER_MAGIC:  {OK, "ext4", ""},
	unix.XFS_SUPER_MAGIC:   {OK, "xfs", ""},
	unix.BTRFS_SUPER_MAGIC: {OK, "btrfs", ""},
	0x2fc12fc1:             {OK, "zfs", ""},
	unix.F2FS_SUPER_MAGIC:  {OK, "f2fs", ""},
	unix.TMPFS_MAGIC:       inMemory("tmpfs"),
	unix.RAMFS_MAGIC:       inMemory("ramfs"),
	unix.NFS_SUPER_MAGIC:   onNetwork("nfs"),
	unix.SMB_SUPER_MAGIC:   onNetwork("smb"),
	0xff534d42:             onNetwork("cifs"),
	unix.FUSE_SUPER_MAGIC: {Warning, "fuse: a user-space file system may not honour syncs",
		"put the store on a local disk"},
	unix.V9FS_MAGIC: {Warning, "9p: a shared folder of a virtual machine may not honour syncs or locks",
		"put the store on the machine's own disk"},
	unix.OVERLAYFS_SUPER_MAGIC: {Warning, "overlay: the store is in a container's writable layer, lost with the container",
		"mount a volume for the store's directory"},
}

// inMemory is the finding of a file system that keeps its files in memory.
func inMemory(name string) finding {
	return finding{Warning, name + ": the store lives in memory and is gone at the next reboot", "put the store on a disk"}
}

// onNetwork is the finding of a network file system.
func onNetwork(name string) finding {
	return finding{Warning, name + ": SQLite's locks and syncs are not reliable over a network file system",
		"put the store on a local disk, or use PostgreSQL for several machines"}
}

// fileSystem says what the file system under dir is, and what it means
// for a store.
func fileSystem(dir string) finding {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return finding{Warning, "cannot read the file system of " + dir + ": " + err.Error(), "check the store's file system by hand"}
	}
	f, ok := fileSystems[int64(st.Type)]
	if !ok {
		return finding{OK, fmt.Sprintf("file system %#x", st.Type), ""}
	}
	f.detail = "file system " + f.detail
	return f
}

func diskSpace(dir string) (free, total uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return st.Bavail * uint64(st.Bsize), st.Blocks * uint64(st.Bsize), nil
}
