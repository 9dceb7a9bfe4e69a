//go:build !wasmbox_index

package cmd

// indexBuild is false in every build but the native index build of `make
// wasm` (see Multicall).
const indexBuild = false
