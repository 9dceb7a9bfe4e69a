package runtime

import (
	"errors"
	"fmt"
	"strings"

	"github.com/wasmbox/wasmbox/internal/wasmbin"
)

// ErrModuleRefused is wrapped by the error of Compile for a module over
// one of the caps on what a module may make the host allocate (see Caps
// in the package documentation), or one too malformed to measure.
var ErrModuleRefused = errors.New("module refused")

// refused turns an error of wasmbin.ApplyCaps into one wrapping
// ErrModuleRefused, in one line: "module refused: function 12 declares
// 50000000 locals (cap 50000)" or "module refused: malformed wasm module:
// ...".
func refused(err error) error {
	if errors.Is(err, wasmbin.ErrRefused) {
		var ce *wasmbin.CapError
		if errors.As(err, &ce) {
			return &refusedError{msg: fmt.Sprintf("%s %d %s (cap %d)", ce.What, ce.N, ce.Unit, ce.Cap), cause: err}
		}
		// wasmbin's "module refused: why": Error adds the prefix.
		return &refusedError{msg: strings.TrimPrefix(err.Error(), wasmbin.ErrRefused.Error()+": "), cause: err}
	}
	return &refusedError{msg: err.Error(), cause: err}
}

type refusedError struct {
	msg   string
	cause error
}

func (e *refusedError) Error() string   { return ErrModuleRefused.Error() + ": " + e.msg }
func (e *refusedError) Unwrap() []error { return []error{ErrModuleRefused, e.cause} }

// checkCaps checks a module against the caps without rewriting it.
func checkCaps(b []byte) error {
	s, err := wasmbin.ModuleShape(b)
	if err != nil {
		return err
	}
	return wasmbin.DefaultCaps.Check(s)
}
