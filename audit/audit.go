// Package audit writes the audit trail of wasmbox and redacts secrets.
//
// # Audit log
//
// A [Logger] writes one JSON object per line (through log/slog's JSON
// handler) for every run, native exec and policy decision. The log is
// hash-chained: every line carries its sequence number ("seq"), the hash of
// the line before it ("prev", 64 zeros for the first) and its own hash
// ("hash", the SHA-256 of the line's bytes up to the `,"hash":` suffix).
// [Verify] reads a log back and reports the first line that was changed,
// removed, inserted or reordered. Cutting lines off the end is only visible
// against a stored [Head]. [OpenFile] appends to a log file under a file
// lock, so that several processes may write one chain at once.
//
// # Redaction policy
//
// One policy holds across wasmbox:
//
//   - The audit log is ALWAYS redacted. Every string value of an entry goes
//     through the Logger's [Redactor] (the values of secret host environment
//     variables, configured literals, well-known secret shapes). On top of
//     that, the script of an entry is parsed ([Redactor.RedactScript]) and
//     the values it assigns to secret-named variables (MYPASSWORD=x cmd,
//     export API_KEY=x, TOKEN="x", env TOKEN=x, --password=x, NAME=x in a
//     here-document) are replaced in the "script" field and wherever else
//     they appear in the entry; so are [Event.Secrets] (the sandbox passes
//     the values of the secret-named variables its embedder set, and those
//     the session's earlier scripts assigned). A script that does not parse
//     falls back to a regular expression over NAME=value.
//   - Output returned to a client (stdout, stderr, file contents, error
//     messages) is redacted ONLY when the embedder asks for it
//     (sandbox.WithRedactor, server.Config.Redactor, --redact-output), and
//     then on every channel, with the same secrets as the audit log.
//     Redacting output changes what an agent sees, so it is off by default.
//
// A variable name is secret when it matches [DefaultSecretNames] (or a
// [WithSecretNames] glob): names containing TOKEN, SECRET, PASSWORD,
// PASSWD, PASSPHRASE, CREDENTIAL, PRIVATE, APIKEY or API_KEY, names ending
// in _KEY, _PASS, _PWD, _CREDS, _PAT, _DSN or AUTH, and a few more; see
// [Redactor.IsSecretName]. Values shorter than 6 bytes are replaced only
// where they are assigned, never everywhere (see [WithMinSecretLen]).
//
// # Redaction
//
// A [Redactor] replaces the values of secret host environment variables,
// configured literals and well-known secret shapes; [Redactor.NewWriter]
// does the same on a stream without missing a secret split across writes.
package audit

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"
)

// Genesis is the "prev" hash of the first entry of a log.
const Genesis = "0000000000000000000000000000000000000000000000000000000000000000"

// Head identifies the last entry of a log: its sequence number and hash.
// The zero Head (Seq 0, Hash "") stands for an empty log.
type Head struct {
	Seq  uint64 `json:"seq"`
	Hash string `json:"hash"`
}

func (h Head) prevHash() string {
	if h.Hash == "" {
		return Genesis
	}
	return h.Hash
}

// Event kinds.
const (
	KindRun      = "run"      // one sandbox Run (a script)
	KindExec     = "exec"     // one command (wasm or native)
	KindDecision = "decision" // one policy decision
	KindSession  = "session"  // session created or closed
)

// Event is one audit entry. Zero-valued fields are left out of the line,
// except Exit once End is set.
type Event struct {
	Kind      string
	JobID     string
	Session   string
	Lane      string
	Slot      int // -1 or 0..n; written when Lane is set
	Argv      []string
	Script    string
	Start     time.Time
	End       time.Time
	Exit      int
	Class     string
	Truncated bool
	// Allowed and Reason record a policy decision (Kind "decision", or a
	// denied exec).
	Allowed *bool
	Reason  string
	// Attrs are extra attributes; string values are redacted too.
	Attrs []slog.Attr
	// Secrets are values to redact wherever they appear in this entry
	// (for example the values of secret-named variables the embedder
	// passed to the sandbox, or that earlier scripts of the session
	// assigned). They are never written.
	Secrets []string
}

