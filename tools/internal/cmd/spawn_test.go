package cmd

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestSpawnMarshal(t *testing.T) {
	tests := []struct {
		req  SpawnRequest
		want string
	}{
		{SpawnRequest{Argv: []string{"echo", "hi"}}, `{"argv":["echo","hi"],"stdin":"inherit"}`},
		{SpawnRequest{Argv: []string{"x"}, Env: []string{}, StdinNull: true}, `{"argv":["x"],"stdin":"null","env":[]}`},
		{SpawnRequest{Argv: []string{"x"}, Env: []string{"A=1"}, Dir: "/tmp", Timeout: 1500 * time.Millisecond},
			`{"argv":["x"],"dir":"/tmp","stdin":"inherit","timeout_ms":1500,"env":["A=1"]}`},
		{SpawnRequest{Argv: []string{"x"}, Timeout: time.Microsecond}, `{"argv":["x"],"stdin":"inherit","timeout_ms":1}`},
	}
	for _, tt := range tests {
		b, err := tt.req.marshal()
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tt.want {
			t.Errorf("marshal(%+v) = %s, want %s", tt.req, b, tt.want)
		}
	}
	for _, bad := range []SpawnRequest{{}, {Argv: []string{""}}} {
		if _, err := bad.marshal(); !errors.Is(err, ErrInvalid) {
			t.Errorf("marshal(%+v) err = %v, want ErrInvalid", bad, err)
		}
	}
}

func TestSpawnNative(t *testing.T) {
	var out, errb bytes.Buffer
	e := &Env{Args: []string{"t"}, Stdin: strings.NewReader("in\n"), Stdout: &out, Stderr: &errb}
	st, err := e.Spawn(SpawnRequest{Argv: []string{"cat"}})
	if err != nil || st != 0 || out.String() != "in\n" {
		t.Fatalf("cat: st=%d err=%v out=%q", st, err, out.String())
	}
	out.Reset()
	st, err = e.Spawn(SpawnRequest{Argv: []string{"sh", "-c", "echo $A; exit 3"}, Env: []string{"A=x"}})
	if err != nil || st != 3 || out.String() != "x\n" {
		t.Fatalf("sh: st=%d err=%v out=%q", st, err, out.String())
	}
	if _, err := e.Spawn(SpawnRequest{Argv: []string{"no-such-command-wasmbox"}}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing command: err = %v, want ErrNotFound", err)
	}
	st, err = e.Spawn(SpawnRequest{Argv: []string{"sleep", "5"}, Timeout: 50 * time.Millisecond})
	if err != nil || st != StatusTimedOut {
		t.Fatalf("timeout: st=%d err=%v", st, err)
	}
}
