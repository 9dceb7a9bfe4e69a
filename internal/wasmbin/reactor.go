package wasmbin

import (
	"fmt"
	"strconv"
	"strings"
)

// The exports of a wasmbox reactor module (see PrepareReactor).
const (
	// ExportInitialize initializes the module (WASI reactor convention).
	ExportInitialize = "_initialize"
	// ExportRun runs one command after _initialize: () -> i32, the exit
	// status. It reads its arguments, environment and working directory
	// from WASI.
	ExportRun = "wasmbox_run"
	// GlobalExportPrefix prefixes the names under which PrepareReactor
	// exports the module's mutable globals, followed by the index.
	GlobalExportPrefix = "wasmbox.global."
)

// Reactor is a reactor module prepared for snapshots.
type Reactor struct {
	// Binary is the module without its data section and with its mutable
	// globals exported: instantiating it touches no memory, so that an
	// instance can start from a snapshot of another's memory.
	Binary []byte
	// Segments is the data section that Binary lacks, which a fresh
	// instance must write into its memory before _initialize.
	Segments []Segment
	// Globals names the exports of the mutable globals, in index order.
	Globals []string
	// MinPages is the initial memory size of Binary in pages.
	MinPages uint32
}

// PrepareReactor rewrites a wasmbox reactor module so that its instances
// can be started from a snapshot: the state after _initialize is all in its
// linear memory and mutable globals (a Go wasip1 c-shared module keeps
// nothing on the wasm stack between calls to its exports), and the
// rewritten module lets the host read and restore both.
//
// ok is false, and the module needs no error, when it is not such a
// module: it lacks ExportInitialize or ExportRun as functions, has a start
// function (it would run before the host writes the segments), has no
// memory of its own (see MinMemory), has a data count section (code may
// then address segments), a segment that is not an active one of memory 0
// at a constant offset, or already exports a name that starts with
// GlobalExportPrefix. A malformed module, or one whose segments do not fit
// in its initial memory, is an error.
func PrepareReactor(b []byte) (r *Reactor, ok bool, err error) {
	r, _, err = prepareReactor(b)
	return r, r != nil, err
}

// ReactorRefusal says why PrepareReactor does not take b as a reactor
// ("" when it does, or when b is malformed), for an error that names the
// cause: a module built as a wasmbox reactor that a build step changed
// (binaryen writes a data count section) would otherwise run as a command
// with no _start, which does nothing.
func ReactorRefusal(b []byte) string {
	_, why, _ := prepareReactor(b)
	return why
}

// prepareReactor is PrepareReactor, with the reason when the module is
// not a reactor.
func prepareReactor(b []byte) (r *Reactor, why string, err error) {
	secs, err := Sections(b)
	if err != nil {
		return nil, "", err
	}
	ei := Find(secs, SecExport)
	if ei < 0 {
		return nil, "it exports nothing", nil
	}
	exports, err := Exports(secs[ei].Body)
	if err != nil {
		return nil, "", err
	}
	have := map[string]bool{}
	for _, e := range exports {
		if strings.HasPrefix(e.Name, GlobalExportPrefix) {
			return nil, "it exports a name that starts with " + GlobalExportPrefix, nil
		}
		if e.Kind == KindFunc {
			have[e.Name] = true
		}
	}
	switch {
	case !have[ExportInitialize] || !have[ExportRun]:
		return nil, "it does not export both " + ExportInitialize + " and " + ExportRun + " as functions", nil
	case Find(secs, SecDataCount) >= 0:
		return nil, "it has a data count section (its code may address data segments)", nil
	case Find(secs, SecStart) >= 0:
		return nil, "it has a start function", nil
	}
	minPages, memOK, err := MinMemory(secs)
	if err != nil {
		return nil, "", err
	}
	if !memOK {
		return nil, "it has no single 32-bit, unshared memory of its own", nil
	}
	globals, err := Globals(secs)
	if err != nil {
		return nil, "", err
	}
	var segs []Segment
	if di := Find(secs, SecData); di >= 0 {
		s, segOK, err := DataSegments(secs[di].Body)
		if err != nil {
			return nil, "", err
		}
		if !segOK {
			return nil, "a data segment is not an active one of memory 0 at a constant offset", nil
		}
		segs = s
	}
	r = &Reactor{Segments: segs, MinPages: minPages}
	all := exports[:len(exports):len(exports)]
	for _, g := range globals {
		if g.Mutable {
			name := GlobalExportPrefix + strconv.FormatUint(uint64(g.Index), 10)
			r.Globals = append(r.Globals, name)
			all = append(all, Export{Name: name, Kind: KindGlobal, Index: g.Index})
		}
	}
	body := AppendUleb(nil, uint32(len(all)))
	for _, e := range all {
		body = AppendExport(body, e)
	}
	out := make([]Section, 0, len(secs))
	for _, s := range secs {
		switch s.ID {
		case SecData:
			continue
		case SecExport:
			s.Body = body
		}
		out = append(out, s)
	}
	for _, s := range segs {
		if uint64(s.Offset)+uint64(len(s.Data)) > uint64(minPages)*65536 {
			return nil, "", fmt.Errorf("%w: a data segment ends past the initial memory", ErrMalformed)
		}
	}
	r.Binary = Encode(out)
	return r, "", nil
}
