// Package bench measures wasmbox end to end: how fast a deadline kills a
// command, what one command and a pipeline cost against the native tools,
// throughput of concurrent sandboxes, memory per sandbox and per command,
// sandbox creation, Fork and Snapshot/Restore, compile and process start,
// the cost of the kill check in guest code, curl through the network
// broker against the host's curl, and whether the host stays
// responsive while guests spin. `wasmbox bench` prints its Report.
//
//	rep, err := bench.Run(ctx, bench.Config{Quick: true})
//	if err != nil { ... } // some measurement failed; rep has the others
//	rep.Markdown(os.Stdout)
//
// Every measurement is a small function of its own (see Measurements) that
// returns Rows; a Row holds the median and p99 of its samples and, where a
// native equivalent exists (GNU cat, /bin/bash, a Go loop), the native
// median and the ratio. Measurements check that what they time really
// happened (a kill ended in TIMEOUT, cat printed its input) and fail
// otherwise: a fast wrong answer is not a number.
//
// # Notes
//
// Numbers depend on the machine and its load: Report.Machine records nproc,
// the CPU model, the Go version and the load average at the start and end.
// Nothing in this package asserts a speed.
package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	goruntime "runtime"
	"sort"
	"strings"
	"time"

	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/sandbox"
)

// Kind says how the numbers of a Row are to be read.
type Kind string

const (
	// Duration rows hold seconds.
	Duration Kind = "duration"
	// Bytes rows hold bytes.
	Bytes Kind = "bytes"
)

// Row is one line of the report.
type Row struct {
	// Group is the measurement the row belongs to (e.g. "kill"), Name the
	// case (e.g. "sleep 100").
	Group string `json:"group"`
	Name  string `json:"name"`
	Kind  Kind   `json:"kind"`
	// N is the number of samples.
	N int `json:"n"`
	// Median and P99 of the samples (seconds or bytes, see Kind). With
	// fewer than 100 samples P99 is the largest sample.
	Median float64 `json:"median"`
	P99    float64 `json:"p99"`
	// Native is the median of the native equivalent, 0 when there is none;
	// Ratio is Median/Native.
	Native float64 `json:"native,omitempty"`
	Ratio  float64 `json:"ratio,omitempty"`
	// PerSecond is a throughput (runs per second), when the row measures one.
	PerSecond float64 `json:"per_second,omitempty"`
	// Note says what exactly was measured.
	Note string `json:"note,omitempty"`
}

