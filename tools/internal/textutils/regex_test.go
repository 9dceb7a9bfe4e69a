package textutils

import (
	"errors"
	"strings"
	"testing"
)

func TestRegexMatch(t *testing.T) {
	const no = "\x00NOMATCH"
	tests := []struct {
		pat   string
		ere   bool
		icase bool
		in    string
		want  string // the leftmost-longest match, or no
	}{
		// BRE basics.
		{`abc`, false, false, "xxabcxx", "abc"},
		{`a.c`, false, false, "a-c", "a-c"},
		{`a*`, false, false, "aaab", "aaa"},
		{`*a`, false, false, "x*a", "*a"},       // leading * is literal
		{`^*a`, false, false, "*a", "*a"},       // * after ^ is literal
		{`\(*a\)`, false, false, "*a", "*a"},    // * after \( is literal
		{`a+b`, false, false, "a+b", "a+b"},     // + is literal in BRE
		{`a\+b`, false, false, "xaaab", "aaab"}, // \+ is GNU one-or-more
		{`a\?b`, false, false, "b", "b"},
		{`a?b`, false, false, "a?b", "a?b"},
		{`a{2}`, false, false, "a{2}", "a{2}"},
		{`a\{2\}`, false, false, "aaaa", "aa"},
		{`a\{2,\}`, false, false, "aaaa", "aaaa"},
		{`a\{,2\}b`, false, false, "aaab", "aab"},
		{`a\{1,3\}`, false, false, "aaaa", "aaa"},
		{`\(ab\)*c`, false, false, "ababc", "ababc"},
		{`(ab)`, false, false, "x(ab)", "(ab)"},
		{`a\|b`, false, false, "xb", "b"},
		{`a|b`, false, false, "a|b", "a|b"},
		{`x^`, false, false, "x^", "x^"}, // ^ not at start is literal
		{`$x`, false, false, "$x", "$x"}, // $ not at end is literal
		{`^ab$`, false, false, "ab", "ab"},
		{`^ab$`, false, false, "abc", no},
		{`\.`, false, false, "a.b", "."},
		{`a\{2`, false, false, "", "ERR:Unmatched \\{"},
		// Bracket expressions.
		{`[abc]`, false, false, "xxb", "b"},
		{`[^abc]`, false, false, "abcd", "d"},
		{`[]a]`, false, false, "x]", "]"},
		{`[^]a]`, false, false, "]ab", "b"},
		{`[a-c]*`, false, false, "abcd", "abc"},
		{`[[:digit:]]\+`, false, false, "ab123c", "123"},
		{`[[:alpha:][:digit:]]*`, false, false, "a1!", "a1"},
		{`[[:space:]]`, false, false, "a\tb", "\t"},
		{`[[:upper:]]`, false, false, "abC", "C"},
		{`[\]`, false, false, `a\b`, `\`}, // backslash is literal in brackets
		{`[a\]x`, false, false, `\x`, `\x`},
		{`[.]`, false, false, "a.b", "."},
		{`[*+?{]`, false, false, "a+", "+"},
		{`[a-]`, false, false, "-", "-"},
		{`[[.-.]]`, false, false, "a-b", "-"},
		{`[[=a=]]`, false, false, "ba", "a"},
		{`[^[:alnum:]]`, false, false, "ab-c", "-"},
		{`[[:bogus:]]`, false, false, "", "ERR:Invalid character class name"},
		{`[abc`, false, false, "", "ERR:Unmatched [, [^, [:, [., or [="},
		{`[z-a]`, false, false, "", "ERR:Invalid range end"},
		// ERE.
		{`a+`, true, false, "baaa", "aaa"},
		{`a?b`, true, false, "ab", "ab"},
		{`(ab)+`, true, false, "ababx", "abab"},
		{`a|bc`, true, false, "xbc", "bc"},
		{`a{2,3}`, true, false, "aaaa", "aaa"},
		{`a{`, true, false, "a{", "a{"}, // not an interval: literal
		{`a{x}`, true, false, "a{x}", "a{x}"},
		{`\(a\)`, true, false, "(a)", "(a)"},
		{`a)`, true, false, "a)", "a)"},
		{`(a`, true, false, "", "ERR:Unmatched ( or \\("},
		{`a**`, true, false, "aaa", "aaa"},
		{`(a|ab)(c|bcd)`, true, false, "abcd", "abcd"}, // longest, not first
		{`x*`, true, false, "abc", ""},
		// Escapes and anchors.
		{`\<foo\>`, false, false, "a foo b", "foo"},
		{`\bfoo`, false, false, "xfoo foo", "foo"},
		{`\w\+`, false, false, "  ab_1 ", "ab_1"},
		{`\W`, false, false, "ab c", " "},
		{`\s`, false, false, "ab c", " "},
		{`a\nb`, false, false, "a\nb", "a\nb"},
		{`a.b`, false, false, "a\nb", "a\nb"}, // . matches newline (sed)
		{`abc\`, false, false, "", "ERR:Trailing backslash"},
		{`a\)`, false, false, "", "ERR:Unmatched ) or \\)"},
		{`\(a`, false, false, "", "ERR:Unmatched ( or \\("},
		// Case folding.
		{`abc`, false, true, "xABC", "ABC"},
		{`[a-c]\+`, false, true, "xAbC", "AbC"},
		// Back-references (backtracking matcher).
		{`\(a\)\1`, false, false, "xaa", "aa"},
		{`\(.\)\1`, false, false, "abccd", "cc"},
		{`\([a-z]*\) \1`, false, false, "hello hello", "hello hello"},
		{`\(ab*\)c\1`, false, false, "abbcabb", "abbcabb"},
		{`^\(.*\)\1$`, false, false, "abcabc", "abcabc"},
		{`^\(.*\)\1$`, false, false, "abcab", no},
		{`(a|b)\1`, true, false, "abba", "bb"},
		{`\(a\)\1`, false, true, "aA", "aA"},
		{`\1`, false, false, "", "ERR:Invalid back reference"},
		{`\(a\)\2`, false, false, "", "ERR:Invalid back reference"},
	}
	for _, tc := range tests {
		re, err := compileRegex(tc.pat, regexOpts{ere: tc.ere, icase: tc.icase})
		if len(tc.want) > 4 && tc.want[:4] == "ERR:" {
			var rerr *RegexError
			if !errors.As(err, &rerr) || rerr.Msg != tc.want[4:] {
				t.Errorf("%q (ere=%v): err = %v, want %q", tc.pat, tc.ere, err, tc.want[4:])
			}
			continue
		}
		if err != nil {
			t.Errorf("%q (ere=%v): %v", tc.pat, tc.ere, err)
			continue
		}
		loc, err := re.FindSubmatchIndex([]byte(tc.in))
		if err != nil {
			t.Errorf("%q on %q: %v", tc.pat, tc.in, err)
			continue
		}
		got := no
		if loc != nil {
			got = tc.in[loc[0]:loc[1]]
		}
		if got != tc.want {
			t.Errorf("%q (ere=%v) on %q: got %q, want %q", tc.pat, tc.ere, tc.in, got, tc.want)
		}
	}
}

func TestRegexBacktrackBudget(t *testing.T) {
	re, err := compileRegex(`^\(a*\)*\1\1b$`, regexOpts{})
	if err != nil {
		t.Fatal(err)
	}
	re.budget = 10000
	in := []byte("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaxb")
	_, err = re.FindSubmatchIndex(in)
	if !errors.Is(err, ErrRegexTooComplex) {
		t.Fatalf("err = %v, want ErrRegexTooComplex", err)
	}
}

func TestRegexFindAll(t *testing.T) {
	for _, tc := range []struct {
		pat, in string
		want    []string
	}{
		{`x*`, "abc", []string{"", "", "", ""}},
		{`a*`, "baaac", []string{"", "aaa", ""}},
		{`\(a\)\1`, "aaaab", []string{"aa", "aa"}},
	} {
		re, err := compileRegex(tc.pat, regexOpts{})
		if err != nil {
			t.Fatal(err)
		}
		locs, err := re.FindAllSubmatchIndex([]byte(tc.in), -1)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range locs {
			got = append(got, tc.in[l[0]:l[1]])
		}
		if len(got) != len(tc.want) {
			t.Errorf("%q on %q: got %q want %q", tc.pat, tc.in, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%q on %q: got %q want %q", tc.pat, tc.in, got, tc.want)
				break
			}
		}
	}
}

func TestRegexPrefilterLiterals(t *testing.T) {
	for _, tc := range []struct {
		pat   string
		ere   bool
		icase bool
		want  string
	}{
		{`abc`, false, false, "abc"},
		{`err[a-z]*r`, false, false, "err"},
		{`error|warning`, true, false, "error,warning"},
		{`^[0-9]+ (kill|wasm)`, true, false, " "},
		{`(kill|wasm)x`, true, false, "x"},
		{`x*`, false, false, ""},
		{`a|b*`, true, false, ""},
		{`Hello`, false, true, "hello"},
		{`\(ab\)\{2\}`, false, false, "ab"},
	} {
		re, err := compileRegex(tc.pat, regexOpts{ere: tc.ere, icase: tc.icase})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range re.lits {
			got = append(got, string(l))
		}
		if s := strings.Join(got, ","); s != tc.want {
			t.Errorf("%q: literals %q, want %q", tc.pat, s, tc.want)
		}
	}
}
