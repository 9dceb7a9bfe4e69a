package sysutils

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
	"github.com/wasmbox/wasmbox/tools/internal/timefmt"
)

func init() {
	cmd.Register("date", dateMain)
}

func dateMain(e *cmd.Env) int {
	opts, ops, err := cmd.Getopt(e.Args[1:], withHelp(
		cmd.Option{Short: 'd', Long: "date", Arg: cmd.RequiredArg},
		cmd.Option{Short: 'f', Long: "file", Arg: cmd.RequiredArg},
		cmd.Option{Short: 'r', Long: "reference", Arg: cmd.RequiredArg},
		cmd.Option{Short: 'u', Long: "utc"}, cmd.Option{Long: "universal"},
		cmd.Option{Short: 'I', Long: "iso-8601", Arg: cmd.OptionalArg},
		cmd.Option{Short: 'R', Long: "rfc-email"}, cmd.Option{Long: "rfc-822"}, cmd.Option{Long: "rfc-2822"},
		cmd.Option{Long: "rfc-3339", Arg: cmd.RequiredArg},
		cmd.Option{Short: 's', Long: "set", Arg: cmd.RequiredArg},
		cmd.Option{Long: "debug"}), false)
	if err != nil {
		return e.Usage(1, err)
	}
	if helpOrVersion(e, opts, "[OPTION]... [+FORMAT]\nDisplay the date and time.\n  -d, --date=STRING        display time described by STRING, not 'now'\n  -f, --file=DATEFILE      like --date; once for each line of DATEFILE\n  -I[FMT], --iso-8601[=FMT]  date, hours, minutes, seconds or ns\n  -R, --rfc-email          RFC 5322 format\n      --rfc-3339=FMT       date, seconds or ns\n  -r, --reference=FILE     display the last modification time of FILE\n  -u, --utc                Coordinated Universal Time\n") {
		return 0
	}
	loc := localZone()
	var dateStr, file, ref, set string
	hasDate, hasSet := false, false
	format := "%a %b %e %H:%M:%S %Z %Y"
	fixedFormat := ""
	for _, o := range opts {
		switch o.Name {
		case "date":
			dateStr, hasDate = o.Value, true
		case "file":
			file = o.Value
		case "reference":
			ref = o.Value
		case "utc", "universal":
			loc = time.UTC
		case "set":
			set, hasSet = o.Value, true
		case "rfc-email", "rfc-822", "rfc-2822":
			fixedFormat = "%a, %d %b %Y %H:%M:%S %z"
		case "iso-8601":
			f, ok := isoFormat(o.Value)
			if !ok {
				e.Errorf("invalid argument '%s' for '--iso-8601'", o.Value)
				fmt.Fprintln(e.Stderr, "Valid arguments are:\n  - 'hours'\n  - 'minutes'\n  - 'date'\n  - 'seconds'\n  - 'ns'")
				return e.Usage(1, nil)
			}
			fixedFormat = f
		case "rfc-3339":
			f, ok := map[string]string{"date": "%Y-%m-%d", "seconds": "%Y-%m-%d %H:%M:%S%:z", "ns": "%Y-%m-%d %H:%M:%S.%N%:z"}[o.Value]
			if !ok {
				e.Errorf("invalid argument '%s' for '--rfc-3339'", o.Value)
				fmt.Fprintln(e.Stderr, "Valid arguments are:\n  - 'date'\n  - 'seconds'\n  - 'ns'")
				return e.Usage(1, nil)
			}
			fixedFormat = f
		}
	}
	if fixedFormat != "" {
		format = fixedFormat
	}
	for i, op := range ops {
		if strings.HasPrefix(op, "+") {
			if i > 0 || len(ops) > 1 {
				return e.Usage(1, fmt.Errorf("extra operand '%s'", ops[min(1, len(ops)-1)]))
			}
			if fixedFormat != "" {
				e.Errorf("multiple output formats specified")
				return 1
			}
			format = op[1:]
			continue
		}
		if i > 0 {
			return e.Usage(1, fmt.Errorf("extra operand '%s'", op))
		}
		if hasDate || hasSet {
			e.Errorf("the argument '%s' lacks a leading '+';\nwhen using an option to specify date(s), any non-option\nargument must be a format string beginning with '+'", op)
			return e.Usage(1, nil)
		}
		t, ok := parseSetOperand(op, time.Now().In(loc))
		if !ok {
			e.Errorf("invalid date '%s'", op)
			return 1
		}
		set, hasSet = t.Format(time.RFC3339Nano), true
	}
	if btoi(hasDate)+btoi(file != "")+btoi(ref != "") > 1 {
		e.Errorf("the options to specify dates for printing are mutually exclusive")
		return e.Usage(1, nil)
	}
	w, flush := output(e)
	now := time.Now()
	if hasSet {
		// The sandbox clock cannot be set: say so, and print the date the
		// way GNU date does after a failed set.
		t, err := parseDate(set, now, loc)
		if err != nil {
			e.Errorf("invalid date '%s'", set)
			return 1
		}
		e.Errorf("cannot set date: Operation not permitted")
		w.WriteString(timefmt.Strftime(t.In(loc), format) + "\n")
		flush()
		return 1
	}
	switch {
	case ref != "":
		st, err := os.Stat(ref)
		if err != nil {
			e.Errorf("%s: %s", ref, errText(err))
			return 1
		}
		now = st.ModTime()
	case hasDate:
		t, err := parseDate(dateStr, now, loc)
		if err != nil {
			e.Errorf("invalid date '%s'", dateStr)
			return 1
		}
		now = t
	case file != "":
		r, done, err := openInput(e, file)
		if err != nil {
			e.Errorf("%s: %s", file, errText(err))
			return 1
		}
		defer done()
		status := 0
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			t, err := parseDate(sc.Text(), now, loc)
			if err != nil {
				w.Flush()
				e.Errorf("invalid date '%s'", sc.Text())
				status = 1
				continue
			}
			w.WriteString(timefmt.Strftime(t.In(loc), format) + "\n")
		}
		if flush() != 0 {
			return 1
		}
		return status
	}
	w.WriteString(timefmt.Strftime(now.In(loc), format) + "\n")
	return flush()
}

