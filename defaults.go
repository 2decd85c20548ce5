package hitch

import (
	"fmt"
	"strings"
	"time"

	"github.com/hitch-dev/hitch/hitchtype"
	"github.com/hitch-dev/hitch/store"
)

// Infinite, as a timeout, leaves the wait unbounded.
const Infinite = hitchtype.Infinite

// Defaults of the Runtime's Config. The defaults of Limits are in
// hitchtype; each is also a row of Defaults, which docs/defaults.md
// renders, and a test keeps the two in step.
const (
	DefaultLeaseTTL         = 30 * time.Second
	DefaultLeaseRenew       = 10 * time.Second
	DefaultForceSettleGrace = 60 * time.Second
	DefaultCancelPoll       = time.Second
	// DefaultMaxRunners is how many runs a node drives at once; see
	// Config.MaxRunners.
	DefaultMaxRunners = 4096
	// DefaultClaimBatch is how many due runs one sweeper pass claims.
	DefaultClaimBatch = 64
	// DefaultClaimCooldown is the sweeper's pause after a pass that
	// claimed a full batch, so that the other nodes of a store claim
	// their share of a backlog.
	DefaultClaimCooldown = 50 * time.Millisecond
	// DefaultFollowBuffer is how many entries a follower of a run may leave
	// unread before it is cut; see Config.FollowBuffer.
	DefaultFollowBuffer = 256
	// DefaultFollowPoll is how often a followed run's reader reads its
	// journal without a commit of this runtime; see Config.FollowPoll.
	DefaultFollowPoll = time.Second
	// DefaultLeaderTTL is how long a leadership won by Runtime.Lead lasts
	// without re-election.
	DefaultLeaderTTL = 15 * time.Second
	// DefaultDrainWindow is how long a graceful stop (hitch worker on
	// SIGTERM) lets running tool bodies and model calls finish.
	DefaultDrainWindow = 30 * time.Second
	// DefaultSweepInterval is how often hitch worker's sweeper looks for
	// due runs.
	DefaultSweepInterval = time.Second
	// DefaultSweepMaxBackoff bounds the sweeper's wait after store errors.
	DefaultSweepMaxBackoff = 30 * time.Second
	// MaxReplayRuns bounds the recorded runs of one Replay.
	MaxReplayRuns = 100
)

// Defaults of retention.
const (
	// DefaultRetention is how long a settled family is kept after its
	// last run's last change before the leader prunes it.
	DefaultRetention = 30 * 24 * time.Hour
	// DefaultPruneEvery is how often the leader prunes.
	DefaultPruneEvery = time.Minute
	// DefaultPruneBatch is how many families one prune transaction
	// deletes, and how many expired session keys.
	DefaultPruneBatch = store.DefaultPruneLimit
	// MaxPruneBatches bounds the batches of one pass of the leader's
	// pruning; what is left waits for the next pass.
	MaxPruneBatches = 10
)

// Defaults of hitch serve (server.Limits).
const (
	DefaultServerAddr               = "127.0.0.1:7077"
	DefaultServerMaxBody            = 1 << 20
	DefaultServerMaxHeader          = 64 << 10
	DefaultServerReadHeaderTimeout  = 10 * time.Second
	DefaultServerRequestTimeout     = 90 * time.Second
	DefaultServerMaxWait            = 60 * time.Second
	DefaultServerStreamsPerToken    = 32
	DefaultServerHeartbeat          = 15 * time.Second
	DefaultServerStreamPoll         = time.Second
	DefaultServerStreamWriteTimeout = 30 * time.Second
	DefaultServerFamilyStreamRuns   = 64
	DefaultServerRunsPage           = 50
	DefaultServerJournalPage        = 100
)

