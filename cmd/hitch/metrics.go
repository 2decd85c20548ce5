package main

import (
	"maps"
	"slices"
	"time"

	"github.com/hitch-dev/hitch/config"
	"github.com/hitch-dev/hitch/model/route"
	"github.com/hitch-dev/hitch/telemetry"
)

// nodeMetrics is what a node command (serve, worker) asks of hitch's own
// metrics.
type nodeMetrics struct {
	// gauges reads the store for hitch's gauges when metrics are
	// collected (runs by status, due runs, pending approvals, uncertain
	// calls); without it only the latency of store operations is kept.
	gauges bool
	// prometheus serves them at /metrics (hitch serve).
	prometheus bool
	// cache is --metrics-cache: how long one reading of the store serves
	// collections; 0 reads at every collection.
	cache time.Duration
}

// prometheus adds the /metrics reader to opts when the command serves it.
func (o *observer) prometheus(g *globals, opts *telemetry.Options) error {
	if !g.metrics.prometheus {
		return nil
	}
	r, h, err := telemetry.PrometheusReader()
	if err != nil {
		return err
	}
	opts.MetricReaders = append(opts.MetricReaders, r)
	o.prom = h
	return nil
}

// nodeMetrics builds hitch's own metrics on the telemetry's provider, when
// metrics are exported at all (over OTLP or at /metrics).
func (o *observer) nodeMetrics(g *globals, cfg *config.Config) error {
	if o.tel == nil || o.tel.MeterProvider() == nil {
		return nil
	}
	cache := g.metrics.cache
	if cache == 0 {
		cache = -1 // every collection reads
	}
	var routes []*route.Route
	for _, name := range slices.Sorted(maps.Keys(cfg.Routes)) {
		routes = append(routes, cfg.Routes[name])
	}
	met, err := telemetry.NewMetrics(telemetry.MetricsOptions{Store: o.st, MeterProvider: o.tel.MeterProvider(),
		CacheFor: cache, NoGauges: !g.metrics.gauges, Routes: routes})
	if err != nil {
		return err
	}
	o.met = met
	return nil
}
