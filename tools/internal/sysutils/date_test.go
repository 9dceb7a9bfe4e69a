package sysutils

import (
	"testing"
	"time"
)

// TestParseDateRelative checks the forms whose result depends on "now",
// which golden cases cannot pin down.
func TestParseDateRelative(t *testing.T) {
	now := time.Date(2026, 11, 21, 20, 1, 5, 0, time.UTC) // a Saturday
	tests := []struct {
		in, want string
	}{
		{"now", "2026-11-21 20:01:05"},
		{"today", "2026-11-21 20:01:05"},
		{"1 day ago", "2026-11-20 20:01:05"},
		{"yesterday", "2026-11-20 20:01:05"},
		{"tomorrow", "2026-11-22 20:01:05"},
		{"tomorrow 10:30", "2026-11-22 10:30:00"},
		{"3 days", "2026-11-24 20:01:05"},
		{"+2 weeks", "2026-12-05 20:01:05"},
		{"2 hours ago", "2026-11-21 18:01:05"},
		{"next week", "2026-11-28 20:01:05"},
		{"last month", "2026-10-21 20:01:05"},
		{"next monday", "2026-11-23 00:00:00"},
		{"monday", "2026-11-23 00:00:00"},
		{"saturday", "2026-11-21 00:00:00"},
		{"this saturday", "2026-11-21 00:00:00"},
		{"next saturday", "2026-11-28 00:00:00"},
		{"last saturday", "2026-11-14 00:00:00"},
		{"last friday", "2026-11-20 00:00:00"},
		{"sunday 10:00", "2026-11-22 10:00:00"},
		{"12:00", "2026-11-21 12:00:00"},
		{"10am", "2026-11-21 10:00:00"},
		{"Dec 25", "2026-12-25 00:00:00"},
		{"1 week ago", "2026-11-14 20:01:05"},
	}
	for _, tt := range tests {
		got, err := parseDate(tt.in, now, time.UTC)
		if err != nil {
			t.Errorf("parseDate(%q): %v", tt.in, err)
			continue
		}
		if s := got.Format("2006-01-02 15:04:05"); s != tt.want {
			t.Errorf("parseDate(%q) = %s, want %s", tt.in, s, tt.want)
		}
	}
	for _, bad := range []string{"garbage", "noon", "2024-13-01", "25:00", "13pm", "@x"} {
		if _, err := parseDate(bad, now, time.UTC); err == nil {
			t.Errorf("parseDate(%q) succeeded, want an error", bad)
		}
	}
}
