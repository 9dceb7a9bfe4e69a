//go:build !unix

package audit

import (
	"context"
	"os"
)

func lockFile(context.Context, *os.File) error { return ErrNoLock }

func unlockFile(*os.File) {}