// parseSetOperand parses date's MMDDhhmm[[CC]YY][.ss] operand.
func parseSetOperand(s string, now time.Time) (time.Time, bool) {
	main, secs, hasSecs := strings.Cut(s, ".")
	if strings.Trim(main, "0123456789") != "" || (hasSecs && (len(secs) != 2 || strings.Trim(secs, "0123456789") != "")) {
		return time.Time{}, false
	}
	atoi := func(x string) int { v, _ := strconv.Atoi(x); return v }
	year := now.Year()
	switch len(main) {
	case 8:
	case 10:
		y := atoi(main[8:])
		if y < 69 {
			year = 2000 + y
		} else {
			year = 1900 + y
		}
	case 12:
		year = atoi(main[8:])
	default:
		return time.Time{}, false
	}
	sec := 0
	if hasSecs {
		sec = atoi(secs)
	}
	mo, d, h, mi := atoi(main[0:2]), atoi(main[2:4]), atoi(main[4:6]), atoi(main[6:8])
	t := time.Date(year, time.Month(mo), d, h, mi, sec, 0, now.Location())
	if t.Month() != time.Month(mo) || t.Day() != d || h > 23 || mi > 59 || sec > 60 {
		return time.Time{}, false
	}
	return t, true
}

func isoFormat(v string) (string, bool) {
	if v == "" {
		v = "date"
	}
	for _, k := range []string{"date", "hours", "minutes", "seconds", "ns"} {
		if strings.HasPrefix(k, v) {
			return map[string]string{
				"date":    "%Y-%m-%d",
				"hours":   "%Y-%m-%dT%H%:z",
				"minutes": "%Y-%m-%dT%H:%M%:z",
				"seconds": "%Y-%m-%dT%H:%M:%S%:z",
				"ns":      "%Y-%m-%dT%H:%M:%S,%N%:z",
			}[k], true
		}
	}
	return "", false
}

// localZone is the zone named by $TZ: UTC when unset or empty, a POSIX
// fixed offset such as "EST5" or "UTC-3", or a zoneinfo name when the
// sandbox has the zone files.
func localZone() *time.Location {
	tz, ok := os.LookupEnv("TZ")
	tz = strings.TrimPrefix(tz, ":")
	if !ok || tz == "" || tz == "UTC" || tz == "UTC0" || tz == "GMT" || tz == "GMT0" {
		return time.UTC
	}
	if m := posixTZ().FindStringSubmatch(tz); m != nil {
		h, _ := strconv.Atoi(m[3])
		mins, _ := strconv.Atoi(m[4])
		off := h*3600 + mins*60
		if m[2] != "-" {
			off = -off // POSIX offsets are west of Greenwich
		}
		return time.FixedZone(m[1], off)
	}
	if l, err := time.LoadLocation(tz); err == nil {
		return l
	}
	return time.UTC
}

