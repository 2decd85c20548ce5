package approval

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"
)

// Approvers check credentials and verify proofs. Implementations must be
// safe for concurrent use.
type Approvers interface {
	// Check verifies cred and returns a proof that its holder may answer
	// requests with the given requirement. Errors: ErrBadCredential,
	// ErrOtherRequirement.
	Check(ctx context.Context, cred Credential, requirement string) (Proof, error)

	// Verify checks that p was issued by these approvers, covers
	// requirement and has not expired at now. Errors: ErrOtherApprovers,
	// ErrOtherRequirement, ErrProofExpired.
	Verify(p Proof, requirement string, now time.Time) error
}

// Credential is what a person presents: a name and a secret.
type Credential struct {
	Name   string
	Secret string
}

// Proof says an approver was checked for a requirement. It is short-lived
// and only the Approvers that issued it accept it.
type Proof struct {
	Approver    string    `json:"approver"`
	Requirement string    `json:"requirement"`
	Issuer      string    `json:"issuer"`
	Expires     time.Time `json:"expires"`
	Sig         string    `json:"sig"`
}

// Refusals.
var (
	ErrNoApprovers      = errors.New("the agent has no approvers: nobody may answer its requests")
	ErrOtherApprovers   = errors.New("the proof was issued by other approvers")
	ErrOtherRequirement = errors.New("the approver may not answer this requirement")
	ErrProofExpired     = errors.New("the proof has expired; check the credential again")
	ErrBadCredential    = errors.New("unknown approver or wrong secret")
)

// DefaultProofTTL is how long a proof from Static lasts.
const DefaultProofTTL = 5 * time.Minute

// Member is one approver of a Static set.
type Member struct {
	Name   string
	Secret string
	// Requirements are globs over requirement names this member may
	// answer ("*" for any).
	Requirements []string
}

// Static is a fixed set of approvers, each with a secret.
type Static struct {
	id      string
	key     []byte
	members map[string]Member
	ttl     time.Duration
	now     func() time.Time
}

var _ Approvers = (*Static)(nil)

// NewStatic returns a set of approvers. Each set signs its proofs with its
// own random key, so a proof from another set is refused.
func NewStatic(members ...Member) (*Static, error) {
	s := &Static{members: map[string]Member{}, ttl: DefaultProofTTL, now: time.Now}
	for i, m := range members {
		switch {
		case m.Name == "":
			return nil, fmt.Errorf("approver %d: name is empty", i+1)
		case m.Secret == "":
			return nil, fmt.Errorf("approver %s: secret is empty", m.Name)
		case len(m.Requirements) == 0:
			return nil, fmt.Errorf("approver %s: requirements is empty", m.Name)
		}
		if _, dup := s.members[m.Name]; dup {
			return nil, fmt.Errorf("approver %s is listed twice", m.Name)
		}
		for _, g := range m.Requirements {
			if _, err := path.Match(g, ""); err != nil {
				return nil, fmt.Errorf("approver %s: bad requirement glob %q", m.Name, g)
			}
		}
		s.members[m.Name] = m
	}
	id := make([]byte, 8)
	s.key = make([]byte, 32)
	_, _ = rand.Read(id)
	_, _ = rand.Read(s.key)
	s.id = hex.EncodeToString(id)
	return s, nil
}

// WithProofTTL sets how long proofs last; it returns s.
func (s *Static) WithProofTTL(d time.Duration) *Static { s.ttl = d; return s }

// Check verifies a credential for a requirement.
func (s *Static) Check(_ context.Context, cred Credential, requirement string) (Proof, error) {
	m, ok := s.members[cred.Name]
	if !ok || subtle.ConstantTimeCompare([]byte(m.Secret), []byte(cred.Secret)) != 1 {
		return Proof{}, ErrBadCredential
	}
	if !covers(m.Requirements, requirement) {
		return Proof{}, fmt.Errorf("%w: %s may not answer %q", ErrOtherRequirement, m.Name, requirement)
	}
	p := Proof{Approver: m.Name, Requirement: requirement, Issuer: s.id, Expires: s.now().Add(s.ttl).UTC()}
	p.Sig = s.sign(p)
	return p, nil
}

// Verify checks a proof.
func (s *Static) Verify(p Proof, requirement string, now time.Time) error {
	if p.Issuer != s.id || !hmac.Equal([]byte(p.Sig), []byte(s.sign(p))) {
		return ErrOtherApprovers
	}
	if p.Requirement != requirement {
		return fmt.Errorf("%w: the proof is for %q, the request needs %q", ErrOtherRequirement, p.Requirement, requirement)
	}
	if !now.Before(p.Expires) {
		return fmt.Errorf("%w (it expired at %s)", ErrProofExpired, p.Expires.Format(time.RFC3339))
	}
	return nil
}

func (s *Static) sign(p Proof) string {
	h := hmac.New(sha256.New, s.key)
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%d", p.Approver, p.Requirement, p.Issuer, p.Expires.UnixNano())
	return hex.EncodeToString(h.Sum(nil))
}

func covers(globs []string, requirement string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, requirement); ok || g == "*" {
			return true
		}
	}
	return false
}

// ParseCredential reads "name:secret".
func ParseCredential(s string) (Credential, error) {
	name, secret, ok := strings.Cut(s, ":")
	if !ok || name == "" || secret == "" {
		return Credential{}, errors.New(`a credential is "name:secret"`)
	}
	return Credential{Name: name, Secret: secret}, nil
}