// Defaults of trigger bindings and their dispatcher (Config.Triggers,
// TriggerSpec); see hitchtype.
const (
	DefaultTriggerPoll        = hitchtype.DefaultTriggerPoll
	DefaultTriggerBatch       = hitchtype.DefaultTriggerBatch
	DefaultTriggerClaimTTL    = hitchtype.DefaultTriggerClaimTTL
	DefaultTriggersPerSession = hitchtype.DefaultTriggersPerSession
	DefaultTriggerMinInterval = hitchtype.DefaultTriggerMinInterval
	DefaultTriggerGrace       = hitchtype.DefaultTriggerGrace
	DefaultTriggerMaxRetry    = hitchtype.DefaultTriggerMaxRetry
)

// Defaults of hitch chaos (package chaos): a workload big enough to land
// faults inside steps, bounded so that it ends in minutes.
const (
	DefaultChaosRuns     = 300
	DefaultChaosKills    = 20
	DefaultChaosWorkers  = 3
	DefaultChaosDuration = 5 * time.Minute
	// DefaultChaosLeaseTTL is the workers' lease: short, so that a killed
	// or paused worker's runs are taken over within the workload.
	DefaultChaosLeaseTTL = time.Second
	MaxChaosRuns         = 100_000
	MaxChaosKills        = 10_000
	MaxChaosWorkers      = 64
	MaxChaosDuration     = 24 * time.Hour
)

// Default is one row of the defaults table.
type Default struct {
	Limit   string // what is bounded
	Setting string // where to change it
	Value   string
	Range   string
}

