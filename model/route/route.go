package route

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/hitch-dev/hitch/model"
)

// DefaultCoolDown is how long a model that failed with a moving class is
// skipped by every request of the route.
const DefaultCoolDown = time.Minute

// DefaultMoveOn are the failure classes that move a request on to the next
// model when a member names none: the failures a different provider is
// likely not to share.
var DefaultMoveOn = []model.Kind{model.KindUnreachable, model.KindOverloaded, model.KindRateLimited, model.KindTimedOut}

// Member is one model of a route.
type Member struct {
	// Model answers the requests the route sends it. Required; its Name
	// must be unique within the route.
	Model model.Model
	// MoveOn are the failure classes that send a request on to the next
	// model. Only classes worth trying again are allowed (unreachable,
	// overloaded, rate_limited, timed_out): a rejected key, a bad request
	// or a malformed answer end the request wherever it is. Default
	// DefaultMoveOn.
	MoveOn []model.Kind
	// Attempts is how many attempts in a row a request makes at this model
	// before a moving failure sends it on. Default 1.
	Attempts int
	// Timeout bounds one attempt at this model, so a provider that hangs
	// fails as timed_out and the next model is asked. Default 0: only the
	// caller's context bounds it.
	Timeout time.Duration
	// NoTools marks a model that cannot call tools: requests that offer
	// tools skip it. Default false.
	NoTools bool
	// NoAnswer marks a model without structured output: requests that ask
	// for an answer schema skip it. Default false.
	NoAnswer bool
	// Window is the model's context window, in tokens, when it is smaller
	// than the agent's: hitch compacts a request's transcript to fit it
	// before sending it here, by the agent's compaction rules; Generate
	// sends requests as they are. Default 0: the agent's window.
	Window int64
}

// Config describes a route.
type Config struct {
	// Name labels the route; its Name is "route/" + Name. Required.
	Name string
	// Members are the models in the order they are asked. At least one.
	Members []Member
	// CoolDown is how long a model that failed with a moving class is
	// skipped; a negative value turns the breaker off. Default
	// DefaultCoolDown.
	CoolDown time.Duration
	// Now reads the breaker's clock. Default time.Now.
	Now func() time.Time
}

// Route is a model.Model that asks its members in order. It is safe for
// concurrent use; its breakers are shared by every request.
type Route struct {
	name     string
	members  []Member
	coolDown time.Duration
	now      func() time.Time

	mu      sync.Mutex
	breaker map[string]*breaker
}

var _ model.Model = (*Route)(nil)

// breaker is a member's record of moving failures.
type breaker struct {
	until    time.Time
	kind     model.Kind
	failures int
}

