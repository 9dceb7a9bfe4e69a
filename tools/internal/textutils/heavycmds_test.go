package textutils

// jq and awk live in packages of their own (built into their own tool
// modules, see tools/jq and tools/awk); importing them here registers them
// for this package's native golden tests, which cover every text command.
import (
	_ "github.com/wasmbox/wasmbox/tools/internal/awkcmd"
	_ "github.com/wasmbox/wasmbox/tools/internal/jqcmd"
)
