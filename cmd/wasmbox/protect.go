package main

import (
	"fmt"
	"os"

	"github.com/wasmbox/wasmbox/internal/engine"
	"github.com/wasmbox/wasmbox/runtime"
	"github.com/wasmbox/wasmbox/sandbox"
	"github.com/wasmbox/wasmbox/vfs"
)

// protected lists the host paths that no --mount may cover (see
// sandbox.CheckMount): the compilation cache in use and the default one
// (a guest that read the default cache's key could forge entries for every
// later run), the resident engine's directory, the wasmbox executable, and
// the files named by the flags given (paths relative to the caller's
// directory). The sandbox adds its engine's cache on its own.
func (a *app) protected(files ...sandbox.ProtectedPath) []sandbox.ProtectedPath {
	ps := []sandbox.ProtectedPath{{Path: runtime.DefaultCacheDir(), What: sandbox.CacheWhat}}
	if a.cacheDir != "" {
		ps = append(ps, sandbox.ProtectedPath{Path: a.hostPath(a.cacheDir), What: sandbox.CacheWhat})
	}
	ps = append(ps, sandbox.ProtectedPath{Path: engine.DirPath(), What: "the resident engine's directory (its sockets)"})
	if exe, err := os.Executable(); err == nil {
		ps = append(ps, sandbox.ProtectedPath{Path: exe, What: "the wasmbox executable"})
	}
	for _, f := range files {
		if f.Path != "" {
			f.Path = a.hostPath(f.Path)
			ps = append(ps, f)
		}
	}
	return ps
}

// runtimeConfig is the runtime configuration of the root flags.
func (a *app) runtimeConfig() (runtime.Config, error) {
	cfg := runtime.Config{CacheDir: a.cacheDir, DisableCache: a.noCache, MemoryBudget: a.memoryBudget}
	if a.cacheMax != "" {
		n, err := runtime.ParseBytes(a.cacheMax)
		if err != nil || n == 0 || n > 1<<62 {
			return cfg, fmt.Errorf("--cachemax %q: want a positive size such as 2GiB", a.cacheMax)
		}
		cfg.CacheMaxBytes = int64(n)
	}
	return cfg, nil
}

// checkMounts refuses, before anything is compiled, a --mount spec that
// covers one of protected (sandbox.New checks again, with its engine's
// cache). A spec that does not parse is left for the options to report.
func (a *app) checkMounts(specs []string, protected []sandbox.ProtectedPath) error {
	for _, m := range specs {
		spec, err := vfs.ParseMountSpec(m)
		if err != nil {
			continue
		}
		if err := sandbox.CheckMount(a.hostPath(spec.Host), protected); err != nil {
			return err
		}
	}
	return nil
}