// Allowed returns a pointer to b, for Event.Allowed.
func Allowed(b bool) *bool { return &b }

// LoggerOption configures a [Logger].
type LoggerOption func(*Logger)

// WithRedactor redacts every string value with r (default: a
// NewRedactor() over the host environment).
func WithRedactor(r *Redactor) LoggerOption { return func(l *Logger) { l.red = r } }

// WithClock sets the clock used for the "time" field (default time.Now).
func WithClock(now func() time.Time) LoggerOption { return func(l *Logger) { l.now = now } }

// WithHead continues an existing log whose last entry is h (for example
// after a restart, appending to the same file).
func WithHead(h Head) LoggerOption { return func(l *Logger) { l.head = h } }

// Logger writes the hash-chained audit log. It is safe for concurrent use;
// entries are written whole, one Write call per line.
type Logger struct {
	mu   sync.Mutex
	w    io.Writer
	buf  bytes.Buffer
	h    slog.Handler
	red  *Redactor
	cur  *Redactor // red and the secrets of the entry being written
	now  func() time.Time
	head Head
	// owned is the file OpenFile opened (Close closes it); file is set
	// when it is a regular file: entries are written under its lock.
	owned  *os.File
	file   *lockedFile
	closed bool
}

// New returns a Logger writing to w.
func New(w io.Writer, opts ...LoggerOption) *Logger {
	l := &Logger{w: w, now: time.Now}
	for _, o := range opts {
		o(l)
	}
	if l.red == nil {
		l.red = NewRedactor()
	}
	l.h = slog.NewJSONHandler(&l.buf, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Value.Kind() == slog.KindString {
				a.Value = slog.StringValue(l.cur.Redact(a.Value.String()))
			}
			return a
		},
	})
	return l
}

// Head returns the sequence number and hash of the last entry written.
func (l *Logger) Head() Head {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.head
}

// Log writes e as the next entry of the chain. On a write error the chain
// does not advance.
func (l *Logger) Log(ctx context.Context, e Event) error {
	if e.Kind == "" {
		return errors.New("audit: event without kind")
	}
	for _, a := range e.Attrs {
		if reserved[a.Key] {
			return fmt.Errorf("audit: attribute key %q is reserved", a.Key)
		}
	}
	// The values the script assigns to secret-named variables, and the
	// entry's secrets, are redacted from every field of the entry.
	red, script := l.red, e.Script
	var found []string
	if script != "" {
		script, found = red.RedactScript(script)
	}
	red = red.With(append(found, e.Secrets...)...)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errors.New("audit: log closed")
	}
	if l.file != nil {
		if err := l.lockAndSync(ctx); err != nil {
			return err
		}
		defer unlockFile(l.file.f)
	}
	l.cur = red
	r := slog.NewRecord(l.now(), slog.LevelInfo, e.Kind, 0)
	r.AddAttrs(slog.Uint64("seq", l.head.Seq+1), slog.String("prev", l.head.prevHash()))
	str := func(k, v string) {
		if v != "" {
			r.AddAttrs(slog.String(k, v))
		}
	}
	str("job_id", e.JobID)
	str("session", e.Session)
	if e.Lane != "" {
		r.AddAttrs(slog.String("lane", e.Lane), slog.Int("slot", e.Slot))
	}
	if e.Argv != nil {
		r.AddAttrs(slog.Any("argv", red.RedactAll(e.Argv)))
	}
	str("script", script)
	if !e.Start.IsZero() {
		r.AddAttrs(slog.Time("start", e.Start))
	}
	if !e.End.IsZero() {
		r.AddAttrs(slog.Time("end", e.End), slog.Int("exit", e.Exit))
		if !e.Start.IsZero() {
			r.AddAttrs(slog.Float64("duration_ms", float64(e.End.Sub(e.Start).Microseconds())/1000))
		}
	}
	str("class", e.Class)
	if e.Truncated {
		r.AddAttrs(slog.Bool("truncated", true))
	}
	if e.Allowed != nil {
		r.AddAttrs(slog.Bool("allowed", *e.Allowed))
	}
	str("reason", e.Reason)
	r.AddAttrs(e.Attrs...)

	l.buf.Reset()
	if err := l.h.Handle(ctx, r); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	line := bytes.TrimSuffix(l.buf.Bytes(), []byte("\n"))
	if len(line) < 2 || line[len(line)-1] != '}' {
		return errors.New("audit: unexpected handler output")
	}
	body := line[:len(line)-1]
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	out := make([]byte, 0, len(line)+80)
	out = append(out, body...)
	out = append(out, `,"hash":"`...)
	out = append(out, hash...)
	out = append(out, "\"}\n"...)
	if _, err := l.w.Write(out); err != nil {
		if l.file != nil {
			// Under the lock the file ended at size before this write:
			// cut off whatever part of the line reached it.
			if terr := l.file.f.Truncate(l.file.size); terr != nil {
				return fmt.Errorf("audit: %w (and cutting the partial line off: %v)", err, terr)
			}
		}
		return fmt.Errorf("audit: %w", err)
	}
	l.head = Head{Seq: l.head.Seq + 1, Hash: hash}
	if l.file != nil {
		l.file.size += int64(len(out))
	}
	return nil
}

