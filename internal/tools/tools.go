//go:build tools

// Package tools pins dependencies that packages of this module use, so that
// `go mod tidy` keeps them while layers are being built.
package tools

import (
	_ "github.com/benhoyt/goawk/interp"
	_ "github.com/google/uuid"
	_ "github.com/itchyny/gojq"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/spf13/afero"
	_ "github.com/spf13/cobra"
	_ "github.com/stretchr/testify/require"
	_ "github.com/wasmbox/wasmbox/third_party/wazero"
	_ "golang.org/x/mod/zip" // .ci/modzip, the module zip check
	_ "mvdan.cc/sh/v3/interp"
)
