package approval

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestStaticChecksAndVerifies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, err := NewStatic(Member{Name: "alice", Secret: "s1", Requirements: []string{"pay*"}}, Member{Name: "bob", Secret: "s2", Requirements: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	other, _ := NewStatic(Member{Name: "alice", Secret: "s1", Requirements: []string{"*"}})

	p, err := a.Check(ctx, Credential{"alice", "s1"}, "payments")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := a.Verify(p, "payments", now); err != nil {
		t.Errorf("verify own proof: %v", err)
	}
	for _, tc := range []struct {
		name string
		err  error
		got  error
	}{
		{"wrong secret", ErrBadCredential, func() error { _, err := a.Check(ctx, Credential{"alice", "nope"}, "payments"); return err }()},
		{"unknown approver", ErrBadCredential, func() error { _, err := a.Check(ctx, Credential{"carol", "s1"}, "payments"); return err }()},
		{"requirement not covered", ErrOtherRequirement, func() error { _, err := a.Check(ctx, Credential{"alice", "s1"}, "deploy"); return err }()},
		{"proof for another requirement", ErrOtherRequirement, a.Verify(p, "payroll", now)},
		{"proof from other approvers", ErrOtherApprovers, other.Verify(p, "payments", now)},
		{"forged proof", ErrOtherApprovers, a.Verify(Proof{Approver: "bob", Requirement: "payments", Issuer: p.Issuer, Expires: p.Expires, Sig: p.Sig}, "payments", now)},
		{"expired proof", ErrProofExpired, a.Verify(p, "payments", p.Expires)},
	} {
		if !errors.Is(tc.got, tc.err) {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.err)
		}
	}
}

func TestNewStaticRefusesBadMembers(t *testing.T) {
	t.Parallel()
	for _, ms := range [][]Member{
		{{Name: "", Secret: "x", Requirements: []string{"*"}}},
		{{Name: "a", Secret: "", Requirements: []string{"*"}}},
		{{Name: "a", Secret: "x"}},
		{{Name: "a", Secret: "x", Requirements: []string{"*"}}, {Name: "a", Secret: "y", Requirements: []string{"*"}}},
		{{Name: "a", Secret: "x", Requirements: []string{"["}}},
	} {
		if _, err := NewStatic(ms...); err == nil {
			t.Errorf("NewStatic(%+v) succeeded", ms)
		}
	}
}
