package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/wasmbox/wasmbox/third_party/wazero"

	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/runtime/runtimetest"
)

func TestParseSpawnRequest(t *testing.T) {
	tests := []struct {
		in   string
		want runtime.SpawnRequest
		err  string
	}{
		{`{"argv":["ls","-l"]}`, runtime.SpawnRequest{Argv: []string{"ls", "-l"}, InheritEnv: true}, ""},
		{`{"argv":["x"],"env":[],"dir":"/tmp","stdin":"null","timeout_ms":1500}`,
			runtime.SpawnRequest{Argv: []string{"x"}, Env: []string{}, Dir: "/tmp", StdinNull: true, Timeout: 1500 * time.Millisecond}, ""},
		{`{"argv":["x"],"env":null,"stdin":"inherit"}`, runtime.SpawnRequest{Argv: []string{"x"}, InheritEnv: true}, ""},
		{`{"argv":["x"],"env":["A=1"]}`, runtime.SpawnRequest{Argv: []string{"x"}, Env: []string{"A=1"}}, ""},
		{`{"argv":[]}`, runtime.SpawnRequest{}, "spawn request: argv is empty"},
		{`{"argv":[""]}`, runtime.SpawnRequest{}, "spawn request: argv is empty"},
		{`{}`, runtime.SpawnRequest{}, "spawn request: argv is empty"},
		{`{"argv":["x"],"dir":"rel"}`, runtime.SpawnRequest{}, `spawn request: dir "rel" is not absolute`},
		{`{"argv":["x"],"stdin":"pipe"}`, runtime.SpawnRequest{}, `spawn request: stdin "pipe" is not "inherit" or "null"`},
		{`{"argv":["x"],"timeout_ms":-1}`, runtime.SpawnRequest{}, "spawn request: negative timeout_ms"},
		{`{"argv":["a\u0000b"]}`, runtime.SpawnRequest{}, "spawn request: NUL byte in argv"},
		{`{"argv":["/bin/sed","-n"],"arg0":"sed"}`, runtime.SpawnRequest{Argv: []string{"/bin/sed", "-n"}, Arg0: "sed", InheritEnv: true}, ""},
		{`{"argv":["/bin/sed"],"arg0":"s\u0000ed"}`, runtime.SpawnRequest{}, "spawn request: NUL byte in arg0"},
		{`{"argv":"ls"}`, runtime.SpawnRequest{}, "spawn request: json: cannot unmarshal string into Go struct field spawnWire.argv of type []string"},
		{"\xff", runtime.SpawnRequest{}, "spawn request is not UTF-8"},
		{`[`, runtime.SpawnRequest{}, "spawn request: unexpected end of JSON input"},
	}
	for _, tc := range tests {
		got, err := runtime.ParseSpawnRequest([]byte(tc.in))
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s: err = %v, want %s", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.in, got, tc.want)
		}
	}
}

// TestSpawnABI drives the host function from a hand-assembled guest that
// reports errno*256+status as its exit code.
func TestSpawnABI(t *testing.T) {
	rt := newRuntime(t, runtime.Config{})
	var got runtime.SpawnRequest
	spawner := runtime.SpawnFunc(func(ctx context.Context, req runtime.SpawnRequest) (uint32, error) {
		got = req
		switch req.Argv[0] {
		case "missing":
			return 0, fmt.Errorf("%s: %w", req.Argv[0], runtime.ErrSpawnNotFound)
		case "denied":
			return 0, runtime.ErrSpawnDenied
		case "deep":
			return 0, runtime.ErrSpawnDepth
		case "broken":
			return 0, errors.New("exec format error")
		}
		return 7, nil
	})
	ok := []byte(`{"argv":["tool","a"],"dir":"/w","env":["X=1"]}`)
	tests := []struct {
		name                    string
		req                     []byte
		reqPtr, reqLen, statPtr uint32
		spawner                 runtime.Spawner
		errno, status           int
	}{
		{"ran", ok, 0, uint32(len(ok)), 4096, spawner, 0, 7},
		{"not found", []byte(`{"argv":["missing"]}`), 0, 20, 4096, spawner, 44, 0},
		{"denied", []byte(`{"argv":["denied"]}`), 0, 19, 4096, spawner, 2, 0},
		{"depth", []byte(`{"argv":["deep"]}`), 0, 17, 4096, spawner, 6, 126},
		{"exec error", []byte(`{"argv":["broken"]}`), 0, 19, 4096, spawner, 0, 126},
		{"bad json", []byte(`{"argv":`), 0, 8, 4096, spawner, 28, 0},
		{"empty argv", []byte(`{"argv":[]}`), 0, 11, 4096, spawner, 28, 0},
		{"req out of bounds", ok, 65530, uint32(len(ok)), 4096, spawner, 21, 0},
		{"req len huge", ok, 0, 0xffffffff, 4096, spawner, 28, 0},
		{"status out of bounds", ok, 0, uint32(len(ok)), 65534, spawner, 21, 0},
		{"status past 4GiB", ok, 0, uint32(len(ok)), 0xfffffffe, spawner, 21, 0},
		{"no spawner", ok, 0, uint32(len(ok)), 4096, nil, 2, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := compile(t, rt, tc.name, runtimetest.SpawnRaw(tc.req, tc.reqPtr, tc.reqLen, tc.statPtr))
			err := rt.Run(context.Background(), m, wazero.NewModuleConfig(), runtime.RunOptions{Spawner: tc.spawner})
			code := exitCode(err)
			if code < 0 {
				t.Fatalf("run: %v", err)
			}
			if errno, status := code/256, code%256; errno != tc.errno || status != tc.status {
				t.Errorf("errno=%d status=%d, want errno=%d status=%d", errno, status, tc.errno, tc.status)
			}
		})
	}
	want := runtime.SpawnRequest{Argv: []string{"tool", "a"}, Env: []string{"X=1"}, Dir: "/w"}
	rt.Run(context.Background(), compile(t, rt, "ran", runtimetest.SpawnRaw(ok, 0, uint32(len(ok)), 4096)),
		wazero.NewModuleConfig(), runtime.RunOptions{Spawner: spawner})
	// The child's streams are the caller's descriptors 0, 1 and 2 (see
	// ForkABI: what exec after dup2 needs), with wasmbox's WASI.
	if rt.OwnWASI() && (got.Stdio == nil || got.Stdio.Stdin == nil || got.Stdio.Stdout == nil || got.Stdio.Stderr == nil) {
		t.Errorf("spawner got streams %+v, want the caller's descriptors 0-2", got.Stdio)
	}
	got.Stdio = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("spawner got %+v, want %+v", got, want)
	}
}
