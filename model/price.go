package model

import (
	"maps"
	"regexp"
	"strings"
)

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	Input  float64 `json:"input" yaml:"input"`
	Output float64 `json:"output" yaml:"output"`
	// CachedInput is the rate for input tokens read from the provider's
	// prompt cache.
	CachedInput float64 `json:"cached_input" yaml:"cached_input"`
}

// PricesAsOf is the date at which the built-in figures were the providers'
// published list prices. Prices change and contracts differ: override them
// in config (a Prices map merged over DefaultPrices) rather than trust them.
const PricesAsOf = "2025-11-01"

// defaultPrices are list prices, USD per million tokens, as of PricesAsOf.
// Anthropic bills writes to its prompt cache above the input rate; hitch
// counts those tokens as plain input, so a run that fills the cache costs a
// little more than reported.
var defaultPrices = Prices{
	// OpenAI
	"gpt-4o":       {Input: 2.50, Output: 10.00, CachedInput: 1.25},
	"gpt-4o-mini":  {Input: 0.15, Output: 0.60, CachedInput: 0.075},
	"gpt-4.1":      {Input: 2.00, Output: 8.00, CachedInput: 0.50},
	"gpt-4.1-mini": {Input: 0.40, Output: 1.60, CachedInput: 0.10},
	"gpt-4.1-nano": {Input: 0.10, Output: 0.40, CachedInput: 0.025},
	"gpt-5":        {Input: 1.25, Output: 10.00, CachedInput: 0.125},
	"gpt-5-mini":   {Input: 0.25, Output: 2.00, CachedInput: 0.025},
	"gpt-5-nano":   {Input: 0.05, Output: 0.40, CachedInput: 0.005},
	"o1":           {Input: 15.00, Output: 60.00, CachedInput: 7.50},
	"o1-mini":      {Input: 1.10, Output: 4.40, CachedInput: 0.55},
	"o3":           {Input: 2.00, Output: 8.00, CachedInput: 0.50},
	"o3-mini":      {Input: 1.10, Output: 4.40, CachedInput: 0.55},
	"o4-mini":      {Input: 1.10, Output: 4.40, CachedInput: 0.275},

	// Anthropic; the cached rate is the cache-read rate.
	"claude-opus-4-5":   {Input: 5.00, Output: 25.00, CachedInput: 0.50},
	"claude-opus-4-1":   {Input: 15.00, Output: 75.00, CachedInput: 1.50},
	"claude-opus-4":     {Input: 15.00, Output: 75.00, CachedInput: 1.50},
	"claude-sonnet-4-5": {Input: 3.00, Output: 15.00, CachedInput: 0.30},
	"claude-sonnet-4":   {Input: 3.00, Output: 15.00, CachedInput: 0.30},
	"claude-3-7-sonnet": {Input: 3.00, Output: 15.00, CachedInput: 0.30},
	"claude-3-5-sonnet": {Input: 3.00, Output: 15.00, CachedInput: 0.30},
	"claude-haiku-4-5":  {Input: 1.00, Output: 5.00, CachedInput: 0.10},
	"claude-3-5-haiku":  {Input: 0.80, Output: 4.00, CachedInput: 0.08},
	"claude-3-haiku":    {Input: 0.25, Output: 1.25, CachedInput: 0.03},
	"claude-3-opus":     {Input: 15.00, Output: 75.00, CachedInput: 1.50},
}

// Prices maps model names to prices. Names are matched as PriceOf
// describes.
type Prices map[string]Price

// DefaultPrices returns a copy of the built-in table, for callers to extend
// or override.
func DefaultPrices() Prices { return maps.Clone(defaultPrices) }

// With returns a new table holding p's entries overridden by over's.
func (p Prices) With(over Prices) Prices {
	out := maps.Clone(p)
	if out == nil {
		out = Prices{}
	}
	maps.Copy(out, over)
	return out
}

// PriceOf looks a model up in the built-in table.
func PriceOf(model string) (Price, bool) { return defaultPrices.Lookup(model) }

// datedSuffix matches the snapshot suffixes providers put on model ids:
// -2024-08-06, -20250929, -latest.
var datedSuffix = regexp.MustCompile(`-(\d{4}-\d{2}-\d{2}|\d{8}|latest)$`)

// Lookup finds a model's price. It tries the name as given, then without a
// provider prefix ("openai/gpt-4o"), then without a snapshot suffix
// ("claude-sonnet-4-5-20250929", "gpt-4o-2024-08-06"). Matching is
// otherwise exact, so "gpt-4o-mini" never takes gpt-4o's price.
func (p Prices) Lookup(model string) (Price, bool) {
	name := strings.ToLower(strings.TrimSpace(model))
	if pr, ok := p.lookupName(name); ok {
		return pr, true
	}
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
		if pr, ok := p.lookupName(name); ok {
			return pr, true
		}
	}
	// Matched first: replacing allocates even when nothing matches, and
	// most names a runtime prices every reply have no suffix.
	if datedSuffix.MatchString(name) {
		return p.lookupName(datedSuffix.ReplaceAllString(name, ""))
	}
	return Price{}, false
}

// lookupName finds name as it is, or differing only in case.
func (p Prices) lookupName(name string) (Price, bool) {
	if pr, ok := p[name]; ok {
		return pr, true
	}
	return lookupFold(p, name)
}

// lookupFold finds a key that differs from name only in case.
func lookupFold(p Prices, name string) (Price, bool) {
	for k, v := range p {
		if strings.EqualFold(k, name) {
			return v, true
		}
	}
	return Price{}, false
}

// Cost prices one reply's usage in US dollars. Input tokens include the
// cached ones, as every provider adapter reports them. It returns false
// when the model has no price or a counter the sum needs was not reported:
// input and output always, the cached count whenever cached input has its
// own rate. A missing counter is never taken as zero.
func (p Prices) Cost(model string, u *Usage) (usd float64, known bool) {
	pr, ok := p.Lookup(model)
	if !ok || u == nil || u.InputTokens == nil || u.OutputTokens == nil {
		return 0, false
	}
	input := float64(*u.InputTokens)
	var cached float64
	if pr.CachedInput != pr.Input {
		if u.CachedInputTokens == nil {
			return 0, false
		}
		cached = float64(*u.CachedInputTokens)
	}
	if cached > input {
		cached = input
	}
	usd = ((input-cached)*pr.Input + cached*pr.CachedInput + float64(*u.OutputTokens)*pr.Output) / 1e6
	return usd, true
}
