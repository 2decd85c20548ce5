// Package apierr turns what a provider's HTTP endpoint said into a
// *model.Error: the status and body of a refused request, the headers that
// ask for a pause, and the transport failures in between. Both provider
// adapters share it so that a 429 means the same thing whichever SDK sent the
// request, and so that no API key can reach an error text.
package apierr
