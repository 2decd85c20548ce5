package doctor_test

import (
	"strconv"

	"github.com/hitch-dev/hitch/sandbox/local"
)

func itoa(n int) string { return strconv.Itoa(n) }

func lookBwrap() error { _, err := local.CheckBwrapIn(""); return err }
