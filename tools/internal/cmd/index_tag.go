//go:build wasmbox_index

package cmd

// indexBuild makes Multicall write the command index and exit (see
// Multicall); only `make wasm` builds with this tag.
const indexBuild = true
