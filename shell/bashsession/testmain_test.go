package bashsession_test

import (
	"testing"

	"github.com/wasmbox/wasmbox/internal/testcache"
)

// TestMain keeps the tests' compile cache out of the user's cache
// directory (see package testcache).
func TestMain(m *testing.M) { testcache.Main(m) }
