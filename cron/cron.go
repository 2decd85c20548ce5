// Package cron parses cron schedules and finds their occurrences, in UTC or
// in an IANA time zone, correctly across daylight-saving changes.
//
// A schedule has five fields — minute, hour, day of month, month, day of
// week — each a '*', a number or name, a range "a-b", a step "*/n" or
// "a-b/n", or a comma-separated list of those; or one of @hourly, @daily
// (@midnight), @weekly, @monthly, @yearly (@annually). Months and days of
// the week take their English three-letter names; Sunday is 0 or 7. When
// both day fields are restricted, a day matching either one matches (as in
// every cron since Vixie's).
//
// Daylight saving follows Vixie cron, so that no occurrence is lost or
// doubled by a clock change:
//
//   - A schedule with a fixed hour names wall-clock times. One that falls in
//     the hour skipped when clocks go forward fires once, at the moment of
//     the change; one that falls in the hour repeated when clocks go back
//     fires once, the first time that wall-clock time comes.
//   - A schedule whose hour field is '*' keeps its rhythm instead: in the
//     skipped hour its times do not exist and are not run, in the repeated
//     hour each time runs as it comes, twice.
package cron

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // zones resolve on machines without a zone database
)

// MaxYears bounds the search for an occurrence: a schedule with none in this
// many years (30 February, say) is refused by Parse.
const MaxYears = 8

// Schedule is a parsed cron schedule in a time zone. It is a value, safe for
// concurrent use.
type Schedule struct {
	expr      string
	loc       *time.Location
	minute    uint64 // bit i: minute i
	hour      uint64
	dom       uint64 // bit d: day d of the month, 1–31
	month     uint64 // bit m: month m, 1–12
	dow       uint64 // bit d: weekday d, 0 (Sunday)–6
	domStar   bool
	dowStar   bool
	hourStar  bool
	hourList  []int
	minuteLst []int
}

var macros = map[string]string{
	"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
	"@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}

var (
	monthNames = []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}
	dayNames   = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}
)

// Parse parses a schedule for the zone loc (nil means UTC). Every problem is
// reported at once, each naming its field.
func Parse(expr string, loc *time.Location) (Schedule, error) {
	if loc == nil {
		loc = time.UTC
	}
	s := Schedule{expr: strings.TrimSpace(expr), loc: loc}
	spec := s.expr
	if m, ok := macros[strings.ToLower(spec)]; ok {
		spec = m
	}
	f := strings.Fields(spec)
	if len(f) != 5 {
		return Schedule{}, fmt.Errorf("cron %q: want 5 fields (minute hour day-of-month month day-of-week) or a macro such as @daily, got %d fields", expr, len(f))
	}
	var errs []string
	field := func(name, text string, lo, hi int, names []string, nameBase int) (uint64, bool) {
		set, star, err := parseField(text, lo, hi, names, nameBase)
		if err != nil {
			errs = append(errs, name+": "+err.Error())
		}
		return set, star
	}
	s.minute, _ = field("minute", f[0], 0, 59, nil, 0)
	s.hour, s.hourStar = field("hour", f[1], 0, 23, nil, 0)
	s.dom, s.domStar = field("day of month", f[2], 1, 31, nil, 0)
	s.month, _ = field("month", f[3], 1, 12, monthNames, 1)
	s.dow, s.dowStar = field("day of week", f[4], 0, 7, dayNames, 0)
	if len(errs) > 0 {
		return Schedule{}, fmt.Errorf("cron %q: %s", expr, strings.Join(errs, "; "))
	}
	if s.dow&(1<<7) != 0 { // 7 is Sunday too
		s.dow = s.dow&^(1<<7) | 1
	}
	s.hourList, s.minuteLst = members(s.hour), members(s.minute)
	// A schedule that never fires (30 February) is a mistake.
	probe := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	if s.Next(probe).IsZero() {
		return Schedule{}, fmt.Errorf("cron %q: no day matches within %d years", expr, MaxYears)
	}
	return s, nil
}

func members(set uint64) []int {
	var out []int
	for set != 0 {
		i := bits.TrailingZeros64(set)
		out = append(out, i)
		set &^= 1 << i
	}
	return out
}

func parseField(text string, lo, hi int, names []string, nameBase int) (set uint64, star bool, err error) {
	if text == "" {
		return 0, false, fmt.Errorf("empty")
	}
	for _, part := range strings.Split(text, ",") {
		rng, stepText, hasStep := strings.Cut(part, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepText)
			if err != nil || n < 1 || n > hi-lo+1 {
				return 0, false, fmt.Errorf("step %q: want 1–%d", stepText, hi-lo+1)
			}
			step = n
		}
		a, b := lo, hi
		switch {
		case rng == "*":
			star = star || (!hasStep && len(text) == 1)
		default:
			first, last, isRange := strings.Cut(rng, "-")
			if a, err = value(first, lo, hi, names, nameBase); err != nil {
				return 0, false, err
			}
			b = a
			if isRange {
				if b, err = value(last, lo, hi, names, nameBase); err != nil {
					return 0, false, err
				}
				if b < a {
					return 0, false, fmt.Errorf("range %q runs backwards", rng)
				}
			} else if hasStep {
				b = hi // "a/n" is "a-hi/n"
			}
		}
		for v := a; v <= b; v += step {
			set |= 1 << v
		}
	}
	return set, star, nil
}

