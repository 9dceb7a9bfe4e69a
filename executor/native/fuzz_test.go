package native

import (
	"errors"
	"strings"
	"testing"
)

// FuzzGitArgs: the argument check never panics, and an argument that is
// exactly a denied flag, or a denied long flag with a value, is always
// refused wherever it stands.
func FuzzGitArgs(f *testing.F) {
	f.Add("status\x00--porcelain", 0, 0)
	f.Add("-c\x00core.pager=sh\x00log", 1, 3)
	f.Add("commit\x00-am\x00msg", 2, 5)
	rule := GitRule()
	f.Fuzz(func(t *testing.T, joined string, pos, which int) {
		args := strings.Split(joined, "\x00")
		if _, err := checkArgs(rule, args); err != nil && !errors.Is(err, ErrDenied) {
			t.Fatalf("error %v is not a denial", err)
		}
		if pos < 0 {
			pos = -pos
		}
		if which < 0 {
			which = -which
		}
		flag := rule.DeniedFlags[which%len(rule.DeniedFlags)]
		if strings.HasPrefix(flag, "--") && which%2 == 1 {
			flag += "=x"
		}
		i := pos % (len(args) + 1)
		with := append(append(append([]string(nil), args[:i]...), flag), args[i:]...)
		if _, err := checkArgs(rule, with); !errors.Is(err, ErrDenied) {
			t.Fatalf("%q allowed", with)
		}
	})
}
