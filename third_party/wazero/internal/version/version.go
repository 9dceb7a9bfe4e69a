// Package version names the wazero build, for the compilation cache's key.
//
// wasmbox patch: this copy of wazero is part of the wasmbox module (imported
// as github.com/wasmbox/wasmbox/third_party/wazero), so the version that
// upstream reads from the build info of "github.com/tetratelabs/wazero" is
// never there, and wasmbox's own module version says nothing of the engine's
// code. The version is therefore a constant that names the upstream release
// and the patch level (PATCHES.md). Bump the patch level with every change
// that alters compiled code or the cache's file layout: a cache entry
// written by one build is then never read by another.
package version

// Default is the version reported when none was set; kept for callers.
const Default = "dev"

// Version is upstream's release and wasmbox's patch level.
const Version = "v1.12.0+wasmbox.27"

// GetWazeroVersion returns Version.
func GetWazeroVersion() string { return Version }