// New checks cfg and builds the route. Problems come back together, each
// naming its field.
func New(cfg Config) (*Route, error) {
	var errs []error
	if cfg.Name == "" {
		errs = append(errs, errors.New("route config: Name is required"))
	}
	if len(cfg.Members) == 0 {
		errs = append(errs, errors.New("route config: Members is empty; want at least one model"))
	}
	seen := map[string]int{}
	members := make([]Member, len(cfg.Members))
	for i, m := range cfg.Members {
		field := fmt.Sprintf("route config: Members[%d]", i)
		if m.Model == nil {
			errs = append(errs, fmt.Errorf("%s.Model is nil", field))
			continue
		}
		if j, dup := seen[m.Model.Name()]; dup {
			errs = append(errs, fmt.Errorf("%s.Model: %s is already Members[%d]", field, m.Model.Name(), j))
		}
		seen[m.Model.Name()] = i
		if m.MoveOn == nil {
			m.MoveOn = DefaultMoveOn
		}
		for _, k := range m.MoveOn {
			if !k.Retryable() {
				errs = append(errs, fmt.Errorf("%s.MoveOn: %q never moves on; want one of %v", field, k, DefaultMoveOn))
			}
		}
		m.MoveOn = slices.Clone(m.MoveOn)
		switch {
		case m.Attempts == 0:
			m.Attempts = 1
		case m.Attempts < 0:
			errs = append(errs, fmt.Errorf("%s.Attempts: %d; want 1 or more", field, m.Attempts))
		}
		if m.Timeout < 0 {
			errs = append(errs, fmt.Errorf("%s.Timeout: %s is negative", field, m.Timeout))
		}
		if m.Window < 0 {
			errs = append(errs, fmt.Errorf("%s.Window: %d is negative", field, m.Window))
		}
		members[i] = m
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	r := &Route{name: "route/" + cfg.Name, members: members, coolDown: cfg.CoolDown, now: cfg.Now, breaker: map[string]*breaker{}}
	if r.coolDown == 0 {
		r.coolDown = DefaultCoolDown
	}
	if r.now == nil {
		r.now = time.Now
	}
	return r, nil
}

// Name returns "route/" and the route's name.
func (r *Route) Name() string { return r.name }

// Members returns the route's members in order, defaults filled in.
func (r *Route) Members() []Member { return slices.Clone(r.members) }

// Member returns the member whose model is named name.
func (r *Route) Member(name string) (Member, bool) {
	i := r.index(name)
	if i < 0 {
		return Member{}, false
	}
	return r.members[i], true
}

func (r *Route) index(name string) int {
	return slices.IndexFunc(r.members, func(m Member) bool { return m.Model.Name() == name })
}

// Try is one attempt a request has made: the model asked, and the class of
// its failure ("" for an attempt that brought no answer at all, such as one
// cut short by a crash).
type Try struct {
	Model string
	Kind  model.Kind
}

// Why a model was chosen.
const (
	// WhyFirst: the request's first attempt.
	WhyFirst = "first"
	// WhyRetry: the same model again, after a failure that does not move
	// on or while its attempts last.
	WhyRetry = "retry"
	// WhyFallback: the next model, after a moving failure.
	WhyFallback = "fallback"
	// WhyAgain: every model was tried; the route starts again at the top.
	WhyAgain = "again"
	// WhyRecovered: the same model again, after an attempt that brought
	// no answer (a process stopped mid-call).
	WhyRecovered = "recovered"
)

// Skip is a model a choice passed over.
type Skip struct {
	Model string `json:"model"`
	// Why is cooling_down, no_tools or no_answer.
	Why string `json:"why"`
	// Until is when a cooling model is let back.
	Until *time.Time `json:"until,omitempty"`
}

// Why a model was passed over.
const (
	SkipCoolingDown = "cooling_down"
	SkipNoTools     = "no_tools"
	SkipNoAnswer    = "no_answer"
)

// Choice is the model the next attempt goes to.
type Choice struct {
	Member Member
	// Why is WhyFirst, WhyRetry, WhyFallback, WhyAgain or WhyRecovered.
	Why string
	// After is the class of the failure that led here, if one did.
	After model.Kind
	// Skipped are the models passed over to get here, in route order.
	Skipped []Skip
}

// ErrNoModel is returned by Next when no member can serve the request: it
// offers tools or asks for an answer schema, and no model supports that.
var ErrNoModel = errors.New("no model of the route can serve the request")

// Next chooses the model for a request's next attempt, given the attempts
// it has made so far (oldest first). It is deterministic for the same
// tries, request and breaker state. A member that lacks what the request
// needs is skipped; a cooling member is skipped unless every member that
// could serve the request is cooling, when the route asks the first of
// them rather than none.
func (r *Route) Next(req *model.Request, tries []Try) (Choice, error) {
	tools := req != nil && len(req.Tools) > 0
	answer := req != nil && req.Answer != nil
	start, why, after := 0, WhyFirst, model.Kind("")
	if n := len(tries); n > 0 {
		last := tries[n-1]
		i := r.index(last.Model)
		switch {
		case i < 0:
			// A model no longer in the route: start again at the top.
			start, why, after = 0, WhyAgain, last.Kind
		case last.Kind == "":
			return Choice{Member: r.members[i], Why: WhyRecovered}, nil
		case !slices.Contains(r.members[i].MoveOn, last.Kind) || inARow(tries, last.Model) < r.members[i].Attempts:
			return Choice{Member: r.members[i], Why: WhyRetry, After: last.Kind}, nil
		default:
			start, why, after = i+1, WhyFallback, last.Kind
		}
	}
	now := r.now()
	var skipped []Skip
	first, firstWhy := -1, why // the first member able to serve, cooling or not
	for k := range len(r.members) {
		i := start + k
		if i >= len(r.members) {
			i -= len(r.members)
			if why == WhyFallback {
				why = WhyAgain
			}
		}
		m := r.members[i]
		name := m.Model.Name()
		switch {
		case tools && m.NoTools:
			skipped = append(skipped, Skip{Model: name, Why: SkipNoTools})
			continue
		case answer && m.NoAnswer:
			skipped = append(skipped, Skip{Model: name, Why: SkipNoAnswer})
			continue
		}
		if first < 0 {
			first, firstWhy = i, why
		}
		if until, cooling := r.cooling(name, now); cooling {
			// In UTC and without a monotonic reading: as a journal keeps it.
			until = until.UTC().Round(0)
			skipped = append(skipped, Skip{Model: name, Why: SkipCoolingDown, Until: &until})
			continue
		}
		return Choice{Member: m, Why: why, After: after, Skipped: skipped}, nil
	}
	if first < 0 {
		return Choice{}, fmt.Errorf("%s: %w (tools %t, answer schema %t)", r.name, ErrNoModel, tools, answer)
	}
	// Every able member is cooling: ask the first rather than none.
	name := r.members[first].Model.Name()
	skipped = slices.DeleteFunc(skipped, func(s Skip) bool { return s.Model == name })
	return Choice{Member: r.members[first], Why: firstWhy, After: after, Skipped: skipped}, nil
}

// inARow counts the attempts at name at the end of tries.
func inARow(tries []Try, name string) int {
	n := 0
	for i := len(tries) - 1; i >= 0 && tries[i].Model == name; i-- {
		n++
	}
	return n
}

// Report tells the breaker how an attempt at the model named name ended:
// err nil closes its breaker; a failure of a class the member moves on
// from opens it for the cool-down. Other failures change nothing.
func (r *Route) Report(name string, err error) {
	i := r.index(name)
	if i < 0 || r.coolDown < 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		delete(r.breaker, name)
		return
	}
	k := model.KindOf(err)
	if !slices.Contains(r.members[i].MoveOn, k) {
		return
	}
	b := r.breaker[name]
	if b == nil {
		b = &breaker{}
		r.breaker[name] = b
	}
	b.until, b.kind = r.now().Add(r.coolDown), k
	b.failures++
}

