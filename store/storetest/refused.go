package storetest

import (
	"io"
	"strings"
	"testing"
)

// OpenRefused checks a driver's open that must fail: s and err are what
// it returned. The error must say every one of want; a store that opened
// anyway is closed.
func OpenRefused(t testing.TB, s io.Closer, err error, want ...string) {
	t.Helper()
	if err == nil {
		s.Close()
		t.Fatalf("the store opened; want an error saying %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Fatalf("error %q does not say %q", err, w)
		}
	}
}
