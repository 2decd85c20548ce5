// Package modeltest holds helpers for testing provider adapters offline: a
// loopback HTTP server that plays scripted exchanges written in the
// providers' real wire formats, records every request it receives, and can
// cut a stream in the middle or hold it open until the client leaves.
package modeltest
