//go:build !linux

package native

import (
	"fmt"
	"runtime"
)

// findJail reports that there is no OS jail here: the jail is built from
// Linux namespaces (bubblewrap), which no other OS has. New then refuses to
// build a Runner unless Config.Unjailed is set.
func findJail() (osJail, error) {
	return nil, fmt.Errorf("%w: the OS jail (bubblewrap's namespaces) is Linux-only, and this is %s", ErrNoJail, runtime.GOOS)
}
