package doctor

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hitch-dev/hitch/store"
)

// Thresholds of the store checks (docs/operations.md).
const (
	// SlowCommit is the median commit time past which commits warn: a
	// step of a run waits for at least one.
	SlowCommit = 50 * time.Millisecond
	// ClockOffsetWarning is the offset between this node's clock and the
	// store's past which the clock check warns.
	ClockOffsetWarning = time.Second
	// LowDisk warns, and VeryLowDisk fails, when the store's file system
	// has less free space.
	LowDisk     = 1 << 30
	VeryLowDisk = 100 << 20
)

// checkStore checks the store: reachable, schema, durability, commit
// latency, clock, nodes and disk.
func checkStore(ctx context.Context, cfg Config) []Check {
	if cfg.Store == nil {
		out := []Check{{Name: "store", Verdict: Failure, Detail: "cannot open the store: " + cfg.StoreErr.Error(),
			Fix: "check the store setting (--db, $HITCH_DATABASE_URL or the config's store) and that this node can reach it"}}
		var sv *store.SchemaVersionError
		if errors.As(cfg.StoreErr, &sv) {
			out[0] = Check{Name: "store", Verdict: OK, Detail: "the store answers"}
			out = append(out, Check{Name: "schema", Verdict: Failure,
				Detail: fmt.Sprintf("the store's schema is at version %d, newer than this build knows (%d): a newer hitch migrated it", sv.Have, sv.Build),
				Fix:    "run the same hitch version as the node that migrated the store (hitch version shows it); never run an older one on it"})
		}
		return out
	}
	if _, err := within(ctx, cfg.Timeout, cfg.Store.Now); err != nil {
		return []Check{{Name: "store", Verdict: Failure, Detail: "the store does not answer: " + err.Error(),
			Fix: "check that the database is up and that this node can reach it"}}
	}
	out := []Check{{Name: "store", Verdict: OK, Detail: "the store answers"}}
	d, ok := cfg.Store.(store.Diagnoser)
	if !ok {
		return append(out, Check{Name: "durability", Verdict: Warning, Detail: fmt.Sprintf("the store (%T) cannot report on itself", cfg.Store),
			Fix: "use the sqlite or postgres store, or check its durability by hand"})
	}
	diag, err := within(ctx, cfg.Timeout, d.DiagnoseSettings)
	if err != nil {
		return append(out, Check{Name: "schema", Verdict: Failure, Detail: "cannot read the store's settings: " + err.Error(),
			Fix: "check that this node's database user may read the store's schema"})
	}
	out = append(out, checkSchema(diag), checkDurability(diag))
	out = append(out, checkCommits(ctx, cfg, d, diag))
	out = append(out, checkClock(ctx, cfg))
	out = append(out, checkNodes(ctx, cfg, d))
	return append(out, checkDisk(diag))
}

func checkSchema(d store.Diagnosis) Check {
	c := Check{Name: "schema", Verdict: OK, Detail: fmt.Sprintf("version %d, as this build", d.Schema)}
	switch {
	case d.Schema > d.Build:
		c.Verdict, c.Detail = Failure, fmt.Sprintf("the store's schema is at version %d, newer than this build knows (%d)", d.Schema, d.Build)
		c.Fix = "run the same hitch version as the node that migrated the store; never run an older one on it"
	case d.Schema < d.Build:
		c.Verdict, c.Detail = Failure, fmt.Sprintf("the store's schema is at version %d, older than this build needs (%d)", d.Schema, d.Build)
		c.Fix = "run hitch migrate once with this build"
	}
	return c
}

// finding is one part of a check that holds several.
type finding struct {
	verdict     Verdict
	detail, fix string
}

// fold makes one check of its findings: the worst verdict, every
// detail, and the fixes of the findings that are not OK.
func fold(name string, fs []finding) Check {
	c := Check{Name: name, Verdict: OK}
	var details, fixes []string
	for _, f := range fs {
		c.Verdict = worse(c.Verdict, f.verdict)
		details = append(details, f.detail)
		if f.verdict != OK && f.fix != "" {
			fixes = append(fixes, f.fix)
		}
	}
	c.Detail, c.Fix = strings.Join(details, "; "), strings.Join(fixes, "; ")
	return c
}

