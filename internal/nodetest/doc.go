// Package nodetest holds the tests of several hitch nodes sharing one
// PostgreSQL database: wakeups from one node to another, worker processes
// killed, stopped and paused at random, and connections cut under load. It
// has no code of its own; its tests skip unless HITCH_TEST_POSTGRES names a
// database they may create schemas in.
package nodetest
