package hitch_test

import (
	"flag"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hitch-dev/hitch"
	"github.com/hitch-dev/hitch/chaos"
	"github.com/hitch-dev/hitch/client"
	"github.com/hitch-dev/hitch/cron"
	"github.com/hitch-dev/hitch/defaults"
	"github.com/hitch-dev/hitch/doctor"
	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/internal/engine"
	"github.com/hitch-dev/hitch/model/route"
	"github.com/hitch-dev/hitch/policy"
	"github.com/hitch-dev/hitch/sandbox/local"
	"github.com/hitch-dev/hitch/secret"
	"github.com/hitch-dev/hitch/server"
	"github.com/hitch-dev/hitch/server/mcpserver"
	"github.com/hitch-dev/hitch/store"
	"github.com/hitch-dev/hitch/store/sqlite"
	"github.com/hitch-dev/hitch/telemetry"
	"github.com/hitch-dev/hitch/tool/builtin"
	"github.com/hitch-dev/hitch/tool/mcp"
	"github.com/hitch-dev/hitch/triggers"
	"github.com/hitch-dev/hitch/web"
)

var updateDefaults = flag.Bool("update-defaults", false, "rewrite the table in docs/defaults.md")

const tableStart, tableEnd = "<!-- defaults table: generated -->\n", "<!-- end of generated table -->\n"

