//go:build !chaosfault

package chaos

import "github.com/hitch-dev/hitch/store"

// faulty is the store a node writes through: the store itself. A build
// with the chaosfault tag puts a fault in between (fault.go).
func faulty(st store.Store) store.Store { return st }
