package telemetry

import (
	"context"
	"crypto/rand"

	"go.opentelemetry.io/otel/trace"
)

type idKey struct{}
type traceKey struct{}

// idGenerator gives each span the id its context carries, derived from
// run ids, so every process draws a family's spans with the same ids. A
// context without one gets random ids.
type idGenerator struct{}

func (idGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	tid, ok := ctx.Value(traceKey{}).(trace.TraceID)
	if !ok {
		_, _ = rand.Read(tid[:])
	}
	return tid, idGenerator{}.NewSpanID(ctx, tid)
}

func (idGenerator) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if sid, ok := ctx.Value(idKey{}).(trace.SpanID); ok {
		return sid
	}
	var sid trace.SpanID
	_, _ = rand.Read(sid[:])
	return sid
}
