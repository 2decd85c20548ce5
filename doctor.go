package hitch

import (
	"context"
	"fmt"

	"github.com/hitch-dev/hitch/doctor"
	"github.com/hitch-dev/hitch/hitchtype"
)

// Doctor runs package doctor's checks on the runtime's deployment, with
// cfg saying what else to check (its Store, when nil, is the runtime's).
// The report covers the store, the sandbox and the secrets that every
// tenant shares, so it is served to admins of the default tenant (or of
// AllTenants) only.
func (s *Scope) Doctor(ctx context.Context, cfg doctor.Config) (doctor.Report, error) {
	if err := s.allow("Doctor"); err != nil {
		return doctor.Report{}, err
	}
	if t := s.g.P.Tenant; t != hitchtype.DefaultTenant && t != AllTenants {
		return doctor.Report{}, s.g.Forbid("Doctor", fmt.Sprintf("the report covers every tenant's deployment; it is served to tenant %s", hitchtype.DefaultTenant))
	}
	if cfg.Store == nil && cfg.StoreErr == nil {
		cfg.Store = s.rt.cfg.Store
	}
	return doctor.Run(ctx, cfg)
}
