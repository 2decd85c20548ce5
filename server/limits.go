package server

import (
	"cmp"
	"fmt"
	"time"
)

// Defaults of hitch serve and of Limits; each is a row of defaults.Table.
const (
	DefaultAddr               = "127.0.0.1:7077"
	DefaultMaxBody            = 1 << 20
	DefaultMaxHeader          = 64 << 10
	DefaultReadHeaderTimeout  = 10 * time.Second
	DefaultRequestTimeout     = 90 * time.Second
	DefaultMaxWait            = 60 * time.Second
	DefaultStreamsPerToken    = 32
	DefaultHeartbeat          = 15 * time.Second
	DefaultStreamPoll         = time.Second
	DefaultStreamWriteTimeout = 30 * time.Second
	DefaultFamilyStreamRuns   = 64
	DefaultRunsPage           = 50
	DefaultJournalPage        = 100
)

// Limits bound what one request or stream may take. Each field's default
// is one of the Default constants.
type Limits struct {
	// MaxBodyBytes bounds a request body. Default 1 MiB.
	MaxBodyBytes int64
	// MaxHeaderBytes bounds a request's headers. Default 64 KiB.
	MaxHeaderBytes int
	// ReadHeaderTimeout bounds reading a request's headers. Default 10s.
	ReadHeaderTimeout time.Duration
	// RequestTimeout bounds a request that is not an event stream, from
	// its first byte to its answer. Default 90s.
	RequestTimeout time.Duration
	// MaxWait bounds one long-poll (runs/{id}/wait). Default 60s.
	MaxWait time.Duration
	// StreamsPerToken bounds the event streams one token holds open at
	// once. Default 32.
	StreamsPerToken int
	// Heartbeat is how often an idle event stream sends a comment.
	// Default 15s.
	Heartbeat time.Duration
	// StreamPoll is how often an event stream reads the store without a
	// wake from this node (for runs driven by other nodes). Default 1s.
	StreamPoll time.Duration
	// StreamWriteTimeout cuts a stream whose client does not take one
	// page of events within it. Default 30s.
	StreamWriteTimeout time.Duration
	// FamilyStreamRuns bounds the runs one family stream follows. Default
	// 64.
	FamilyStreamRuns int
}

// WithDefaults fills every unset limit with its default.
func (l Limits) WithDefaults() Limits {
	l.MaxBodyBytes = cmp.Or(l.MaxBodyBytes, DefaultMaxBody)
	l.MaxHeaderBytes = cmp.Or(l.MaxHeaderBytes, DefaultMaxHeader)
	l.ReadHeaderTimeout = cmp.Or(l.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	l.RequestTimeout = cmp.Or(l.RequestTimeout, DefaultRequestTimeout)
	l.MaxWait = cmp.Or(l.MaxWait, DefaultMaxWait)
	l.StreamsPerToken = cmp.Or(l.StreamsPerToken, DefaultStreamsPerToken)
	l.Heartbeat = cmp.Or(l.Heartbeat, DefaultHeartbeat)
	l.StreamPoll = cmp.Or(l.StreamPoll, DefaultStreamPoll)
	l.StreamWriteTimeout = cmp.Or(l.StreamWriteTimeout, DefaultStreamWriteTimeout)
	l.FamilyStreamRuns = cmp.Or(l.FamilyStreamRuns, DefaultFamilyStreamRuns)
	return l
}

func (l Limits) validate() error {
	switch {
	case l.MaxBodyBytes < 1:
		return fmt.Errorf("Limits.MaxBodyBytes %d: want 1 or more", l.MaxBodyBytes)
	case l.MaxHeaderBytes < 1024:
		return fmt.Errorf("Limits.MaxHeaderBytes %d: want 1024 or more", l.MaxHeaderBytes)
	case l.RequestTimeout <= l.MaxWait:
		return fmt.Errorf("Limits.RequestTimeout %s: want more than Limits.MaxWait %s", l.RequestTimeout, l.MaxWait)
	case l.StreamsPerToken < 1:
		return fmt.Errorf("Limits.StreamsPerToken %d: want 1 or more", l.StreamsPerToken)
	case l.Heartbeat <= 0, l.StreamPoll <= 0, l.StreamWriteTimeout <= 0, l.ReadHeaderTimeout <= 0, l.MaxWait <= 0:
		return fmt.Errorf("Limits: durations must be more than 0")
	case l.FamilyStreamRuns < 1:
		return fmt.Errorf("Limits.FamilyStreamRuns %d: want 1 or more", l.FamilyStreamRuns)
	}
	return nil
}
