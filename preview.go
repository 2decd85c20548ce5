package hitch

import (
	"context"

	"github.com/hitch-dev/hitch/hitchtype"
)

// PreviewOptions configure Preview: the input, the caller's layer of
// instructions, and the session whose next submission to preview (see
// hitchtype.PreviewOptions).
type PreviewOptions = hitchtype.PreviewOptions

// RequestPreview is the first model request a run would send, in parts
// labelled with their layers, and its token estimate against the window.
type RequestPreview = hitchtype.RequestPreview

// Preview returns the first model request a run of agent would send — its
// instructions, messages, tools and answer schema, each part labelled with
// the layer it comes from and its estimated tokens against the model's
// window — built by the code a run builds it with. Nothing is written, no
// model is called and no hook runs: the pre-generate hooks that may add
// instructions are named in parts of their own.
func (rt *Runtime) Preview(ctx context.Context, agent *Agent, o PreviewOptions) (RequestPreview, error) {
	return rt.n.Preview(ctx, agent.engine(), o, o.Session)
}
