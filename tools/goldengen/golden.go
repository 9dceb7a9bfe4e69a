package main

import "github.com/wasmbox/wasmbox/internal/golden"

// The golden case format lives in internal/golden, shared by goldengen
// and the tests that run the cases.
type (
	goldenCase    = golden.Case
	goldenSection = golden.Section
)

func parseGolden(data []byte) (*goldenCase, error) { return golden.Parse(data) }
