package native

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

// TestMain skips the package's Example where the OS jail is unavailable
// (no bubblewrap on a machine with only Go installed, or not Linux): the
// example runs git in the jail, and an example cannot skip itself. With
// WASMBOX_REQUIRE_JAIL set (CI) it runs, and fails without the jail.
func TestMain(m *testing.M) {
	flag.Parse()
	if _, err := findJail(); err != nil && os.Getenv("WASMBOX_REQUIRE_JAIL") == "" {
		skip := "^Example$"
		if s := flag.Lookup("test.skip").Value.String(); s != "" {
			skip = s + "|" + skip
		}
		if err := flag.Set("test.skip", skip); err != nil {
			fmt.Fprintln(os.Stderr, "executor/native:", err)
			os.Exit(2)
		}
		fmt.Fprintf(os.Stderr, "executor/native: Example skipped, no OS jail here: %v\n", err)
	}
	os.Exit(m.Run())
}
