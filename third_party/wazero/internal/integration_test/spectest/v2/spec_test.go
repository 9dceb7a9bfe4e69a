package v2

import (
	"context"
	"testing"

	"github.com/wasmbox/wasmbox/third_party/wazero"
	"github.com/wasmbox/wasmbox/third_party/wazero/api"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/integration_test/spectest"
	"github.com/wasmbox/wasmbox/third_party/wazero/internal/platform"
)

const enabledFeatures = api.CoreFeaturesV2

func TestCompiler(t *testing.T) {
	if !platform.CompilerSupported() {
		t.Skip()
	}
	spectest.Run(t, spectest.TestdataFS(t, "v2"), context.Background(), wazero.NewRuntimeConfigCompiler().WithCoreFeatures(enabledFeatures))
}

// TestCompilerCloseOnContextDone runs the cases with the termination checks
// that WithCloseOnContextDone adds to loops and function entries, as the
// runtime of wasmbox's package runtime does for modules whose loops it
// cannot meter.
func TestCompilerCloseOnContextDone(t *testing.T) {
	if !platform.CompilerSupported() {
		t.Skip()
	}
	spectest.Run(t, spectest.TestdataFS(t, "v2"), context.Background(), wazero.NewRuntimeConfigCompiler().WithCoreFeatures(enabledFeatures).WithCloseOnContextDone(true))
}