// cooling reports whether name's breaker is open at now, and until when.
func (r *Route) cooling(name string, now time.Time) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := r.breaker[name]
	if b == nil || !now.Before(b.until) {
		return time.Time{}, false
	}
	return b.until, true
}

// Breaker is one member's breaker as it stands.
type Breaker struct {
	Model string `json:"model"`
	// Open is set while the model is skipped.
	Open bool `json:"open"`
	// Until is when an open breaker lets the model back.
	Until *time.Time `json:"until,omitempty"`
	// Kind is the class of the failure that last opened it.
	Kind model.Kind `json:"kind,omitempty"`
	// Failures counts the moving failures since the model last answered.
	Failures int `json:"failures"`
}

// Breakers returns every member's breaker, in route order.
func (r *Route) Breakers() []Breaker {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Breaker, len(r.members))
	for i, m := range r.members {
		name := m.Model.Name()
		out[i] = Breaker{Model: name}
		if b := r.breaker[name]; b != nil {
			out[i].Kind, out[i].Failures = b.kind, b.failures
			if now.Before(b.until) {
				until := b.until
				out[i].Open, out[i].Until = true, &until
			}
		}
	}
	return out
}

// Generate sends req down the route: each attempt goes where Next says,
// and a failure that moves on is followed by the next model at once. It
// stops at a reply, at a failure that does not move on, and once every
// member has had its attempts; the error is then the last attempt's.
// Deltas of an attempt that later failed may already have been yielded:
// the final Reply is the one to trust.
func (r *Route) Generate(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	return func(yield func(*model.Chunk, error) bool) {
		var tries []Try
		var last error
		for {
			c, err := r.Next(req, tries)
			if err != nil {
				yield(nil, &model.Error{Kind: model.KindInvalidRequest, Message: err.Error(), Err: err})
				return
			}
			if last != nil && (c.Why == WhyAgain || c.Why == WhyRetry && !slices.Contains(c.Member.MoveOn, c.After)) {
				// The route is spent, or the failure is not one to move
				// on from: the caller's own retry policy decides.
				yield(nil, last)
				return
			}
			name := c.Member.Model.Name()
			var reply *model.Reply
			var failed error
			for chunk, err := range c.Member.Generate(ctx, req) {
				if err != nil {
					failed = err
					break
				}
				if chunk == nil {
					continue
				}
				if chunk.Delta != "" && !yield(&model.Chunk{Delta: chunk.Delta}, nil) {
					return
				}
				if chunk.Reply != nil {
					reply = chunk.Reply
				}
			}
			if reply != nil {
				r.Report(name, nil)
				yield(&model.Chunk{Reply: reply}, nil)
				return
			}
			if failed == nil {
				failed = &model.Error{Kind: model.KindMalformed, Message: name + ": stream ended without a reply"}
			}
			last = failed
			r.Report(name, last)
			if ctx.Err() != nil {
				yield(nil, last)
				return
			}
			tries = append(tries, Try{Model: name, Kind: model.KindOf(last)})
		}
	}
}

// Generate sends req to the member's model, bounded by its Timeout: an
// attempt that runs past it fails as timed_out.
func (m Member) Generate(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	return func(yield func(*model.Chunk, error) bool) {
		if m.Timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, m.Timeout)
			defer cancel()
		}
		for c, err := range m.Model.Generate(ctx, req) {
			if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) && model.KindOf(err) != model.KindTimedOut {
				err = &model.Error{Kind: model.KindTimedOut, Message: fmt.Sprintf("%s: no answer within %s", m.Model.Name(), m.Timeout), Err: err}
			}
			if !yield(c, err) || err != nil {
				return
			}
		}
	}
}