// pgBadSettings are the PostgreSQL settings that put acknowledged commits
// at risk: each one's risky value, the verdict it earns, why and the fix.
var pgBadSettings = []struct {
	name, bad string
	verdict   Verdict
	why, fix  string
}{
	{"synchronous_commit", "off", Warning, "a crash of the database may lose commits it acknowledged, and with them a journaled effect",
		"ALTER DATABASE … SET synchronous_commit = on (or ALTER ROLE, or in postgresql.conf), and reconnect"},
	{"fsync", "off", Failure, "a crash of the database server may damage it beyond repair",
		"set fsync = on in postgresql.conf and reload"},
	{"full_page_writes", "off", Warning, "a crash mid-write may leave torn pages",
		"set full_page_writes = on in postgresql.conf, unless the file system never tears a page"},
	{"wal_level", "minimal", Warning, "no replica or point-in-time recovery can be made from this server",
		"set wal_level = replica in postgresql.conf and restart, then archive the WAL or run a standby"},
}

func checkDurability(d store.Diagnosis) Check {
	var fs []finding
	set := d.Settings
	switch d.Driver {
	case "sqlite":
		switch s := set["synchronous"]; s {
		case "FULL", "EXTRA":
			fs = append(fs, finding{OK, "synchronous=" + s, ""})
		case "NORMAL":
			fs = append(fs, finding{Warning, "synchronous=NORMAL: a power loss or an operating system crash may lose the last commits",
				"open the store with the default durability (sqlite.SyncFull)"})
		default:
			fs = append(fs, finding{Warning, "synchronous=" + s + ": commits do not wait for the disk, so a power loss may lose them or damage the file",
				"open the store with the default durability (sqlite.SyncFull)"})
		}
		if m := set["journal_mode"]; m == "wal" {
			fs = append(fs, finding{OK, "journal_mode=wal", ""})
		} else {
			fs = append(fs, finding{Failure, "journal_mode=" + m + ": hitch runs its stores in WAL mode", "open the store with hitch, which sets WAL mode"})
		}
		if d.Path != "" {
			fs = append(fs, fileSystem(filepath.Dir(d.Path)))
		}
	case "postgres":
		for _, b := range pgBadSettings {
			if v := set[b.name]; v == b.bad {
				fs = append(fs, finding{b.verdict, b.name + "=" + v + ": " + b.why, b.fix})
			} else {
				fs = append(fs, finding{OK, b.name + "=" + v, ""})
			}
		}
	default:
		for _, k := range slices.Sorted(mapKeys(set)) {
			fs = append(fs, finding{OK, k + "=" + set[k], ""})
		}
	}
	return fold("durability", fs)
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func checkCommits(ctx context.Context, cfg Config, d store.Diagnoser, diag store.Diagnosis) Check {
	took, err := within(ctx, cfg.Timeout, func(ctx context.Context) ([]time.Duration, error) { return d.DiagnoseCommits(ctx, cfg.Commits) })
	if err != nil {
		return Check{Name: "commits", Verdict: Warning, Detail: "cannot time commits: " + err.Error(),
			Fix: "let this node write beside the store (a SQLite store's directory) or create a table in its schema (PostgreSQL)"}
	}
	slices.Sort(took)
	p50, p99 := percentile(took, 50), percentile(took, 99)
	c := Check{Name: "commits", Verdict: OK, Detail: fmt.Sprintf("%d commits: p50 %s, p99 %s", len(took), round(p50), round(p99))}
	if p50 > SlowCommit {
		c.Verdict = Warning
		c.Detail += fmt.Sprintf(": slower than %s, and every step of a run waits for one", SlowCommit)
		c.Fix = "put the store on a faster disk"
		if diag.Driver == "postgres" {
			c.Fix = "bring the database closer to the nodes, or put its WAL on a faster disk"
		}
	}
	return c
}

// percentile returns the p-th percentile of sorted durations (nearest
// rank).
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100
	return sorted[max(i-1, 0)]
}

