package cron

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func utc(s string) time.Time {
	at, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return at
}

// run lists the first n occurrences after from.
func run(t *testing.T, expr string, loc *time.Location, from time.Time, n int) []string {
	t.Helper()
	s, err := Parse(expr, loc)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	at := from
	for range n {
		at = s.Next(at)
		if at.IsZero() {
			t.Fatalf("%s: ran out after %v", expr, out)
		}
		out = append(out, at.Format(time.RFC3339))
	}
	return out
}

func TestDaylightSaving(t *testing.T) {
	t.Parallel()
	ny, berlin := zone(t, "America/New_York"), zone(t, "Europe/Berlin")
	cases := []struct {
		name, expr string
		loc        *time.Location
		from       string
		want       []string
	}{
		// New York springs forward at 02:00 EST (07:00Z) on 14 March 2027.
		{"fixed time in the skipped hour fires at the change", "30 2 * * *", ny, "2027-03-13T12:00:00Z",
			[]string{"2027-03-14T07:00:00Z", "2027-03-15T06:30:00Z"}},
		{"every half hour keeps its rhythm across the gap", "*/30 * * * *", ny, "2027-03-14T06:00:00Z",
			[]string{"2027-03-14T06:30:00Z", "2027-03-14T07:00:00Z", "2027-03-14T07:30:00Z"}},
		// New York falls back at 02:00 EDT (06:00Z) on 7 November 2027.
		{"fixed time in the repeated hour fires once", "30 1 * * *", ny, "2027-11-06T12:00:00Z",
			[]string{"2027-11-07T05:30:00Z", "2027-11-08T06:30:00Z"}},
		{"every half hour runs through the repeated hour", "*/30 * * * *", ny, "2027-11-07T04:45:00Z",
			[]string{"2027-11-07T05:00:00Z", "2027-11-07T05:30:00Z", "2027-11-07T06:00:00Z", "2027-11-07T06:30:00Z", "2027-11-07T07:00:00Z"}},
		// Berlin springs forward at 01:00Z on 28 March and falls back at
		// 01:00Z on 31 October 2027.
		{"Berlin spring forward", "30 2 * * *", berlin, "2027-03-27T12:00:00Z",
			[]string{"2027-03-28T01:00:00Z", "2027-03-29T00:30:00Z"}},
		{"Berlin fall back", "30 2 * * *", berlin, "2027-10-30T12:00:00Z",
			[]string{"2027-10-31T00:30:00Z", "2027-11-01T01:30:00Z"}},
		{"Berlin fall back, a time just before the change", "59 1 * * *", berlin, "2027-10-30T12:00:00Z",
			[]string{"2027-10-30T23:59:00Z", "2027-11-01T00:59:00Z"}},
		// Leap days.
		{"29 February", "0 0 29 2 *", nil, "2027-01-01T00:00:00Z",
			[]string{"2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"}},
		{"29 February in a zone", "0 9 29 feb *", berlin, "2028-02-28T00:00:00Z",
			[]string{"2028-02-29T08:00:00Z", "2032-02-29T08:00:00Z"}},
		{"last day of February, leap or not", "0 12 28,29 2 *", nil, "2027-02-27T00:00:00Z",
			[]string{"2027-02-28T12:00:00Z", "2028-02-28T12:00:00Z", "2028-02-29T12:00:00Z"}},
		// Day fields: either one matches when both are set.
		{"13th or a Friday", "0 0 13 * fri", nil, "2027-08-01T00:00:00Z",
			[]string{"2027-08-06T00:00:00Z", "2027-08-13T00:00:00Z", "2027-08-20T00:00:00Z"}},
		{"weekdays at nine in New York", "0 9 * * 1-5", ny, "2027-03-12T15:00:00Z",
			[]string{"2027-03-15T13:00:00Z", "2027-03-16T13:00:00Z"}},
		{"Sunday as 7", "0 0 * * 7", nil, "2027-01-01T00:00:00Z", []string{"2027-01-03T00:00:00Z"}},
		{"macro", "@monthly", nil, "2027-01-15T00:00:00Z", []string{"2027-02-01T00:00:00Z", "2027-03-01T00:00:00Z"}},
		// The southern hemisphere: Sydney springs forward at 16:00Z on 2
		// October and falls back at 16:00Z on 3 April 2027.
		{"Sydney spring forward in October", "30 2 * * *", zone(t, "Australia/Sydney"), "2027-10-02T00:00:00Z",
			[]string{"2027-10-02T16:00:00Z", "2027-10-03T15:30:00Z"}},
		{"Sydney fall back in April", "30 2 * * *", zone(t, "Australia/Sydney"), "2027-04-03T00:00:00Z",
			[]string{"2027-04-03T15:30:00Z", "2027-04-04T16:30:00Z"}},
		// Lord Howe Island moves its clocks by half an hour: 02:00 becomes
		// 02:30 at 15:30Z on 2 October; 02:00 becomes 01:30 at 15:00Z on 3
		// April 2027.
		{"Lord Howe: a time in the skipped half hour", "15 2 * * *", zone(t, "Australia/Lord_Howe"), "2027-10-02T00:00:00Z",
			[]string{"2027-10-02T15:30:00Z", "2027-10-03T15:15:00Z"}},
		{"Lord Howe: a time in the repeated half hour", "45 1 * * *", zone(t, "Australia/Lord_Howe"), "2027-04-03T00:00:00Z",
			[]string{"2027-04-03T14:45:00Z", "2027-04-04T15:15:00Z"}},
		{"Lord Howe: every quarter hour keeps its rhythm", "*/15 * * * *", zone(t, "Australia/Lord_Howe"), "2027-10-02T15:00:00Z",
			[]string{"2027-10-02T15:15:00Z", "2027-10-02T15:30:00Z", "2027-10-02T15:45:00Z"}},
		// A leap day or a Monday, in February only: the next Monday in
		// February is in 2029.
		{"29 February or a Monday, in Berlin", "0 12 29 2 mon", zone(t, "Europe/Berlin"), "2028-02-26T00:00:00Z",
			[]string{"2028-02-28T11:00:00Z", "2028-02-29T11:00:00Z", "2029-02-05T11:00:00Z"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := run(t, c.expr, c.loc, utc(c.from), len(c.want))
			if strings.Join(got, " ") != strings.Join(c.want, " ") {
				t.Fatalf("%s from %s:\n got %v\nwant %v", c.expr, c.from, got, c.want)
			}
		})
	}
}

