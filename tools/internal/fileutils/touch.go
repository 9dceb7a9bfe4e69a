package fileutils

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

func init() { cmd.Register("touch", touchMain) }

var touchUsage = usage{
	synopsis: "[OPTION]... FILE...",
	text: `Update the access and modification times of each FILE to the current time.
A FILE argument that does not exist is created empty, unless -c is supplied.

  -a                     change only the access time
  -c, --no-create        do not create any files
  -d, --date=STRING      parse STRING and use it instead of current time
  -m                     change only the modification time
  -r, --reference=FILE   use this file's times instead of current time
  -t STAMP               use [[CC]YY]MMDDhhmm[.ss] instead of current time
`,
	bad: 1,
}

func touchMain(e *cmd.Env) int {
	opts, files, st, done := getopt(e, "a c,no-create d,date: f h,no-dereference m r,reference: t: ,time:", touchUsage)
	if done {
		return st
	}
	now := time.Now()
	atime, mtime := now, now
	onlyA, onlyM := false, false
	for _, o := range opts {
		switch o.name {
		case "a":
			onlyA = true
		case "m":
			onlyM = true
		case "time":
			switch o.val {
			case "access", "atime", "use":
				onlyA = true
			case "modify", "mtime":
				onlyM = true
			default:
				return usageErr(e, touchUsage, "invalid argument %s for '--time'", quote(o.val))
			}
		case "date":
			t, err := parseDate(o.val, now)
			if err != nil {
				e.Errorf("invalid date format %s", quote(o.val))
				return 1
			}
			atime, mtime = t, t
		case "t":
			t, err := parseStamp(o.val, now)
			if err != nil {
				e.Errorf("invalid date format %s", quote(o.val))
				return 1
			}
			atime, mtime = t, t
		case "reference":
			fi, err := os.Stat(o.val)
			if err != nil {
				e.Errorf("failed to get attributes of %s: %s", quote(o.val), strerror(err))
				return 1
			}
			sx := sysStat(fi)
			atime, mtime = sx.atime, sx.mtime
		}
	}
	if len(files) == 0 {
		return usageErr(e, touchUsage, "missing file operand")
	}
	noCreate := has(opts, "no-create")
	status := 0
	for _, f := range files {
		if f == "-" {
			continue
		}
		fi, err := os.Stat(f)
		if err != nil {
			if !os.IsNotExist(err) {
				e.Errorf("cannot touch %s: %s", quote(f), strerror(err))
				status = 1
				continue
			}
			if noCreate {
				continue
			}
			fh, err := os.OpenFile(f, os.O_WRONLY|os.O_CREATE, 0o666)
			if err != nil {
				e.Errorf("cannot touch %s: %s", quote(f), strerror(err))
				status = 1
				continue
			}
			fh.Close()
			if fi, err = os.Stat(f); err != nil {
				e.Errorf("cannot touch %s: %s", quote(f), strerror(err))
				status = 1
				continue
			}
		}
		a, m := atime, mtime
		cur := sysStat(fi)
		if onlyA && !onlyM {
			m = cur.mtime
		}
		if onlyM && !onlyA {
			a = cur.atime
		}
		if err := os.Chtimes(f, a, m); err != nil {
			e.Errorf("setting times of %s: %s", quote(f), strerror(err))
			status = 1
		}
	}
	return status
}

var errBadDate = errors.New("invalid date")

