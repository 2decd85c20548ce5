package model

import (
	"context"
	"fmt"
)

// checkMaxTokens bounds the check's reply. It is generous for two letters
// because reasoning models spend tokens before they write.
const checkMaxTokens = 64

// Check makes one small call to m to prove that its endpoint, key and
// model name work: it asks for the reply "OK" and accepts any reply at
// all. The error is m's own, wrapped, so its Kind still says what failed.
// ctx bounds the call.
func Check(ctx context.Context, m Model) error {
	req := &Request{
		Instructions:    "This is a connectivity check.",
		Messages:        []Message{{Role: RoleUser, Text: "Reply with OK."}},
		MaxOutputTokens: checkMaxTokens,
	}
	if _, err := Collect(m.Generate(ctx, req), nil); err != nil {
		return fmt.Errorf("check model %s: %w", m.Name(), err)
	}
	return nil
}
