package engine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	goruntime "runtime"
	"strings"
	"testing"
)

// TestFrameRoundTrip: what WriteFrame writes, ReadFrame reads back, frame
// after frame on one stream.
func TestFrameRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	req := Request{Op: "run", Key: "k", Args: []string{"run", "-c", "echo ü\x00"}, Dir: "/d", Env: []string{"A=b"}}
	rep := Reply{Done: true, Exit: 7, SIGPIPE: true}
	if err := WriteFrame(&buf, req); err != nil {
		t.Fatal(err)
	}
	if err := WriteFrame(&buf, rep); err != nil {
		t.Fatal(err)
	}
	var req2 Request
	var rep2 Reply
	if err := ReadFrame(&buf, &req2, MaxRequestFrame); err != nil {
		t.Fatal(err)
	}
	if err := ReadFrame(&buf, &rep2, MaxControlFrame); err != nil {
		t.Fatal(err)
	}
	if req2.Op != req.Op || req2.Key != req.Key || strings.Join(req2.Args, "|") != strings.Join(req.Args, "|") || req2.Dir != req.Dir || req2.Env[0] != "A=b" {
		t.Fatalf("request: %+v, want %+v", req2, req)
	}
	if rep2 != rep {
		t.Fatalf("reply: %+v, want %+v", rep2, rep)
	}
	if err := ReadFrame(&buf, &rep2, MaxControlFrame); err != io.EOF {
		t.Fatalf("after the last frame: %v, want EOF", err)
	}
}

// TestFrameLimits: a header naming more than the reader's limit is
// refused before any of the body is read; a frame too long to send is
// refused by the writer.
func TestFrameLimits(t *testing.T) {
	var buf bytes.Buffer
	WriteFrame(&buf, Request{Args: []string{strings.Repeat("x", MaxControlFrame)}})
	n := buf.Len()
	var req Request
	if err := ReadFrame(&buf, &req, MaxControlFrame); !errors.Is(err, ErrFrameTooLong) {
		t.Fatalf("a control frame of %d bytes: %v, want ErrFrameTooLong", n, err)
	}
	if buf.Len() != n-4 {
		t.Fatalf("the reader took %d bytes of the refused body", n-4-buf.Len())
	}
	// Exactly at the limit is fine.
	body := []byte(`{"op":"` + strings.Repeat("y", 100) + `"}`)
	frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
	if err := ReadFrame(bytes.NewReader(append(frame, body...)), &req, uint32(len(body))); err != nil {
		t.Fatal(err)
	}
	if err := ReadFrame(bytes.NewReader(append(frame, body...)), &req, uint32(len(body)-1)); !errors.Is(err, ErrFrameTooLong) {
		t.Fatalf("one byte over: %v", err)
	}
	if _, err := AppendFrame(nil, Request{Args: []string{strings.Repeat("z", MaxRequestFrame)}}); !errors.Is(err, ErrFrameTooLong) {
		t.Fatalf("writing a frame over MaxRequestFrame: %v", err)
	}
}

// TestFrameBad: cut headers, cut bodies, bodies that are not JSON or not
// the frame's type are errors, never a panic or a zero value taken as a
// request.
func TestFrameBad(t *testing.T) {
	for name, b := range map[string][]byte{
		"empty":       nil,
		"cut header":  {0, 0},
		"cut body":    append([]byte{0, 0, 0, 10}, `{"op":`...),
		"not JSON":    append([]byte{0, 0, 0, 2}, "{x"...),
		"wrong type":  append([]byte{0, 0, 0, 8}, `{"op":1}`...),
		"not object":  append([]byte{0, 0, 0, 2}, "[]"...),
		"empty body":  {0, 0, 0, 0},
		"max header":  {0xff, 0xff, 0xff, 0xff},
		"trailing":    append([]byte{0, 0, 0, 4}, "{} x"...),
		"nul in body": append([]byte{0, 0, 0, 3}, "{\x00}"...),
	} {
		var req Request
		if err := ReadFrame(bytes.NewReader(b), &req, MaxRequestFrame); err == nil {
			t.Errorf("%s: accepted as %+v", name, req)
		}
	}
}

// TestFrameAllocation: a frame header is only a claim: the reader
// allocates as the bytes arrive, not the size the header names (else
// connections that send a header of MaxRequestFrame and stop hold 8 MiB
// each).
func TestFrameAllocation(t *testing.T) {
	hdr := binary.BigEndian.AppendUint32(nil, MaxRequestFrame) // 8 MiB claimed...
	r := bytes.NewReader(append(hdr, `{"op":`...))             // ...a few bytes sent
	var before, after goruntime.MemStats
	goruntime.ReadMemStats(&before)
	var req Request
	err := ReadFrame(r, &req, MaxRequestFrame)
	goruntime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("a cut frame was accepted")
	}
	if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
		t.Fatalf("reading a cut frame allocated %d bytes", d)
	}
}