// parseStamp parses touch -t [[CC]YY]MMDDhhmm[.ss] in local time.
func parseStamp(s string, now time.Time) (time.Time, error) {
	sec := 0
	if i := strings.IndexByte(s, '.'); i >= 0 {
		v, err := strconv.Atoi(s[i+1:])
		if err != nil || len(s[i+1:]) != 2 || v > 61 {
			return time.Time{}, errBadDate
		}
		sec, s = v, s[:i]
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return time.Time{}, errBadDate
		}
	}
	year := now.Year()
	switch len(s) {
	case 8:
	case 10:
		yy, _ := strconv.Atoi(s[:2])
		if yy < 69 {
			year = 2000 + yy
		} else {
			year = 1900 + yy
		}
		s = s[2:]
	case 12:
		year, _ = strconv.Atoi(s[:4])
		s = s[4:]
	default:
		return time.Time{}, errBadDate
	}
	n := func(i int) int { v, _ := strconv.Atoi(s[i : i+2]); return v }
	mon, day, hh, mm := n(0), n(2), n(4), n(6)
	if mon < 1 || mon > 12 || day < 1 || day > 31 || hh > 23 || mm > 59 {
		return time.Time{}, errBadDate
	}
	return time.Date(year, time.Month(mon), day, hh, mm, sec, 0, time.Local), nil
}

// parseDate understands the date strings agents pass to touch -d and
// find -newermt: "@EPOCH", "now", "today", "yesterday", "tomorrow",
// ISO 8601 dates and date-times (with optional zone "Z" or "+hh:mm"),
// "YYYY-MM-DD HH:MM[:SS]", "N unit(s) ago" and "+N unit(s)".
func parseDate(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	ls := strings.ToLower(s)
	switch ls {
	case "now", "":
		return now, nil
	case "today":
		return now, nil
	case "yesterday":
		return now.AddDate(0, 0, -1), nil
	case "tomorrow":
		return now.AddDate(0, 0, 1), nil
	}
	if strings.HasPrefix(s, "@") {
		f, err := strconv.ParseFloat(s[1:], 64)
		if err != nil {
			return time.Time{}, errBadDate
		}
		sec := int64(f)
		return time.Unix(sec, int64((f-float64(sec))*1e9)), nil
	}
	if t, ok := relativeDate(ls, now); ok {
		return t, nil
	}
	layouts := []string{
		time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02T15:04",
		"2006-01-02 15:04:05.999999999 -0700", "2006-01-02 15:04:05 -0700", "2006-01-02 15:04:05Z07:00",
		"2006-01-02 15:04:05.999999999", "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02",
		"2006/01/02 15:04:05", "2006/01/02", "20060102", "20060102 15:04", "20060102 15:04:05",
		"Jan 2 2006", "Jan 2 2006 15:04:05", "2 Jan 2006", "2 Jan 2006 15:04:05",
		"Mon Jan 2 15:04:05 MST 2006", "Mon Jan _2 15:04:05 2006", time.RFC1123Z, time.RFC1123,
		"15:04:05", "15:04",
	}
	for _, l := range layouts {
		t, err := time.ParseInLocation(l, s, time.Local)
		if err == nil {
			if strings.HasPrefix(l, "15:04") {
				y, m, d := now.Date()
				t = time.Date(y, m, d, t.Hour(), t.Minute(), t.Second(), 0, time.Local)
			}
			return t, nil
		}
	}
	return time.Time{}, errBadDate
}

func relativeDate(s string, now time.Time) (time.Time, bool) {
	f := strings.Fields(s)
	if len(f) < 2 || len(f) > 3 {
		return time.Time{}, false
	}
	n, err := strconv.Atoi(strings.TrimPrefix(f[0], "+"))
	if err != nil {
		return time.Time{}, false
	}
	if len(f) == 3 {
		if f[2] != "ago" {
			return time.Time{}, false
		}
		n = -n
	}
	unit := strings.TrimSuffix(f[1], "s")
	switch unit {
	case "sec", "second":
		return now.Add(time.Duration(n) * time.Second), true
	case "min", "minute":
		return now.Add(time.Duration(n) * time.Minute), true
	case "hour":
		return now.Add(time.Duration(n) * time.Hour), true
	case "day":
		return now.AddDate(0, 0, n), true
	case "week":
		return now.AddDate(0, 0, 7*n), true
	case "month":
		return now.AddDate(0, n, 0), true
	case "year":
		return now.AddDate(n, 0, 0), true
	}
	return time.Time{}, false
}
