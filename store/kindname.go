package store

import "sync"

// maxKindNames bounds the kinds KindName keeps: a journal has a few dozen,
// and a store that somehow holds more is answered with fresh strings.
const maxKindNames = 256

var kindNames = struct {
	sync.RWMutex
	m map[string]string
}{m: map[string]string{}}

// KindName returns an entry's kind read from a driver's buffer as a string,
// sharing one string per kind, so reading a journal does not allocate its
// kinds again for every entry.
func KindName(b []byte) string {
	kindNames.RLock()
	s, ok := kindNames.m[string(b)]
	kindNames.RUnlock()
	if ok {
		return s
	}
	s = string(b)
	kindNames.Lock()
	if len(kindNames.m) < maxKindNames {
		kindNames.m[s] = s
	}
	kindNames.Unlock()
	return s
}
