// Package route puts an ordered list of models behind one model.Model: a
// request goes to the first model, and a failure of a class the model is
// set to move on from (unreachable, overloaded, rate limited, timed out by
// default) sends it to the next. A failure that trying elsewhere cannot
// mend, such as a rejected key or a bad request, ends the request as it
// would without a route.
//
// A route also keeps a breaker for each model, shared by every request
// that goes through the route value: a model that failed with a moving
// class is skipped until its cool-down has passed, then let back. The
// breaker reads an injectable clock, so tests pin time.
//
// Route.Generate does it all in one call, for programs that use a route
// as a plain model. hitch's engine instead asks Route.Next for each
// attempt and journals the choice (which model, and why) before making
// it, so a run recovered after a crash asks the same model again.
package route
