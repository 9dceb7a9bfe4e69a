package main

import (
	"io"

	"golang.org/x/term"

	"github.com/wasmbox/wasmbox/internal/termsafe"
)

// terminalSafe returns w wrapped in a termsafe.Writer when w is a
// terminal, else w itself. The guest's output (and the shell's prompt,
// which shows the guest's working directory) goes through it: escape
// sequences that write the clipboard (OSC 52), make the terminal type
// into stdin (CSI 6n, CSI c, CSI t, DECRQSS), set titles or hyperlinks,
// or change the terminal's modes are shown escaped ("^[]52;..."); colours
// and cursor movement pass. A pipe or a file gets the bytes unchanged.
func terminalSafe(w io.Writer) io.Writer {
	f, ok := w.(interface{ Fd() uintptr })
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return w
	}
	return termsafe.NewWriter(w)
}

// flushTerminalSafe writes out what the terminalSafe writers among ws
// hold of a sequence the guest left unfinished, escaped.
func flushTerminalSafe(ws ...io.Writer) {
	for _, w := range ws {
		if t, ok := w.(*termsafe.Writer); ok {
			t.Flush()
		}
	}
}
