//go:build !linux

package main

import "os"

// viaEngine: the resident engine is Linux's (it passes descriptors with
// SCM_RIGHTS and checks SO_PEERCRED); elsewhere run works in-process.
func viaEngine(args []string, stdin, stdout, stderr *os.File) (int, bool) { return 0, false }
