// Command wasmopt is the post-link step of `make wasm`: it merges the many
// small active data segments that the Go linker emits into a few large ones.
//
// The Go linker writes one data segment per run of non-zero bytes (it skips
// zero runs of 8 bytes or more), so a Go wasip1 program carries tens of
// thousands of segments, and a runtime spends most of each instantiation
// applying them one by one. Memory starts zeroed, so joining neighbouring
// segments and filling the gaps between them with zeros gives the same
// initial memory with far fewer copies.
//
// Usage:
//
//	wasmopt [-gap BYTES] [-min-pages N] [-v] -o OUT.wasm IN.wasm
//
// With -min-pages it also raises the initial size of memory 0 (see
// [wasmbin.SetMinMemory]), so that instantiation need not grow (copy) the
// memory while the Go runtime initializes.
//
// The work is done by [wasmbin.MergeDataSegments] and
// [wasmbin.SetMinMemory]; this command only reads and writes the files.
//
// Only active segments for memory 0 with a constant i32 offset are merged;
// a module with any other kind of segment (passive, another memory, a
// global offset) is written unchanged, because code may refer to segments
// by index. The data count section, when present, is kept consistent.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/wasmbox/wasmbox/internal/wasmbin"
)

func main() {
	os.Exit(doMain(os.Args[1:], os.Stderr))
}

func doMain(args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("wasmopt", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "output `file` (required)")
	gap := fs.Int("gap", wasmbin.DefaultGap, "join segments separated by at most this many zero `bytes`")
	verbose := fs.Bool("v", false, "print segment counts and sizes")
	minPages := fs.Uint("min-pages", 0, "raise the initial memory to at least this many 64 KiB `pages`")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *out == "" || fs.NArg() != 1 || *gap < 0 {
		fmt.Fprintln(stderr, "usage: wasmopt [-gap BYTES] [-min-pages N] [-v] -o OUT.wasm IN.wasm")
		return 2
	}
	in, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, "wasmopt:", err)
		return 1
	}
	res, st, err := optimize(in, *gap, uint32(min(*minPages, 65536)))
	if err != nil {
		fmt.Fprintf(stderr, "wasmopt: %s: %v\n", fs.Arg(0), err)
		return 1
	}
	if *verbose {
		fmt.Fprintf(stderr, "wasmopt: %d -> %d data segments, %d -> %d bytes\n", st.SegmentsIn, st.SegmentsOut, len(in), len(res))
	}
	if err := os.WriteFile(*out, res, 0o644); err != nil {
		fmt.Fprintln(stderr, "wasmopt:", err)
		return 1
	}
	return 0
}

// optimize merges the data segments of mod and, if minPages is not 0,
// raises its initial memory to at least minPages.
func optimize(mod []byte, gap int, minPages uint32) ([]byte, wasmbin.MergeStats, error) {
	res, st, err := wasmbin.MergeDataSegments(mod, gap)
	if err != nil || minPages == 0 {
		return res, st, err
	}
	secs, err := wasmbin.Sections(res)
	if err != nil {
		return nil, st, err
	}
	if secs, err = wasmbin.SetMinMemory(secs, minPages); err != nil {
		return nil, st, err
	}
	return wasmbin.Encode(secs), st, nil
}