func value(text string, lo, hi int, names []string, nameBase int) (int, error) {
	for i, n := range names {
		if strings.EqualFold(text, n) {
			return i + nameBase, nil
		}
	}
	v, err := strconv.Atoi(text)
	if err != nil || v < lo || v > hi {
		if names != nil {
			return 0, fmt.Errorf("%q: want %d–%d or a name such as %s", text, lo, hi, names[0])
		}
		return 0, fmt.Errorf("%q: want %d–%d", text, lo, hi)
	}
	return v, nil
}

// String returns the schedule as written.
func (s Schedule) String() string { return s.expr }

// Location returns the schedule's time zone.
func (s Schedule) Location() *time.Location { return s.loc }

func (s Schedule) dayMatches(d time.Time) bool {
	if s.month&(1<<int(d.Month())) == 0 {
		return false
	}
	domOK := s.dom&(1<<d.Day()) != 0
	dowOK := s.dow&(1<<int(d.Weekday())) != 0
	switch {
	case s.domStar && s.dowStar:
		return true
	case s.domStar:
		return dowOK
	case s.dowStar:
		return domOK
	}
	return domOK || dowOK
}

// Next returns the first occurrence strictly after t, in UTC, or the zero
// time when there is none within MaxYears.
func (s Schedule) Next(t time.Time) time.Time {
	if s.loc == nil {
		return time.Time{}
	}
	t = t.UTC().Truncate(time.Minute)
	local := t.In(s.loc)
	day := time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, time.UTC).AddDate(0, 0, -1)
	end := day.AddDate(MaxYears, 0, 2)
	var best time.Time
	for ; day.Before(end); day = day.AddDate(0, 0, 1) {
		if !best.IsZero() && day.After(best.Add(26*time.Hour)) {
			break // no later day can hold an earlier instant
		}
		if !s.dayMatches(day) || !day.Add(38*time.Hour).After(t) {
			continue
		}
		_, off0 := day.Add(-26 * time.Hour).In(s.loc).Zone()
		_, off1 := day.Add(50 * time.Hour).In(s.loc).Zone()
		if off0 == off1 {
			// No change of offset near this day: wall-clock order is
			// instant order, so the first time after t is this day's best.
			tw := t.Add(time.Duration(off0) * time.Second) // t as a wall-clock time
			sameDay := tw.Year() == day.Year() && tw.YearDay() == day.YearDay()
		fast:
			for _, h := range s.hourList {
				if sameDay && h < tw.Hour() {
					continue
				}
				for _, m := range s.minuteLst {
					at := time.Date(day.Year(), day.Month(), day.Day(), h, m, 0, 0, time.UTC).Add(-time.Duration(off0) * time.Second)
					if at.After(t) {
						if best.IsZero() || at.Before(best) {
							best = at
						}
						break fast
					}
				}
			}
			continue
		}
		for _, h := range s.hourList {
			for _, m := range s.minuteLst {
				for _, at := range s.instants(day.Year(), day.Month(), day.Day(), h, m) {
					if at.After(t) && (best.IsZero() || at.Before(best)) {
						best = at
					}
				}
			}
		}
	}
	if best.IsZero() {
		return best
	}
	return best.UTC()
}

// instants returns the moments the wall-clock time y-mo-d h:m stands for in
// the schedule's zone, by the rules in the package comment.
func (s Schedule) instants(y int, mo time.Month, d, h, m int) []time.Time {
	wall := time.Date(y, mo, d, h, m, 0, 0, time.UTC)
	var found []time.Time
	for _, probe := range []time.Time{wall.Add(-26 * time.Hour), wall.Add(26 * time.Hour)} {
		_, off := probe.In(s.loc).Zone()
		at := wall.Add(-time.Duration(off) * time.Second)
		lt := at.In(s.loc)
		if lt.Year() == y && lt.Month() == mo && lt.Day() == d && lt.Hour() == h && lt.Minute() == m {
			if len(found) == 0 || !found[0].Equal(at) {
				found = append(found, at)
			}
		}
	}
	if len(found) == 2 && found[1].Before(found[0]) {
		found[0], found[1] = found[1], found[0]
	}
	switch {
	case len(found) == 2 && !s.hourStar:
		return found[:1] // a repeated wall-clock time fires the first time
	case len(found) == 0 && !s.hourStar:
		return []time.Time{s.gapEnd(wall)} // a skipped one fires at the change
	}
	return found
}

// gapEnd returns the instant the clocks jumped over wall (read as a
// wall-clock time that does not exist in the zone).
func (s Schedule) gapEnd(wall time.Time) time.Time {
	_, before := wall.Add(-26 * time.Hour).In(s.loc).Zone()
	lo := wall.Add(-time.Duration(before) * time.Second) // past the change already
	hi := lo
	lo = lo.Add(-26 * time.Hour)
	_, offLo := lo.In(s.loc).Zone()
	// Binary search for the first instant whose offset differs from lo's.
	for hi.Sub(lo) > time.Second {
		mid := lo.Add(hi.Sub(lo) / 2).Truncate(time.Second)
		if _, o := mid.In(s.loc).Zone(); o == offLo {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}
