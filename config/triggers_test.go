package config

import (
	"testing"
	"time"
)

func TestLoadTriggers(t *testing.T) {
	t.Parallel()
	cfg := load(t, onDemo(`agents:
  - name: helper
    model: demo
    policy: allow_all
    tools: [schedule_wake, schedule]
triggers:
  - name: morning
    cron: "0 9 * * mon-fri"
    zone: Europe/Berlin
    agent: helper
    input: summarise the tickets
    missed: skip
  - name: ping
    at: 2027-05-01T09:00:00Z
    session: s1
    text: is the deploy done?
  - name: hourly
    cron: "@hourly"
    session: s1
    text: tick
    once: true
    expires_at: 2028-01-01T00:00:00Z
    grace: 5m
    paused: true
`))
	if len(cfg.Triggers) != 3 {
		t.Fatalf("triggers: %+v", cfg.Triggers)
	}
	m, p, h := cfg.Triggers[0].Spec, cfg.Triggers[1].Spec, cfg.Triggers[2]
	if m.ID != "morning" || m.Zone != "Europe/Berlin" || m.Agent != "helper" || m.Missed != "skip" {
		t.Errorf("morning: %+v", m)
	}
	if !p.At.Equal(time.Date(2027, 5, 1, 9, 0, 0, 0, time.UTC)) || p.Session != "s1" {
		t.Errorf("ping: %+v", p)
	}
	if h.Spec.MaxFires != 1 || h.Spec.Grace != 5*time.Minute || !h.Paused || h.Spec.ExpiresAt.Year() != 2028 {
		t.Errorf("hourly: %+v", h)
	}
}

func TestTriggerProblemsInOnePass(t *testing.T) {
	t.Parallel()
	refused(t, onDemo(`agents:
  - name: helper
    model: demo
    policy: allow_all
triggers:
  - name: bad name!
    cron: "61 * * * *"
    agent: nobody
  - name: two
    at: tomorrow
    session: s1
  - name: two
    cron: "@daily"
    zone: Mars/Olympus
    agent: helper
    session: s1
    missed: sometimes
    grace: forever
`),
		":9: triggers[0].name", ":10: triggers[0].cron", "want 0–59", ":11: triggers[0].agent", `"nobody" is not an agent`,
		":13: triggers[1].at", "RFC 3339", "triggers[1].text", ":15: triggers[2].name", `already the name of triggers[1]`,
		":17: triggers[2].zone", ":19: triggers[2].session", ":20: triggers[2].missed", ":21: triggers[2].grace",
	)
}
