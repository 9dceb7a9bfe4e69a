package engine

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

const (
	// MaxRequestFrame bounds a client's first frame (a command line and
	// an environment: Linux's ARG_MAX is 2 MiB).
	MaxRequestFrame = 8 << 20
	// MaxControlFrame bounds the frames that follow: cancels from the
	// client, replies from the engine.
	MaxControlFrame = 64 << 10
)

// Request is a frame a client sends. The first has Op; for Op "run" it
// carries the client's descriptors (stdin pipe, stdout, stderr). A later
// frame with Cancel set cancels the run (the client got SIGINT or
// SIGTERM); the client closing the connection cancels it too.
type Request struct {
	Op     string   `json:"op"` // run, status, stop
	Key    string   `json:"key,omitempty"`
	Args   []string `json:"args,omitempty"`
	Dir    string   `json:"dir,omitempty"`
	Env    []string `json:"env,omitempty"`
	Cancel bool     `json:"cancel,omitempty"`
}

// Reply is a frame the engine sends: Accept (the run is taken: fill
// stdin), or Fallback (run it yourself; nothing was read or written), then
// Done with the exit status.
type Reply struct {
	Accept   bool    `json:"accept,omitempty"`
	Fallback string  `json:"fallback,omitempty"`
	Done     bool    `json:"done,omitempty"`
	Exit     int     `json:"exit"`
	SIGPIPE  bool    `json:"sigpipe,omitempty"`
	Status   *Status `json:"status,omitempty"`
}

// Status is what `wasmbox engine status` prints, and what `engine stop`
// reports it stopped.
type Status struct {
	PID     int       `json:"pid"`
	Key     string    `json:"key"`
	Build   string    `json:"build,omitempty"`
	Exe     string    `json:"exe,omitempty"`
	Socket  string    `json:"socket"`
	Started time.Time `json:"started"`
	Runs    int64     `json:"runs"`
	Active  int64     `json:"active"`
	Idle    string    `json:"idle_timeout"`
	// RSS is the engine's resident memory in bytes when it answered.
	RSS int64 `json:"rss_bytes,omitempty"`
	// Trims counts the times the engine gave its memory back after
	// Config.Trim without a run.
	Trims int64 `json:"trims,omitempty"`
}

// ErrFrameTooLong is returned for a frame whose header names more bytes
// than the reader's limit.
var ErrFrameTooLong = errors.New("engine: frame too long")

// WriteFrame writes v as one frame.
func WriteFrame(w io.Writer, v any) error {
	b, err := AppendFrame(nil, v)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// AppendFrame appends v's frame to buf.
func AppendFrame(buf []byte, v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if uint64(len(b)) > MaxRequestFrame {
		return nil, fmt.Errorf("%w: %d bytes", ErrFrameTooLong, len(b))
	}
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(b)))
	return append(buf, b...), nil
}

// ReadFrame reads a frame of at most max bytes into v. The buffer grows
// as the bytes arrive: a header alone, naming max bytes, costs nothing.
func ReadFrame(r io.Reader, v any, max uint32) error {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return err
	}
	n := binary.BigEndian.Uint32(h[:])
	if n > max {
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrFrameTooLong, n, max)
	}
	b, err := io.ReadAll(io.LimitReader(r, int64(n)))
	if err != nil {
		return err
	}
	if len(b) < int(n) {
		return io.ErrUnexpectedEOF
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("engine: bad frame: %v", err)
	}
	return nil
}