// posixTZ matches a POSIX TZ with a fixed offset; compiled on first use
// (package init runs for every command).
var posixTZ = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^([A-Za-z]{3,})([+-]?)(\d{1,2})(?::(\d{2}))?$`)
})

// dateParser holds what parseDate found so far.
type dateParser struct {
	s                     string
	now                   time.Time
	loc                   *time.Location
	year, month, day      int
	hasDate, hasYear      bool
	hour, min, sec, nsec  int
	hasTime               bool
	zone                  *time.Location
	relY, relM, relD      int
	rel                   time.Duration
	weekday, weekdayOrd   int
	hasWeekday, sawNumber bool
}

var dateRes = sync.OnceValue(func() map[string]*regexp.Regexp {
	return map[string]*regexp.Regexp{
		"epoch": regexp.MustCompile(`^@([+-]?\d+)(?:[.,](\d+))?$`),
		"iso":   regexp.MustCompile(`^(\d{4})-(\d{1,2})-(\d{1,2})`),
		"slash": regexp.MustCompile(`^(\d{4})/(\d{1,2})/(\d{1,2})`),
		"us":    regexp.MustCompile(`^(\d{1,2})/(\d{1,2})(?:/(\d{2,4}))?`),
		"time":  regexp.MustCompile(`^(\d{1,2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9})\d*)?)?`),
		"zone":  regexp.MustCompile(`^([+-])(\d{2}):?(\d{2})\b`),
		"rel":   regexp.MustCompile(`^([+-]?)\s*(\d+)?\s*(years?|months?|fortnights?|weeks?|days?|hours?|minutes?|mins?|seconds?|secs?)\b`),
		"num":   regexp.MustCompile(`^\d+`),
		"word":  regexp.MustCompile(`^[a-z]+\.?`),
		"ampm":  regexp.MustCompile(`^\s*([ap])\.?m\.?\b`),
	}
})

var (
	monthNames   = []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}
	weekdayNames = []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}
)

// lookupName matches a month or weekday name: its full name, its first
// three letters, or (for "sept", "tues", "wednes", "thur", "thurs") common
// four- and five-letter forms.
func lookupName(w string, names []string) int {
	w = strings.TrimSuffix(w, ".")
	if len(w) < 3 {
		return -1
	}
	full := map[string]string{"jan": "january", "feb": "february", "mar": "march", "apr": "april", "may": "may", "jun": "june", "jul": "july",
		"aug": "august", "sep": "september", "oct": "october", "nov": "november", "dec": "december",
		"sun": "sunday", "mon": "monday", "tue": "tuesday", "wed": "wednesday", "thu": "thursday", "fri": "friday", "sat": "saturday"}
	for i, n := range names {
		if w == n || w == full[n] || len(w) > 3 && strings.HasPrefix(full[n], w) && len(w) <= 5 {
			return i
		}
	}
	return -1
}

// parseDate understands the forms of GNU date -d that agents use:
// "@EPOCH", "now", "today", "yesterday", "tomorrow", ISO 8601 dates and
// times ("2024-01-02", "2024-01-02 03:04:05", "2024-01-02T03:04:05Z",
// with +hh:mm zones), "2024/01/02", "01/02/2024", "Jan 2 2024",
// "2 January 2024", times with am/pm, relative items ("3 days ago",
// "+1 week", "-2 hours", "next monday", "last year"), weekday names, and
// the default output of date itself.
func parseDate(s string, now time.Time, loc *time.Location) (time.Time, error) {
	res := dateRes()
	s = strings.TrimSpace(strings.ToLower(s))
	if m := res["epoch"].FindStringSubmatch(s); m != nil {
		sec, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil {
			return time.Time{}, err
		}
		ns := 0
		if m[2] != "" {
			frac := (m[2] + "000000000")[:9]
			ns, _ = strconv.Atoi(frac)
		}
		return time.Unix(sec, int64(ns)).In(loc), nil
	}
	nowLoc := now.In(loc)
	p := &dateParser{s: s, now: nowLoc, loc: loc}
	if err := p.parse(); err != nil {
		return time.Time{}, err
	}
	zone := loc
	if p.zone != nil {
		zone = p.zone
	}
	base := now.In(zone)
	y, mo, d := base.Date()
	h, mi, sec, ns := base.Hour(), base.Minute(), base.Second(), base.Nanosecond()
	if p.hasDate {
		mo, d = time.Month(p.month), p.day
		if p.hasYear {
			y = p.year
		}
		h, mi, sec, ns = 0, 0, 0, 0
	}
	if p.hasTime {
		h, mi, sec, ns = p.hour, p.min, p.sec, p.nsec
	}
	if p.hasWeekday && !p.hasTime {
		h, mi, sec, ns = 0, 0, 0, 0
	}
	t := time.Date(y, mo, d, h, mi, sec, ns, zone)
	if p.hasDate && (t.Month() != mo || t.Day() != d) {
		return time.Time{}, fmt.Errorf("invalid date")
	}
	if p.hasTime && (p.hour > 23 || p.min > 59 || p.sec > 60) {
		return time.Time{}, fmt.Errorf("invalid time")
	}
	if p.hasWeekday {
		diff := (p.weekday - int(t.Weekday()) + 7) % 7
		switch {
		case p.weekdayOrd > 0:
			if diff == 0 {
				diff = 7
			}
			diff += 7 * (p.weekdayOrd - 1)
		case p.weekdayOrd < 0:
			diff -= 7 * -p.weekdayOrd
			if diff == -7*-p.weekdayOrd+7 {
				diff -= 7
			}
		}
		t = t.AddDate(0, 0, diff)
	}
	t = t.AddDate(p.relY, p.relM, p.relD).Add(p.rel)
	return t.In(loc), nil
}

func (p *dateParser) parse() error {
	res := dateRes()
	s := p.s
	ord := 0 // pending "next"/"last"/"this": 1, -1, or 0
	hasOrd := false
	for {
		s = strings.TrimLeft(s, " \t,")
		if s == "" {
			break
		}
		if m := res["iso"].FindStringSubmatch(s); m != nil {
			p.setDate(m[1], m[2], m[3])
			s = s[len(m[0]):]
			if strings.HasPrefix(s, "t") {
				s = s[1:]
			}
			continue
		}
		if m := res["slash"].FindStringSubmatch(s); m != nil {
			p.setDate(m[1], m[2], m[3])
			s = s[len(m[0]):]
			continue
		}
		if m := res["time"].FindStringSubmatch(s); m != nil {
			p.hasTime = true
			p.hour, _ = strconv.Atoi(m[1])
			p.min, _ = strconv.Atoi(m[2])
			p.sec, _ = strconv.Atoi(m[3])
			if m[4] != "" {
				p.nsec, _ = strconv.Atoi((m[4] + "000000000")[:9])
			}
			s = s[len(m[0]):]
			if a := res["ampm"].FindStringSubmatch(s); a != nil {
				if err := p.ampm(a[1]); err != nil {
					return err
				}
				s = s[len(a[0]):]
			}
			if z := res["zone"].FindStringSubmatch(strings.TrimLeft(s, " ")); z != nil {
				s = strings.TrimLeft(s, " ")[len(z[0]):]
				p.setZone(z[1], z[2], z[3])
			} else if strings.HasPrefix(s, "z") && (len(s) == 1 || s[1] == ' ') {
				p.zone = time.UTC
				s = s[1:]
			}
			continue
		}
		if m := res["us"].FindStringSubmatch(s); m != nil {
			y := m[3]
			if y == "" {
				y = strconv.Itoa(p.now.Year())
			} else if len(y) == 2 {
				n, _ := strconv.Atoi(y)
				if n < 69 {
					y = strconv.Itoa(2000 + n)
				} else {
					y = strconv.Itoa(1900 + n)
				}
			}
			p.setDate(y, m[1], m[2])
			s = s[len(m[0]):]
			continue
		}
		if m := res["rel"].FindStringSubmatch(s); m != nil {
			n := 1
			if m[2] != "" {
				n, _ = strconv.Atoi(m[2])
			} else if hasOrd {
				n = ord
			}
			if m[1] == "-" {
				n = -n
			}
			s = s[len(m[0]):]
			if rest := strings.TrimLeft(s, " "); strings.HasPrefix(rest, "ago") {
				n = -n
				s = rest[3:]
			}
			p.addRel(strings.TrimSuffix(m[3], "s"), n)
			hasOrd = false
			continue
		}
		if m := res["num"].FindString(s); m != "" {
			s = s[len(m):]
			v, _ := strconv.Atoi(m)
			if a := res["ampm"].FindStringSubmatch(s); a != nil && len(m) <= 2 {
				p.hasTime = true
				p.hour, p.min, p.sec, p.nsec = v, 0, 0, 0
				if err := p.ampm(a[1]); err != nil {
					return err
				}
				s = s[len(a[0]):]
				continue
			}
			switch {
			case len(m) == 8 && !p.hasDate:
				p.setDate(m[:4], m[4:6], m[6:])
			case p.hasDate && p.month != 0 && p.day == 0:
				p.day = v
			case p.hasDate && !p.hasYear && len(m) == 4:
				p.year, p.hasYear = v, true
			case !p.hasDate && v >= 1 && v <= 31:
				p.day = v // "5 jan 2024": the month follows
				p.sawNumber = true
			case p.hasTime && !p.hasYear && len(m) == 4 && p.hasDate:
				p.year, p.hasYear = v, true
			default:
				if len(m) == 4 && p.hasDate {
					p.year, p.hasYear = v, true
					continue
				}
				return fmt.Errorf("unexpected number %s", m)
			}
			continue
		}
		m := res["word"].FindString(s)
		if m == "" {
			return fmt.Errorf("unexpected %q", s)
		}
		s = s[len(m):]
		w := strings.TrimSuffix(m, ".")
		switch w {
		case "now", "today", "this":
			if w == "this" {
				ord, hasOrd = 0, true
			}
			continue
		case "yesterday":
			p.relD--
			continue
		case "tomorrow":
			p.relD++
			continue
		case "next":
			ord, hasOrd = 1, true
			continue
		case "last":
			ord, hasOrd = -1, true
			continue
		case "utc", "gmt", "ut", "z":
			p.zone = time.UTC
			continue
		case "at", "t", "on", "and":
			continue
		}
		if i := lookupName(w, monthNames); i >= 0 {
			day := p.day
			if !p.sawNumber {
				day = 0
			}
			p.hasDate, p.month, p.day = true, i+1, day
			if !p.hasYear {
				p.year = p.now.Year()
			}
			continue
		}
		if i := lookupName(w, weekdayNames); i >= 0 {
			p.hasWeekday, p.weekday = true, i
			if hasOrd {
				p.weekdayOrd = ord
				hasOrd = false
			}
			continue
		}
		if z := p.zoneName(w); z != nil {
			p.zone = z
			continue
		}
		return fmt.Errorf("unknown word %q", w)
	}
	if p.hasDate && p.day == 0 {
		p.day = 1
	}
	if p.hasWeekday && p.hasDate {
		p.hasWeekday = false // "Tue Jan 2 2024": the weekday is a comment
	}
	return nil
}

func (p *dateParser) setDate(y, m, d string) {
	p.year, _ = strconv.Atoi(y)
	p.month, _ = strconv.Atoi(m)
	p.day, _ = strconv.Atoi(d)
	p.hasDate, p.hasYear = true, true
}

func (p *dateParser) setZone(sign, h, m string) {
	hh, _ := strconv.Atoi(h)
	mm, _ := strconv.Atoi(m)
	off := hh*3600 + mm*60
	if sign == "-" {
		off = -off
	}
	p.zone = time.FixedZone("", off)
}

// zoneName knows the zone abbreviations of the default output of date.
func (p *dateParser) zoneName(w string) *time.Location {
	if name, _ := p.now.Zone(); strings.EqualFold(name, w) {
		return p.loc
	}
	offs := map[string]int{"est": -5, "edt": -4, "cst": -6, "cdt": -5, "mst": -7, "mdt": -6, "pst": -8, "pdt": -7, "cet": 1, "cest": 2, "bst": 1, "ist": 5}
	if h, ok := offs[w]; ok {
		if w == "ist" {
			return time.FixedZone(strings.ToUpper(w), 5*3600+1800)
		}
		return time.FixedZone(strings.ToUpper(w), h*3600)
	}
	return nil
}

func (p *dateParser) ampm(a string) error {
	if p.hour < 1 || p.hour > 12 {
		return fmt.Errorf("bad 12-hour time")
	}
	if a == "a" && p.hour == 12 {
		p.hour = 0
	} else if a == "p" && p.hour != 12 {
		p.hour += 12
	}
	return nil
}

func (p *dateParser) addRel(unit string, n int) {
	switch unit {
	case "year":
		p.relY += n
	case "month":
		p.relM += n
	case "fortnight":
		p.relD += 14 * n
	case "week":
		p.relD += 7 * n
	case "day":
		p.relD += n
	case "hour":
		p.rel += time.Duration(n) * time.Hour
	case "minute", "min":
		p.rel += time.Duration(n) * time.Minute
	case "second", "sec":
		p.rel += time.Duration(n) * time.Second
	}
}
