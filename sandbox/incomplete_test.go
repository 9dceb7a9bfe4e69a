package sandbox

import "testing"

func TestIncomplete(t *testing.T) {
	for src, want := range map[string]bool{
		"echo hi\n":                false,
		"if true; then\n":          true,
		"if true; then\necho\n":    true,
		"if true; then echo; fi\n": false,
		"echo 'open\n":             true,
		"cat <<EOF\nline\n":        true,
		"f() {\n":                  true,
		"fi\n":                     false,
	} {
		if got := Incomplete(src); got != want {
			t.Errorf("Incomplete(%q) = %v, want %v", src, got, want)
		}
	}
}
