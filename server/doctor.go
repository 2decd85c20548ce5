package server

import (
	"context"

	"github.com/hitch-dev/hitch/api"
	"github.com/hitch-dev/hitch/doctor"
)

func (s *Server) runDoctor(ctx context.Context, in *struct {
	Network bool `query:"network" doc:"Also call each model once to prove its credentials work."`
}) (*body[api.DoctorReport], error) {
	cfg := s.cfg.Doctor
	cfg.Network = in.Network
	r, err := s.scope(ctx).Doctor(ctx, cfg)
	return reply(s, "doctor", r, err, wireDoctor)
}

func wireDoctor(r doctor.Report) api.DoctorReport {
	out := api.DoctorReport{Verdict: string(r.Verdict), Checks: make([]api.DoctorCheck, 0, len(r.Checks))}
	for _, c := range r.Checks {
		out.Checks = append(out.Checks, api.DoctorCheck{Name: c.Name, Verdict: string(c.Verdict), Detail: c.Detail, Fix: c.Fix})
	}
	return out
}
