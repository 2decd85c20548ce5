package model_test

import (
	"math"
	"testing"

	"github.com/hitch-dev/hitch/model"
)

func TestPriceOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		want float64 // input rate
		ok   bool
	}{
		{"gpt-4o", 2.50, true},
		{"gpt-4o-mini", 0.15, true},
		{"GPT-4o-Mini", 0.15, true},
		{"gpt-4o-mini-2024-07-18", 0.15, true},
		{"openai/gpt-4.1-nano", 0.10, true},
		{"claude-sonnet-4-5-20250929", 3.00, true},
		{"anthropic/claude-haiku-4-5", 1.00, true},
		{"claude-3-5-haiku-latest", 0.80, true},
		{"o4-mini", 1.10, true},
		{"gpt-4o-audio-preview", 0, false},
		{"llama3.2", 0, false},
		{"", 0, false},
	} {
		p, ok := model.PriceOf(tc.name)
		if ok != tc.ok || p.Input != tc.want {
			t.Errorf("PriceOf(%q) = %+v, %v; want input %v, %v", tc.name, p, ok, tc.want, tc.ok)
		}
	}
}

func TestCost(t *testing.T) {
	t.Parallel()
	i := model.Int64
	prices := model.DefaultPrices().With(model.Prices{
		"llama3.2":    {Input: 0.5, Output: 1, CachedInput: 0.5},
		"gpt-4o-mini": {Input: 1, Output: 2, CachedInput: 0.25},
	})
	for _, tc := range []struct {
		name  string
		model string
		u     *model.Usage
		want  float64
		known bool
	}{
		{"all counters", "gpt-4o", &model.Usage{InputTokens: i(2_000_000), OutputTokens: i(100_000), CachedInputTokens: i(1_000_000)}, 2.50 + 1.25 + 1.00, true},
		{"override wins", "gpt-4o-mini", &model.Usage{InputTokens: i(1_000_000), OutputTokens: i(1_000_000), CachedInputTokens: i(0)}, 3, true},
		{"added model", "llama3.2", &model.Usage{InputTokens: i(1_000_000), OutputTokens: i(1_000_000)}, 1.5, true},
		{"cached above input is capped", "gpt-4o", &model.Usage{InputTokens: i(10), OutputTokens: i(0), CachedInputTokens: i(20)}, 10 * 1.25 / 1e6, true},
		{"nil usage", "gpt-4o", nil, 0, false},
		{"no input count", "gpt-4o", &model.Usage{OutputTokens: i(1), CachedInputTokens: i(0)}, 0, false},
		{"no output count", "gpt-4o", &model.Usage{InputTokens: i(1), CachedInputTokens: i(0)}, 0, false},
		{"no cached count where it matters", "gpt-4o", &model.Usage{InputTokens: i(1), OutputTokens: i(1)}, 0, false},
		{"unknown model", "mystery", &model.Usage{InputTokens: i(1), OutputTokens: i(1), CachedInputTokens: i(0)}, 0, false},
	} {
		got, known := prices.Cost(tc.model, tc.u)
		if known != tc.known || math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: Cost = %v, %v; want %v, %v", tc.name, got, known, tc.want, tc.known)
		}
	}
	// The built-in table is not changed by overrides.
	if p, _ := model.PriceOf("gpt-4o-mini"); p.Input != 0.15 {
		t.Errorf("built-in table changed: %+v", p)
	}
}
