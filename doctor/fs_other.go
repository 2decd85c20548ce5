//go:build !linux

package doctor

import "errors"

func fileSystem(dir string) finding {
	return finding{OK, "file system not checked on this system", ""}
}

func diskSpace(string) (free, total uint64, err error) {
	return 0, 0, errors.New("not read on this system")
}