// TestDefaultsDocIsCurrent keeps docs/defaults.md in step with the table in
// code: regenerate it with `go test -run DefaultsDoc -update-defaults`.
func TestDefaultsDocIsCurrent(t *testing.T) {
	b, err := os.ReadFile("docs/defaults.md")
	if err != nil {
		t.Fatal(err)
	}
	table := defaults.Markdown()
	doc := string(b)
	if *updateDefaults {
		i, j := strings.Index(doc, tableStart), strings.Index(doc, tableEnd)
		if i < 0 || j < i {
			t.Fatal("docs/defaults.md lacks the table markers")
		}
		doc = doc[:i+len(tableStart)] + table + doc[j:]
		if err := os.WriteFile("docs/defaults.md", []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(doc, tableStart+table+tableEnd) {
		t.Errorf("docs/defaults.md does not hold the current table; put this in it:\n%s", table)
	}
}

// TestDefaultsMatchCode checks the rows against the constants they name.
func TestDefaultsMatchCode(t *testing.T) {
	l := hitch.Limits{}.WithDefaults()
	row := func(setting string) string {
		for _, d := range defaults.Table {
			if d.Setting == setting {
				return d.Value
			}
		}
		t.Fatalf("no row for %s", setting)
		return ""
	}
	dur := func(d time.Duration) string { return d.String() }
	checks := []struct{ setting, want string }{
		{"Limits.ModelAttempts", itoa(l.ModelAttempts)},
		{"Limits.RetryDelay", dur(l.RetryDelay)},
		{"Limits.MaxRetryAfter", "10m"},
		{"Limits.ModelTimeout", "600s"},
		{"route.Config.CoolDown (config: routes.<name>.cool_down)", strings.TrimSuffix(dur(route.DefaultCoolDown), "0s")},
		{"Limits.PolicyTimeout", dur(l.PolicyTimeout)},
		{"Limits.ToolTimeout (per tool: tool.WithTimeout)", "60s"},
		{"Limits.ToolConcurrency", itoa(l.ToolConcurrency)},
		{"Limits.CommandWait", dur(l.CommandWait)},
		{"Config.LeaseTTL", "30s"},
		{"hitch chaos --runs", itoa(chaos.DefaultRuns)},
		{"hitch chaos --kills", itoa(chaos.DefaultKills)},
		{"hitch chaos --workers", itoa(chaos.DefaultWorkers)},
		{"hitch chaos --duration", dur(chaos.DefaultDuration)},
		{"hitch chaos --lease-ttl", dur(chaos.DefaultLeaseTTL)},
		{"chaos.DefaultMaxViolations", itoa(chaos.DefaultMaxViolations)},
		{"hitch worker --drain (Runtime.Close's ctx)", dur(hitch.DefaultDrainWindow)},
		{"hitch worker --poll (Runtime.Sweep's interval)", dur(hitch.DefaultSweepInterval)},
		{"DefaultSweepMaxBackoff", dur(hitch.DefaultSweepMaxBackoff)},
		{"policy.DefaultCostLimit", itoa(policy.DefaultCostLimit)},
		{"Config.Sessions.MaxMessageBytes", itoa(hitchtype.DefaultMaxMessageBytes>>10) + " KiB"},
		{"Config.Sessions.IdempotencyTTL", strings.TrimSuffix(strings.TrimSuffix(dur(hitchtype.DefaultIdempotencyTTL), "0s"), "0m")},
		{"sqlite.WithBatchSize", itoa(sqlite.DefaultBatchSize)},
		{"sqlite.WithQueueSize", itoa(sqlite.DefaultQueueSize)},
		{"sqlite.WithBusyTimeout", dur(sqlite.DefaultBusyTimeout)},
		{"sqlite.WithCheckpointInterval", dur(sqlite.DefaultCheckpointInterval)},
		{"builtin.GlobMaxPaths", itoa(builtin.GlobMaxPaths)},
		{"Runtime.PendingApprovals", itoa(engine.MaxWaitingScan)},
		{"Runtime.FamilyUsage / FamilyCost", itoa(engine.MaxFamilyRuns)},
		{"store.MaxFilteredCount", itoa(store.MaxFilteredCount)},
		{"hitch.MaxReplayRuns (hitch replay --limit)", itoa(hitch.MaxReplayRuns)},
		{"local.MaxStarting", itoa(local.MaxStarting)},
		{"builtin.GrepMaxMatches / GrepMaxLineChars", itoa(builtin.GrepMaxMatches) + " / " + itoa(builtin.GrepMaxLineChars)},
		{"builtin.ReadMaxLines / ReadMaxBytes", itoa(builtin.ReadMaxLines) + " lines / " + itoa(builtin.ReadMaxBytes/1024) + " KiB"},
		{"builtin.BashMaxLines / BashMaxBytes", itoa(builtin.BashMaxLines) + " lines / " + itoa(builtin.BashMaxBytes/1024) + " KiB"},
		{"bash's timeout argument", strings.TrimSuffix(dur(builtin.BashDefaultTimeout), "0s")},
		{"mcp.Server.ConnectTimeout", dur(mcp.DefaultConnectTimeout)},
		{"mcp.Server.CallTimeout (per tool: Tools[name].Timeout)", itoa(int(mcp.DefaultCallTimeout/time.Second)) + "s"},
		{"mcp.Server.MaxResult", itoa(mcp.DefaultMaxResult>>20) + " MiB"},
		{"mcpserver.Options.MaxWait (hitch mcp --max-wait)", itoa(int(mcpserver.DefaultMaxWait/time.Second)) + "s"},
		{"secret.MinLen", itoa(secret.MinLen) + " bytes"},
		{"secret.MaxValues", itoa(secret.MaxValues)},
		{"telemetry.MaxOpenRuns", itoa(telemetry.MaxOpenRuns)},
		{"telemetry.MaxRunEvents", itoa(telemetry.MaxRunEvents)},
		{"telemetry.MetricsOptions.CacheFor (hitch serve / worker --metrics-cache)", dur(telemetry.DefaultMetricsCache)},
		{"telemetry.MaxMetricsScan", itoa(telemetry.MaxMetricsScan)},
		{"telemetry.MetricsReadTimeout", dur(telemetry.MetricsReadTimeout)},
		{"cron.MaxYears", itoa(cron.MaxYears) + " years"},
		{"mcp.MaxTools", itoa(mcp.MaxTools)},
		{"mcp.ReconnectMinDelay / ReconnectMaxDelay", dur(mcp.ReconnectMinDelay) + " / " + dur(mcp.ReconnectMaxDelay)},
		{"mcp.DefaultReplay", itoa(mcp.DefaultReplay)},
		{"Limits.MaxWait", itoa(int(l.MaxWait/(24*time.Hour))) + " days"},
		{"Config.Retention (hitch prune --older-than)", itoa(int(hitch.DefaultRetention/(24*time.Hour))) + " days"},
		{"Config.PruneEvery", strings.TrimSuffix(dur(hitch.DefaultPruneEvery), "0s")},
		{"Config.PruneBatch (hitch prune --batch)", itoa(hitch.DefaultPruneBatch)},
		{"MaxPruneBatches", itoa(hitch.MaxPruneBatches)},
		{"Limits.PendingCallTimeout", strings.TrimSuffix(dur(l.PendingCallTimeout), "0m0s")},
		{"hitchtype.MaxEventNameBytes / MaxWakeDataBytes", itoa(hitchtype.MaxEventNameBytes) + " B / " + itoa(hitchtype.MaxWakeDataBytes>>10) + " KiB"},
		{"web.JournalPage", itoa(web.JournalPage)},
		{"server.MaxContextRequests", itoa(server.MaxContextRequests)},
		{"web.Config.SessionMaxAge", itoa(int(web.DefaultSessionMaxAge/time.Hour)) + "h"},
		{"web.RunsRefresh", dur(web.RunsRefresh)},
		{"store.MaxTitleRunes / MaxTextRunes", itoa(store.MaxTitleRunes) + " / " + itoa(store.MaxTextRunes) + " characters"},
		{"web.MaxShown", itoa(web.MaxShown>>10) + " KiB"},
		{"web.LiveWriteTimeout", dur(web.LiveWriteTimeout)},
		{"web.SessionsRead", itoa(web.SessionsRead)},
		{"web.QueueShown", itoa(web.QueueShown)},
		{"web.TurnTail", itoa(web.TurnTail)},
		{"client.DefaultRetryMin / DefaultRetryMax (client.WithRetry)", dur(client.DefaultRetryMin) + " / " + dur(client.DefaultRetryMax)},
		{"client.DefaultRetries", itoa(client.DefaultRetries)},
		{"client.DefaultTimeout (client.WithTimeout)", dur(client.DefaultTimeout)},
		{"doctor.Config.Commits", itoa(doctor.DefaultCommits)},
		{"doctor.Config.Timeout", dur(doctor.DefaultCheckTimeout)},
		{"client.MaxResponseBytes / MaxEventBytes", itoa(client.MaxResponseBytes>>20) + " MiB / " + itoa(client.MaxEventBytes>>20) + " MiB"},
		{"Config.Triggers.Poll", dur(triggers.DefaultPoll)},
		{"Config.Triggers.Batch", itoa(triggers.DefaultBatch)},
		{"Config.Triggers.ClaimTTL", dur(triggers.DefaultClaimTTL)},
		{"Config.Triggers.MaxPerSession", itoa(triggers.DefaultPerSession)},
		{"Config.Triggers.MinInterval", strings.TrimSuffix(dur(triggers.DefaultMinInterval), "0s")},
		{"triggers.Spec.Grace (config: grace)", strings.TrimSuffix(dur(triggers.DefaultGrace), "0s")},
		{"triggers.DefaultMaxRetry", strings.TrimSuffix(dur(triggers.DefaultMaxRetry), "0s")},
		{"triggers.Spec.ID (triggers.MaxIDBytes)", "1–" + itoa(triggers.MaxIDBytes) + " bytes"},
		{"triggers.MaxTextBytes", itoa(triggers.MaxTextBytes>>10) + " KiB"},
		{"triggers.MaxWakeAhead", itoa(int(triggers.MaxWakeAhead/(24*time.Hour))) + " days"},
	}
	for _, c := range checks {
		if got := row(c.setting); got != c.want {
			t.Errorf("%s: table says %s, code says %s", c.setting, got, c.want)
		}
	}
	if l.ModelTimeout != 600*time.Second || l.ToolTimeout != 60*time.Second || l.MaxRetryAfter != 10*time.Minute || l.MaxToolResult != 1<<20 {
		t.Errorf("limits defaults drifted: %+v", l)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
