package sandbox

import (
	"strings"

	"github.com/wasmbox/wasmbox/internal/sh/syntax"
)

// Incomplete reports whether src is an unfinished bash fragment that more
// lines could complete: an open quote, a here-document, or a compound
// command without its end. An interactive front end keeps reading while it
// is true. A plain syntax error is not incomplete.
func Incomplete(src string) bool {
	_, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	return err != nil && syntax.IsIncomplete(err)
}