// Defaults is the one table of hitch's limits and their defaults.
var Defaults = []Default{
	{"model attempts per run (first call and every retry)", "Limits.ModelAttempts", "8", "1–10000"},
	{"final answers asked for, typed answers (2 = one corrective turn)", "Limits.AnswerAttempts", "2", "1–100"},
	{"first retry delay (doubles per failure, at most 64×)", "Limits.RetryDelay", "200ms", "1ms–1m"},
	{"provider retry-after honoured up to", "Limits.MaxRetryAfter", "10m", "0–1h"},
	{"model call timeout", "Limits.ModelTimeout", "600s", "1s–24h, or Infinite"},
	{"route: a model that failed with a class that moves on is passed over by the node's runs for", "route.Config.CoolDown (config: routes.<name>.cool_down)", "1m", "1s–24h, or off"},
	{"route: attempts in a row at one model before a failure that moves on sends the request to the next", "route.Member.Attempts (config: per_model.<model>.attempts)", "1", "1–100"},
	{"policy decision timeout", "Limits.PolicyTimeout", "5s", "1ms–1m"},
	{"tool body timeout", "Limits.ToolTimeout (per tool: tool.WithTimeout)", "60s", "1ms–24h, or Infinite"},
	{"tool bodies at once per run", "Limits.ToolConcurrency", "4", "1–64"},
	{"largest kept tool result", "Limits.MaxToolResult", "1 MiB", "1 B–64 MiB"},
	{"approval request waits for an answer", "Limits.ApprovalExpiry", "7 days", "1s–365 days, or Infinite"},
	{"approval proof lasts (approval.Static)", "approval.DefaultProofTTL", "5m", "Static.WithProofTTL"},
	{"sub-agent runs one run starts", "Limits.MaxChildren", "4", "1–999"},
	{"levels of sub-agents below a run", "Limits.MaxDepth", "1", "1–16"},
	{"compaction: turns kept verbatim (when a request nears 80% of Limits.ContextWindow)", "Limits.KeepTurns", "4", "1–1000; ContextWindow 0 (default) never compacts"},
	{"hook call (pre_generate, pre_tool, post_tool, post_turn)", "Limits.HookTimeout", "5s", "1ms–1m"},
	{"declared hooks: one attempt of a command or webhook", "config hooks[].timeout (declared.DefaultTimeout)", "5s", "1ms–1m"},
	{"declared hooks: a point's hooks together (the agent's hook timeout is raised to fit them, plus 1s)", "the sum of their timeouts and retries", "—", "up to 1m"},
	{"declared hooks: a command's standard output or a webhook's answer", "declared.MaxOutput", "1 MiB", "fixed; more is a failure"},
	{"declared hooks: webhook attempts at pre_generate, pre_tool, post_turn (post_tool: 1)", "declared.WebhookAttempts", "3, 100ms then 200ms apart", "fixed"},
	{"policy rule condition (when:) cost per evaluation, in CEL cost units", "policy.DefaultCostLimit", "1000000", "fixed; over it the call is denied"},
	{"command waits for a live runner", "Limits.CommandWait", "5s", "0–1m"},
	{"lease TTL", "Config.LeaseTTL", "30s", "10ms–10m"},
	{"lease renewal", "Config.LeaseTTL / 3", "10s", "a third of the TTL"},
	{"force-settle grace after cancel", "Config.ForceSettleGrace", "60s", "1s–1h"},
	{"cancel poll (requests from other processes)", "Config.CancelPoll", "1s", "10ms–1m"},
	{"runs in flight per node (driven at once; a run is claimed only with a slot free)", "Config.MaxRunners (config worker.max_runners, --max-runners)", "4096", "1–100000"},
	{"due runs one sweeper pass claims (so nodes share a backlog)", "Config.ClaimBatch", "64", "1–1000"},
	{"followers of a run: entries one may leave unread before it is cut (it resumes from its last entry)", "Config.FollowBuffer", "256", "1–100000"},
	{"followers of a run: their one reader reads the journal without a local commit every", "Config.FollowPoll", "1s", "10ms–1m"},
	{"hitch runs events -f on a local store: reads a journal another process appends to every", "Config.FollowPoll of the CLI's runtime", "200ms", "fixed"},
	{"sweeper: pause after a pass that claimed a full batch (other nodes claim meanwhile)", "DefaultClaimCooldown", "50ms", "fixed"},
	{"leader election: leadership lasts / re-elected every / trusted until before its end", "Config.LeaderTTL (Runtime.Lead)", "15s / 5s / 3s", "10ms–10m; a third / a fifth of it"},
	{"graceful stop: running tool bodies and model calls may finish for", "hitch worker --drain (Runtime.Close's ctx)", "30s", "any; a second signal cuts it short"},
	{"sweeper: looks for due runs every (and at once when the store notifies: PostgreSQL LISTEN/NOTIFY, SQLite the writes of its own process)", "hitch worker --poll (Runtime.Sweep's interval)", "1s", "more than 0"},
	{"sweeper: wait after store errors (doubling from the interval)", "DefaultSweepMaxBackoff", "30s", "fixed"},
	{"hitch chaos: runs started", "hitch chaos --runs", "300", "1–100000"},
	{"hitch chaos: faults injected (SIGKILL, SIGSTOP past a lease, connection cuts)", "hitch chaos --kills", "20", "0–10000"},
	{"hitch chaos: worker processes", "hitch chaos --workers", "3", "1–64"},
	{"hitch chaos: the whole workload, drain included", "hitch chaos --duration", "5m0s", "up to 24h"},
	{"hitch chaos: the workers' lease (a pause lasts 2–3 of it)", "hitch chaos --lease-ttl", "1s", "100ms–1m"},
	{"hitch chaos: violations listed (all are counted)", "chaos.DefaultMaxViolations", "100", "fixed"},
	{"run id: letters, digits and . _ : -, not . or ..", "hitch.WithID (MaxRunIDBytes)", "1–128 bytes", "fixed"},
	{"triggers: dispatcher looks for due occurrences at least every", "Config.Triggers.Poll", "1s", "1ms–1m"},
	{"triggers: occurrences claimed per pass", "Config.Triggers.Batch", "32", "1–1000"},
	{"triggers: a claimed occurrence is held by its node for", "Config.Triggers.ClaimTTL", "30s", "10ms–1h"},
	{"triggers: bindings a session registers through its tools (not done)", "Config.Triggers.MaxPerSession", "16", "1–1000"},
	{"triggers: shortest gap between occurrences of a tool's binding", "Config.Triggers.MinInterval", "5m", "1s–24h"},
	{"triggers: an occurrence later than this is missed (skip or once)", "TriggerSpec.Grace (config: grace)", "1m", "1s–24h"},
	{"triggers: wait before a failed dispatch is retried (doubling from the poll)", "DefaultTriggerMaxRetry", "10m", "fixed"},
	{"triggers: id of a binding", "TriggerSpec.ID (MaxTriggerIDBytes)", "1–64 bytes", "fixed"},
	{"triggers: schedule_wake sets a wake at most this far ahead", "MaxWakeAhead", "366 days", "fixed"},
	{"triggers: input or text of a binding", "MaxTriggerTextBytes", "32 KiB", "fixed"},
	{"journal entries read per page", "store.DefaultReadLimit", "1000", ""},
	{"model requests with their context accounts in one GET /v1/runs/{id}/context (the latest)", "server.MaxContextRequests", "100", "fixed"},
	{"runs list: title kept from a run's input / text filter", "store.MaxTitleRunes / MaxTextRunes", "200 / 200 characters", "fixed"},
	{"approval requests listed per page", "PendingApprovalsParams.Limit", "100", "1–1000"},
	{"approval requests: waiting runs one page reads at most (a page may then end short, with a cursor)", "Runtime.PendingApprovals", "1000", "fixed"},
	{"runs of one family read for its usage, cost or approvals", "Runtime.FamilyUsage / FamilyCost", "100000", "fixed"},
	{"run counts filtered beyond tenant and status: runs counted per status (then \"at least\")", "store.MaxFilteredCount", "10000", "fixed"},
	{"sandbox: processes starting at once per process (commands, bwrap probes)", "local.MaxStarting", "16", "fixed"},
	{"session message text", "Config.Sessions.MaxMessageBytes", "256 KiB", "1 B–16 MiB"},
	{"session send idempotency key remembered", "Config.Sessions.IdempotencyTTL", "24h", "1s–720h"},
	{"SQLite: appends committed in one transaction", "sqlite.WithBatchSize", "64", "1–1024"},
	{"SQLite: queued writes", "sqlite.WithQueueSize", "1024", "1–65536"},
	{"SQLite: busy timeout", "sqlite.WithBusyTimeout", "5s", "0–10m"},
	{"PostgreSQL: wake poll interval (the fallback to LISTEN/NOTIFY)", "postgres.WithPollInterval", "1s", "1ms–1h"},
	{"PostgreSQL: connections per store (plus one for LISTEN)", "postgres.WithMaxConns", "max(4, CPUs)", "1–1000"},
	{"read tool: lines / bytes per call", "builtin.ReadMaxLines / ReadMaxBytes", "2000 lines / 50 KiB", "fixed"},
	{"bash tool: output kept (the last lines)", "builtin.BashMaxLines / BashMaxBytes", "2000 lines / 50 KiB", "fixed"},
	{"bash tool: command timeout", "bash's timeout argument", "2m", "up to 10m; a timeout exits 124"},
	{"grep tool: matches / characters a line", "builtin.GrepMaxMatches / GrepMaxLineChars", "100 / 500", "fixed"},
	{"glob tool: paths", "builtin.GlobMaxPaths", "1000", "fixed"},
	{"MCP server: connect (start, handshake, first tool list)", "mcp.Server.ConnectTimeout", "30s", "1ms–10m"},
	{"MCP server: one call", "mcp.Server.CallTimeout (per tool: Tools[name].Timeout)", "60s", "1ms–24h, or Infinite"},
	{"MCP server: text kept from one call", "mcp.Server.MaxResult", "1 MiB", "1 B–64 MiB"},
	{"MCP server: tools listed", "mcp.MaxTools", "1000", "fixed"},
	{"MCP server: reconnect backoff (doubling)", "mcp.ReconnectMinDelay / ReconnectMaxDelay", "100ms / 30s", "fixed"},
	{"MCP tool annotated read-only or idempotent: attempts", "mcp.DefaultReplay", "3", "fixed"},
	{"hitch mcp: one wait_run call", "mcpserver.Options.MaxWait (hitch mcp --max-wait)", "60s", "more than 0"},
	{"secret values: shortest redacted", "secret.MinLen", "8 bytes", "fixed"},
	{"secret values per redactor", "secret.MaxValues", "1024", "fixed"},
	{"telemetry: runs assembled at once", "telemetry.MaxOpenRuns", "10000", "fixed"},
	{"telemetry: events on one run's span", "telemetry.MaxRunEvents", "128", "fixed"},
	{"telemetry: OTLP metric export interval", "telemetry.MetricInterval", "30s", "fixed"},
	{"telemetry: one store reading serves hitch's gauges for", "telemetry.MetricsOptions.CacheFor (hitch serve / worker --metrics-cache)", "5s", "0 (every collection reads) – 1h"},
	{"telemetry: waiting runs one gauge reading looks at", "telemetry.MaxMetricsScan", "1000", "fixed"},
	{"telemetry: one gauge reading of the store", "telemetry.MetricsReadTimeout", "5s", "fixed"},
	{"secret file read (config secrets: file:)", "config secrets.NAME.file", "64 KiB", "fixed"},
	{"cron: a schedule must fire within", "cron.MaxYears", "8 years", "fixed"},
	{"hitch serve: listen address", "hitch serve --addr", "127.0.0.1:7077", "a non-loopback address needs tokens"},
	{"hitch serve: request body", "server.Limits.MaxBodyBytes", "1 MiB", "1 B or more"},
	{"hitch serve: request headers", "server.Limits.MaxHeaderBytes", "64 KiB", "1 KiB or more"},
	{"hitch serve: reading request headers", "server.Limits.ReadHeaderTimeout", "10s", "more than 0"},
	{"hitch serve: one request (event streams exempt)", "server.Limits.RequestTimeout", "90s", "more than MaxWait"},
	{"hitch serve: one long-poll (runs/{id}/wait)", "server.Limits.MaxWait", "60s", "more than 0"},
	{"hitch serve: event streams open at once per token", "server.Limits.StreamsPerToken (hitch serve --streams-per-token)", "32", "1 or more"},
	{"hitch serve: heartbeat comment on an idle event stream", "server.Limits.Heartbeat", "15s", "more than 0"},
	{"hitch serve: event stream reads the store without a local wake every", "server.Limits.StreamPoll", "1s", "more than 0"},
	{"hitch serve: a stream's client must take a page of events within", "server.Limits.StreamWriteTimeout", "30s", "more than 0"},
	{"hitch serve: runs one family stream follows", "server.Limits.FamilyStreamRuns", "64", "1 or more"},
	{"hitch serve: runs listed per page", "GET /v1/runs ?limit", "50", "1–1000"},
	{"hitch serve: journal entries per page (and per stream read)", "GET /v1/runs/{id}/journal ?limit", "100", "1–1000"},
	{"armed wake (await_event) or pending external call: longest wait from its start", "Limits.MaxWait", "7 days", "1s–365 days"},
	{"pending external call waits for its result (per tool: tool.WithTimeout)", "Limits.PendingCallTimeout", "24h", "1s–Limits.MaxWait"},
	{"awaited event name / data delivered with it", "hitchtype.MaxEventNameBytes / MaxWakeDataBytes", "128 B / 64 KiB", "fixed"},
	{"retention: a settled family is kept after its last change for", "Config.Retention (hitch prune --older-than)", "30 days", "1m–100 years, or Infinite"},
	{"retention: the leader prunes every", "Config.PruneEvery", "1m", "10ms–24h"},
	{"retention: families (and expired session keys) per prune transaction", "Config.PruneBatch (hitch prune --batch)", "100", "1–1000"},
	{"retention: prune transactions per pass of the leader", "MaxPruneBatches", "10", "fixed"},
	{"SQLite: free pages given back to the file system per prune", "incremental_vacuum", "1024 (4 MiB)", "fixed; new files only (docs/retention.md)"},
	{"console: journal entries a run page shows, and each older load adds", "web.JournalPage", "200", "fixed"},
	{"console: a sign-in lasts", "web.Config.SessionMaxAge", "12h", "more than 0"},
	{"console: the runs list's first page reads itself again every", "web.RunsRefresh", "2s", "fixed (only while the tab is shown)"},
	{"console: text of one journal entry shown", "web.MaxShown", "16 KiB", "fixed (the API has it all)"},
	{"console: a live transcript's browser must take a write within", "web.LiveWriteTimeout", "30s", "fixed"},
	{"console: sessions read to list them newest first", "web.SessionsRead", "1000", "fixed (the API lists more by id)"},
	{"console: queued messages a session page lists", "web.QueueShown", "100", "fixed (more are counted)"},
	{"console: steps of the running turn a session page opens with", "web.TurnTail", "20", "fixed (its run page has them all)"},
	{"console: elements a run page's live transcript keeps (older entries are read again on demand)", "web.LiveNodes", "3000", "fixed"},
	{"console: pending approvals the navigation counts", "web.NavApprovals", "100", "fixed (more shows as 100+)"},
	{"console: the name an approval was last answered with is remembered for", "web.ApproverKept", "720h (30 days)", "fixed (never the secret)"},
	{"console: newer pages an older page of the runs list links back through", "web.RunsTrail", "20", "fixed (and always the newest)"},
	{"console timeline: runs of a family / calls of a run drawn", "web.TimelineRuns / web.TimelineCalls", "50 / 200", "fixed (the rest is said to be left out)"},
	{"console timeline: journal entries read of one run, from its start", "web.TimelineEntries", "5000", "fixed"},
	{"cancel: who asked / why, each", "store.MaxCancelNoteBytes", "4 KiB", "fixed"},
	{"run metadata, as JSON", "hitch.MaxMetadataBytes", "16 KiB", "fixed"},
	{"replay: recorded runs one replay re-runs (a filter's page)", "hitch.MaxReplayRuns (hitch replay --limit)", "100", "1–100"},
	{"runs list: outcome reasons one filter names", "store.MaxReasons", "16", "fixed"},
	{"hitch serve: sessions listed per page", "GET /v1/sessions ?limit", "50", "1–1000"},
	{"Go client: event stream reconnect wait (doubling)", "client.DefaultRetryMin / DefaultRetryMax (client.WithRetry)", "100ms / 5s", "more than 0"},
	{"Go client: reconnects in a row without an event before a stream gives up", "client.DefaultRetries", "10", "1 or more"},
	{"Go client: one request that is not a stream", "client.DefaultTimeout (client.WithTimeout)", "2m0s", "more than 0"},
	{"Go client: one JSON answer / one event read", "client.MaxResponseBytes / MaxEventBytes", "64 MiB / 16 MiB", "fixed"},
	{"doctor: commits the latency probe times", "doctor.Config.Commits", "100", "1–1000"},
	{"doctor: one check (an MCP server's by its connect timeout when longer)", "doctor.Config.Timeout", "10s", "more than 0"},
}

// DefaultsMarkdown renders Defaults as a markdown table.
func DefaultsMarkdown() string {
	var b strings.Builder
	b.WriteString("| limit | setting | default | range |\n| --- | --- | --- | --- |\n")
	for _, d := range Defaults {
		fmt.Fprintf(&b, "| %s | `%s` | %s | %s |\n", d.Limit, d.Setting, d.Value, d.Range)
	}
	return b.String()
}