var reserved = map[string]bool{
	"time": true, "level": true, "msg": true, "seq": true, "prev": true, "hash": true,
	"job_id": true, "session": true, "lane": true, "slot": true, "argv": true, "script": true,
	"start": true, "end": true, "exit": true, "duration_ms": true, "class": true,
	"truncated": true, "allowed": true, "reason": true,
}

// ErrTampered matches every error [Verify] reports about the log's content.
var ErrTampered = errors.New("audit: log tampered")

// VerifyError names the first broken line of a log (1-based).
type VerifyError struct {
	Line   int
	Reason string
}

func (e *VerifyError) Error() string {
	return fmt.Sprintf("audit: line %d: %s", e.Line, e.Reason)
}

// Is matches ErrTampered.
func (e *VerifyError) Is(target error) bool { return target == ErrTampered }

// Verify checks a whole log written by a [Logger] from its first entry. It
// returns nil for an intact (possibly empty) log, a *[VerifyError] (matching
// [ErrTampered]) for the first broken line, or the reader's error.
func Verify(r io.Reader) error {
	_, err := VerifyFrom(r, Head{})
	return err
}

// VerifyFrom checks a log whose first line follows the entry from (the zero
// Head for a log from its start) and returns the Head of its last line.
// Compare that with a stored Head to detect lines cut off the end.
func VerifyFrom(r io.Reader, from Head) (Head, error) {
	br := bufio.NewReader(r)
	head := from
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(line) == 0 && err == io.EOF {
			return head, nil
		}
		if err != nil && err != io.EOF {
			return head, fmt.Errorf("audit: reading line %d: %w", n, err)
		}
		if !bytes.HasSuffix(line, []byte("\n")) {
			return head, &VerifyError{n, "incomplete last line"}
		}
		line = line[:len(line)-1]
		i := bytes.LastIndex(line, []byte(`,"hash":"`))
		if i < 0 || !bytes.HasSuffix(line, []byte(`"}`)) {
			return head, &VerifyError{n, "no hash"}
		}
		body, got := line[:i], string(line[i+len(`,"hash":"`):len(line)-2])
		sum := sha256.Sum256(body)
		if want := hex.EncodeToString(sum[:]); got != want {
			return head, &VerifyError{n, "hash does not match the content"}
		}
		var fields struct {
			Seq  *uint64 `json:"seq"`
			Prev *string `json:"prev"`
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		if err := dec.Decode(&fields); err != nil {
			return head, &VerifyError{n, "not JSON: " + err.Error()}
		}
		if fields.Seq == nil || fields.Prev == nil {
			return head, &VerifyError{n, "no seq or prev"}
		}
		if *fields.Seq != head.Seq+1 {
			return head, &VerifyError{n, fmt.Sprintf("seq %d, want %d", *fields.Seq, head.Seq+1)}
		}
		if *fields.Prev != head.prevHash() {
			return head, &VerifyError{n, "prev does not match the previous entry"}
		}
		if strings.Count(string(line), `"seq":`) != 1 {
			return head, &VerifyError{n, "duplicate seq field"}
		}
		head = Head{Seq: *fields.Seq, Hash: got}
	}
}
