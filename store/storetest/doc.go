// Package storetest is the conformance suite for store.Store drivers.
//
// Every driver runs the same suite from its own tests:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store {
//			s, err := mydriver.Open(...)
//			if err != nil {
//				t.Fatal(err)
//			}
//			return s
//		})
//	}
//
// The suite checks the contract written on the store.Store interface: journal
// positions and fencing, lease claims and their disjointness under
// concurrency, cancel requests, listing and reading by offset, writes that
// fail part-way (a create or an append is all or nothing; appends committed
// together fail alone), and a Notifier's wakes where the store has one. It
// assumes nothing about the backend beyond that contract: times are
// compared to the microsecond, entry data byte for byte and other JSON
// (metadata, outcomes) by value, and lease expiry is awaited by polling the
// store's own clock.
package storetest