// Machine describes where a report was made.
type Machine struct {
	NumCPU     int    `json:"nproc"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	CPU        string `json:"cpu"`
	GoVersion  string `json:"go"`
	OS         string `json:"os"`
	LoadStart  string `json:"load_start"`
	LoadEnd    string `json:"load_end"`
}

// Report is the result of Run.
type Report struct {
	Machine  Machine       `json:"machine"`
	Quick    bool          `json:"quick"`
	Started  time.Time     `json:"started"`
	Elapsed  time.Duration `json:"elapsed_ns"`
	Rows     []Row         `json:"rows"`
	Failures []string      `json:"failures,omitempty"`
}

// Config configures Run.
type Config struct {
	// Quick runs few samples of everything: a smoke run of well under a
	// minute on an idle machine.
	Quick bool
	// Engine runs the sandboxes; nil uses sandbox.DefaultEngine.
	Engine *sandbox.Engine
	// Binary is the wasmbox executable whose start is timed
	// (`BINARY run -c true`); empty skips that row.
	Binary string
	// Only, when not empty, restricts the run to the measurements whose
	// group name contains one of these strings.
	Only []string
	// Progress, when not nil, receives one line per measurement.
	Progress io.Writer
}

// A Measurement is one group of rows.
type Measurement struct {
	Group string
	Run   func(ctx context.Context, e *Env) ([]Row, error)
}

// Measurements lists every measurement of the suite, in report order.
func Measurements() []Measurement {
	return []Measurement{
		{"kill", measureKill},
		{"command", measureCommands},
		{"script", measureScripts},
		{"throughput", measureThroughput},
		{"memory", measureMemory},
		{"sandbox", measureSandbox},
		{"startup", measureStartup},
		{"compute", measureCompute},
		{"tools", measureTools},
		{"python", measurePython},
		{"bash", measureBash},
		{"net", measureNet},
		{"responsiveness", measureResponsiveness},
		{"cluster", measureCluster},
	}
}

// Env is what a measurement works with: the configuration, the engine and
// a scratch directory on the host for the native equivalents.
type Env struct {
	Config
	Engine *sandbox.Engine
	// Dir is a host scratch directory, removed when Run returns.
	Dir string
}

// reps returns quick or full depending on the configuration.
func (e *Env) reps(quick, full int) int {
	if e.Quick {
		return quick
	}
	return full
}

// span returns quick or full depending on the configuration.
func (e *Env) span(quick, full time.Duration) time.Duration {
	if e.Quick {
		return quick
	}
	return full
}

// MemoryBudget is the process memory budget of the bench's engine: one
// that does not bind. The rows measure speed and memory with many
// sandboxes at once (64 concurrent forks, 100 idle sandboxes), each of
// which reserves its file quota and its shell's memory up front, more than
// a machine-sized budget admits; admission itself is measured by
// bench/scripts/sessions.sh and tested by the sandbox and serve tests.
const MemoryBudget = 1 << 40

// Run runs the measurements selected by cfg and returns the report. A
// failed measurement is named in Report.Failures and in the error (errors
// joined); the other measurements still run.
func Run(ctx context.Context, cfg Config) (Report, error) {
	rep := Report{Quick: cfg.Quick, Started: time.Now().UTC()}
	rep.Machine = machine()
	eng := cfg.Engine
	if eng == nil {
		var err error
		if eng, err = sandbox.NewEngine(ctx, runtime.Config{MemoryBudget: MemoryBudget}); err != nil {
			return rep, fmt.Errorf("bench: engine: %w", err)
		}
		defer eng.Close(context.Background())
	}
	dir, err := os.MkdirTemp("", "wasmbox-bench-")
	if err != nil {
		return rep, fmt.Errorf("bench: %w", err)
	}
	defer os.RemoveAll(dir)
	env := &Env{Config: cfg, Engine: eng, Dir: dir}
	var errs []error
	for _, m := range Measurements() {
		if !selected(cfg.Only, m.Group) {
			continue
		}
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		start := time.Now()
		rows, err := m.Run(ctx, env)
		if err == nil {
			err = checkRows(rows)
		}
		if err != nil {
			err = fmt.Errorf("%s: %w", m.Group, err)
			errs = append(errs, err)
			rep.Failures = append(rep.Failures, err.Error())
		}
		for i := range rows {
			rows[i].Group = m.Group
		}
		rep.Rows = append(rep.Rows, rows...)
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "bench: %-15s %3d rows in %v\n", m.Group, len(rows), time.Since(start).Round(time.Millisecond))
		}
	}
	rep.Machine.LoadEnd = loadavg()
	rep.Elapsed = time.Since(rep.Started)
	return rep, errors.Join(errs...)
}

func selected(only []string, group string) bool {
	if len(only) == 0 {
		return true
	}
	for _, o := range only {
		if o != "" && strings.Contains(group, o) {
			return true
		}
	}
	return false
}

// checkRows rejects rows without numbers. Only byte deltas may be
// negative (memory returned to the OS during the measurement).
func checkRows(rows []Row) error {
	for _, r := range rows {
		for _, v := range []float64{r.Median, r.P99, r.Native, r.Ratio, r.PerSecond} {
			if math.IsNaN(v) || math.IsInf(v, 0) || (v < 0 && r.Kind != Bytes) {
				return fmt.Errorf("row %q: bad number %v", r.Name, v)
			}
		}
		if r.N < 1 {
			return fmt.Errorf("row %q: no samples", r.Name)
		}
	}
	return nil
}

// row builds a Row from samples (seconds or bytes) and the native samples
// (may be nil).
func row(name string, kind Kind, samples, native []float64, note string) Row {
	r := Row{Name: name, Kind: kind, N: len(samples), Note: note}
	r.Median, r.P99 = quantile(samples, 0.5), quantile(samples, 0.99)
	if len(native) > 0 {
		r.Native = quantile(native, 0.5)
		if r.Native > 0 {
			r.Ratio = r.Median / r.Native
		}
	}
	return r
}

// quantile returns the q-quantile of xs (nearest rank; 0 for none).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if q == 0.5 && len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	i := int(math.Ceil(q*float64(len(s)))) - 1
	if i < 0 {
		i = 0
	}
	return s[i]
}

func seconds(d time.Duration) float64 { return d.Seconds() }

// Markdown writes the report as a markdown table with a header naming the
// machine.
func (r Report) Markdown(w io.Writer) error {
	var b strings.Builder
	m := r.Machine
	fmt.Fprintf(&b, "Machine: %d CPUs (GOMAXPROCS %d), %s, %s, %s; load average %s at start, %s at end.\n",
		m.NumCPU, m.GOMAXPROCS, m.CPU, m.GoVersion, m.OS, m.LoadStart, m.LoadEnd)
	mode := "full"
	if r.Quick {
		mode = "quick"
	}
	fmt.Fprintf(&b, "Run: %s, %s, %v.\n\n", mode, r.Started.Format(time.RFC3339), r.Elapsed.Round(time.Second))
	b.WriteString("| group | measurement | n | median | p99 | native | ratio | notes |\n")
	b.WriteString("|---|---|--:|--:|--:|--:|--:|---|\n")
	for _, row := range r.Rows {
		native, ratio := "", ""
		if row.Native > 0 {
			native = format(row.Kind, row.Native)
			ratio = fmt.Sprintf("%.2fx", row.Ratio)
		}
		note := row.Note
		if row.PerSecond > 0 {
			note = strings.TrimSpace(fmt.Sprintf("%.0f runs/s; %s", row.PerSecond, note))
			note = strings.TrimSuffix(note, ";")
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %s | %s |\n", row.Group, escape(row.Name), row.N,
			format(row.Kind, row.Median), format(row.Kind, row.P99), native, ratio, escape(note))
	}
	for _, f := range r.Failures {
		fmt.Fprintf(&b, "\nFAILED: %s\n", f)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// JSON writes the report as indented JSON.
func (r Report) JSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func escape(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// format renders v: durations in ns/µs/ms/s, bytes in B/KiB/MiB.
func format(k Kind, v float64) string {
	switch k {
	case Bytes:
		switch {
		case math.Abs(v) >= 1<<20:
			return fmt.Sprintf("%.1f MiB", v/(1<<20))
		case math.Abs(v) >= 1<<10:
			return fmt.Sprintf("%.1f KiB", v/(1<<10))
		}
		return fmt.Sprintf("%.0f B", v)
	default:
		switch {
		case v >= 1:
			return fmt.Sprintf("%.2f s", v)
		case v >= 1e-3:
			return fmt.Sprintf("%.2f ms", v*1e3)
		case v >= 1e-6:
			return fmt.Sprintf("%.1f µs", v*1e6)
		}
		return fmt.Sprintf("%.0f ns", v*1e9)
	}
}

func machine() Machine {
	m := Machine{
		NumCPU: goruntime.NumCPU(), GOMAXPROCS: goruntime.GOMAXPROCS(0),
		GoVersion: goruntime.Version(), OS: goruntime.GOOS + "/" + goruntime.GOARCH,
		CPU: "unknown", LoadStart: loadavg(),
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
