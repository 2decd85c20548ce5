// Package hitchtype holds the public types that hitch's packages and its
// users share: a run's Status, the journal's entry kinds and the payload of
// each, a run's Outcome and Usage, and the Limits of one run with their
// defaults.
//
// It is a leaf: it imports only the model and policy ports, so the root
// package, the engine, the CLI and any client can all depend on it without
// depending on one another. Journal payloads are read by decoding an entry's
// Data into the struct named after its kind:
//
//	var d hitchtype.CallSettled
//	err := json.Unmarshal(entry.Data, &d) // entry.Kind == hitchtype.KindCallSettled
package hitchtype
