//go:build !unix

package bench

import (
	"errors"
	"time"
)

func cpuTime() (time.Duration, error) {
	return 0, errors.New("the CPU a process used is read on unix systems only")
}
