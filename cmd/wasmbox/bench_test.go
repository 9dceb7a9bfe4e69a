package main

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestBenchCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("runs measurements")
	}
	// The sandbox group is short; "-" skips the warm-start row, which would
	// exec this test binary.
	out, errOut, code := runMain(t, "", "bench", "--quick", "--only", "sandbox", "--binary", "-")
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"| group | measurement | n | median | p99 | native | ratio | notes |", "| sandbox | Fork with a 10 MB tree and shell state | 3 |", "Machine: "} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	if !strings.Contains(errOut, "bench: sandbox") {
		t.Errorf("no progress line on stderr: %q", errOut)
	}

	out, errOut, code = runMain(t, "", "bench", "--quick", "--json", "--only", "sandbox", "--binary", "-")
	if code != 0 {
		t.Fatalf("--json: exit %d, stderr %q", code, errOut)
	}
	var rep struct {
		Quick bool `json:"quick"`
		Rows  []struct {
			Group  string  `json:"group"`
			Name   string  `json:"name"`
			N      int     `json:"n"`
			Median float64 `json:"median"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	if !rep.Quick || len(rep.Rows) != 4 {
		t.Fatalf("--json: %+v", rep)
	}
	for _, r := range rep.Rows {
		if r.Group != "sandbox" || r.N != 3 || r.Median <= 0 {
			t.Errorf("row %+v", r)
		}
	}
}

func TestBenchUsage(t *testing.T) {
	_, errOut, code := runMain(t, "", "bench", "extra")
	if code != 2 || !strings.Contains(errOut, "wasmbox: ") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
}
