package vfs_test

import (
	"testing"

	"github.com/wasmbox/wasmbox/vfs"
	"github.com/wasmbox/wasmbox/vfs/vfstest"
)

func TestConformanceMemFS(t *testing.T) {
	vfstest.Run(t, func(t *testing.T) vfs.FS { return vfs.NewMemFS() })
}

func TestConformanceVFS(t *testing.T) {
	vfstest.Run(t, func(t *testing.T) vfs.FS {
		v := vfs.New(vfs.NewMemFS())
		if err := v.Mount("/mnt/other", vfs.NewMemFS()); err != nil {
			t.Fatal(err)
		}
		return v
	})
}

// The namespace under test lives entirely in a mounted filesystem.
func TestConformanceVFSSubmount(t *testing.T) {
	vfstest.Run(t, func(t *testing.T) vfs.FS {
		inner := vfs.New(vfs.NewMemFS())
		outer := vfs.New(inner)
		return outer
	})
}

func hostFS(t *testing.T, mode vfs.MountMode) vfs.FS {
	t.Helper()
	h, err := vfs.HostDir(t.TempDir(), mode)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.(*vfs.HostFS).Close() })
	return h
}

// A read-write host mount refuses absolute symlinks (see HostDir).
var rwOptions = vfstest.Options{RelativeSymlinksOnly: true}

func TestConformanceHostRW(t *testing.T) {
	vfstest.RunOptions(t, func(t *testing.T) vfs.FS { return hostFS(t, vfs.ReadWrite) }, rwOptions)
}

func TestConformanceHostCOW(t *testing.T) {
	vfstest.Run(t, func(t *testing.T) vfs.FS { return hostFS(t, vfs.CopyOnWrite) })
}

func TestConformanceMountedHostRW(t *testing.T) {
	vfstest.RunOptions(t, func(t *testing.T) vfs.FS { return vfs.New(hostFS(t, vfs.ReadWrite)) }, rwOptions)
}

func TestConformanceMountedCOW(t *testing.T) {
	vfstest.Run(t, func(t *testing.T) vfs.FS { return vfs.New(hostFS(t, vfs.CopyOnWrite)) })
}