func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

func checkClock(ctx context.Context, cfg Config) Check {
	// The store's clock is read between two readings of this node's, so
	// the time the store took to answer does not count as offset.
	before := cfg.Now()
	at, err := within(ctx, cfg.Timeout, cfg.Store.Now)
	after := cfg.Now()
	if err != nil {
		return Check{Name: "clock", Verdict: Warning, Detail: "cannot read the store's clock: " + err.Error(), Fix: "check that the store answers"}
	}
	off := at.Sub(before.Add(after.Sub(before) / 2))
	c := Check{Name: "clock", Verdict: OK, Detail: fmt.Sprintf("the store's clock is %s from this node's (read in %s)", signed(off), round(after.Sub(before)))}
	if off.Abs() > ClockOffsetWarning {
		c.Verdict = Warning
		c.Fix = "run NTP (chrony, systemd-timesyncd) on this node and on the database server; deadlines follow the store's clock, but logs and timestamps from this node will disagree with it"
	}
	return c
}

func signed(d time.Duration) string {
	if d < 0 {
		return "-" + round(-d).String()
	}
	return "+" + round(d).String()
}

func checkNodes(ctx context.Context, cfg Config, d store.Diagnoser) Check {
	n, err := within(ctx, cfg.Timeout, d.DiagnoseNodes)
	if err != nil {
		return Check{Name: "nodes", Verdict: Warning, Detail: "cannot list the nodes: " + err.Error(), Fix: "check that the store answers"}
	}
	var parts []string
	if len(n.Holders) == 0 {
		parts = append(parts, "no node holds a lease")
	} else {
		hs := make([]string, len(n.Holders))
		for i, h := range n.Holders {
			hs[i] = fmt.Sprintf("%s (%d runs)", h.Node, h.Runs)
		}
		parts = append(parts, fmt.Sprintf("%d nodes hold leases: %s", len(n.Holders), strings.Join(hs, ", ")))
	}
	if len(n.Leaders) == 0 {
		parts = append(parts, "no node leads")
	}
	for _, l := range n.Leaders {
		parts = append(parts, fmt.Sprintf("%s leads %s", l.LeaderID, l.Name))
	}
	c := Check{Name: "nodes", Verdict: OK, Detail: strings.Join(parts, "; ")}
	if g, ok := cfg.Store.(store.GaugeReader); ok && len(n.Holders) == 0 && len(n.Leaders) == 0 {
		due, err := within(ctx, cfg.Timeout, g.RunsDue)
		if err == nil && due > 0 {
			c.Verdict = Warning
			c.Detail += fmt.Sprintf("; %d runs are due and no node is alive to drive them", due)
			c.Fix = "start hitch worker (or hitch serve) on at least one node"
		}
	}
	return c
}

func checkDisk(d store.Diagnosis) Check {
	if d.Path == "" {
		return Check{Name: "disk", Verdict: OK, Detail: "the store is on the database server's disk: watch its free space there"}
	}
	dir := filepath.Dir(d.Path)
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	free, total, err := diskSpace(dir)
	if err != nil {
		return Check{Name: "disk", Verdict: Warning, Detail: "cannot read the free space of " + dir + ": " + err.Error(),
			Fix: "check the free space under the store by hand"}
	}
	c := Check{Name: "disk", Verdict: OK, Detail: fmt.Sprintf("%s free of %s under %s", bytes(free), bytes(total), dir)}
	switch {
	case free < VeryLowDisk:
		c.Verdict, c.Fix = Failure, "free space under the store now: a full disk refuses every commit, and every run stops"
	case free < LowDisk:
		c.Verdict, c.Fix = Warning, "free space under the store, or prune settled runs sooner (retention)"
	}
	return c
}

// bytes spells a size in binary units.
func bytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}