// TestYearCounts checks whole years: a daily schedule fires once a day
// whatever the clocks do, an hourly one once every real hour.
func TestYearCounts(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "UTC"} {
		loc := zone(t, name)
		for _, c := range []struct {
			expr string
			want int
		}{{"30 2 * * *", 365}, {"0 * * * *", 8760}, {"0 0 * * *", 365}} {
			s, err := Parse(c.expr, loc)
			if err != nil {
				t.Fatal(err)
			}
			from := time.Date(2027, 1, 1, 0, 0, 0, 0, loc).Add(-time.Second)
			to := time.Date(2028, 1, 1, 0, 0, 0, 0, loc)
			n := 0
			for at := s.Next(from); at.Before(to); at = s.Next(at) {
				n++
			}
			want := c.want
			if name == "Australia/Lord_Howe" && c.expr == "0 * * * *" {
				// Lord Howe moves its clocks by half an hour: the
				// skipped half hour holds 02:00, which does not exist
				// and, the hour field being '*', is not run; the
				// repeated half hour holds no :00 to run twice.
				want = 8759
			}
			if n != want {
				t.Errorf("%s in %s: %d occurrences in 2027, want %d", c.expr, name, n, want)
			}
		}
	}
}

func TestNextIsStrictlyLater(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	exprs := []string{"* * * * *", "*/7 * * * *", "15 */3 * * *", "0 1-3 * * *", "30 2 * * 0", "0 0 1,15 * *"}
	zones := []string{"America/New_York", "Europe/Berlin", "Australia/Lord_Howe", "Asia/Kolkata", "UTC"}
	for range 400 {
		loc := zone(t, zones[rng.IntN(len(zones))])
		expr := exprs[rng.IntN(len(exprs))]
		s, err := Parse(expr, loc)
		if err != nil {
			t.Fatal(err)
		}
		at := time.Date(2027, time.Month(1+rng.IntN(12)), 1+rng.IntN(28), rng.IntN(24), rng.IntN(60), 0, 0, time.UTC)
		for range 50 {
			next := s.Next(at)
			if !next.After(at) {
				t.Fatalf("%s in %s: Next(%v) = %v, not later", expr, loc, at, next)
			}
			if next.Sub(at) > 32*24*time.Hour {
				t.Fatalf("%s in %s: Next(%v) = %v, too far", expr, loc, at, next)
			}
			at = next
		}
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	cases := []struct{ expr, want string }{
		{"61 * * * *", `minute: "61": want 0–59`},
		{"* 24 * * *", `hour: "24": want 0–23`},
		{"* * 0 * *", `day of month: "0": want 1–31`},
		{"* * * 13 *", `month: "13": want 1–12 or a name such as jan`},
		{"* * * * 8", `day of week: "8": want 0–7`},
		{"*/0 * * * *", `minute: step "0"`},
		{"5-1 * * * *", `range "5-1" runs backwards`},
		{"* * * *", "want 5 fields"},
		{"@sometimes", "want 5 fields"},
		{"0 0 30 2 *", "no day matches"},
		{"x * * * y", `minute: "x"`},
	}
	for _, c := range cases {
		_, err := Parse(c.expr, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) = %v, want an error with %q", c.expr, err, c.want)
		}
	}
	// Every field's problem at once.
	_, err := Parse("99 99 * * *", nil)
	if err == nil || !strings.Contains(err.Error(), "minute") || !strings.Contains(err.Error(), "hour") {
		t.Errorf("want both fields named, got %v", err)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"* * * * *", "*/5 1-3,7 1 jan-mar mon", "@daily", "0 0 29 2 *"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		s, err := Parse(expr, time.UTC)
		if err != nil {
			return
		}
		from := time.Date(2030, 6, 1, 0, 0, 0, 0, time.UTC)
		if next := s.Next(from); !next.After(from) {
			t.Fatalf("%q parsed but Next(%v) = %v", expr, from, next)
		}
	})
}

func BenchmarkNext(b *testing.B) {
	ny, _ := time.LoadLocation("America/New_York")
	s, err := Parse("*/5 * * * *", ny)
	if err != nil {
		b.Fatal(err)
	}
	at := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	for b.Loop() {
		at = s.Next(at)
	}
}
