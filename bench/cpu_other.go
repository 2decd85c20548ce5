//go:build !unix

package bench

import "time"

// processCPU is not measured here: CPU a step then reads zero.
func processCPU() time.Duration { return 0 }
