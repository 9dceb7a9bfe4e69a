package jqcmd

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wasmbox/wasmbox/tools/internal/cmd"
)

// jqScanCases are JSON streams, valid and not, at the edges of what
// json.Decoder takes: adjacent texts, numbers that end early, escapes,
// control bytes, invalid UTF-8, truncation, nesting.
var jqScanCases = []string{
	``, ` `, "\n\t\r ", `1`, `01`, `-0`, `-`, `-01`, `1.`, `1.5`, `.5`, `1e`, `1e+`, `1e5`, `1E-5`, `1e5e5`, `0.5.5`,
	`1 2`, `12`, `-1-2`, `1true`, `truefalse`, `tru`, `nul`, `null`, `nulll`, `"a""b"`, `{}{}`, `[][]`, `{}[]1"x"`,
	`"`, `"\"`, `"\u00e9"`, `"\u00g9"`, `"\u00e"`, `"\x"`, `"\/\b\f\n\r\t\\\""`, "\"a\x01\"", "\"a\x7f\"", "\"\xff\xfe\"",
	`[1,2]`, `[1 2]`, `[1,]`, `[,1]`, `[01]`, `[0-1]`, `[-]`, `{"a":1}`, `{"a" : 1 , "b" : [ ] }`, `{"a"}`, `{"a":}`,
	`{a:1}`, `{"a":1,}`, `{,"a":1}`, `{"a":1 "b":2}`, `{"a":1]`, `[1}`, `[[[]]]`, `[[[]]`, `]`, `}`, `:`, `,`,
	"\xef\xbb\xbf{}", `{"a":[{"b":{"c":[1,{"d":null}]}}]} [true,false] "x"`, `[1,2]x`, `{} }`, " [ 1 , { \"k\" : \"v\" } ] ",
	strings.Repeat("[", 9999) + strings.Repeat("]", 9999), strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001), strings.Repeat("{\"a\":", 50) + "1" + strings.Repeat("}", 50),
}

// decoderEnds reads s with json.Decoder as jq did: the end offset of
// each text, and whether it read all of s without an error.
func decoderEnds(s []byte) ([]int, bool) {
	d := json.NewDecoder(bytes.NewReader(s))
	d.UseNumber()
	var ends []int
	for {
		var raw json.RawMessage
		err := d.Decode(&raw)
		if err == io.EOF {
			return ends, true
		}
		if err != nil {
			return ends, false
		}
		ends = append(ends, int(d.InputOffset()))
	}
}

// TestJQScanTextsAgreesWithDecoder: whatever jqScanTexts accepts,
// json.Decoder reads without an error into the same texts (same end
// offsets). jqScanTexts may refuse what json.Decoder takes (the fast path
// then falls back to it), but must take the common case. Checked on the
// edge cases above and on random mutations of valid documents.
func TestJQScanTextsAgreesWithDecoder(t *testing.T) {
	check := func(s []byte) {
		t.Helper()
		ends, ok := jqScanTexts(s)
		dends, dok := decoderEnds(s)
		if ok && (!dok || !equalInts(ends, dends)) {
			t.Fatalf("%.80q: scanner takes it (ends %v), json.Decoder: ok %v, ends %v", s, ends, dok, dends)
		}
	}
	for _, c := range jqScanCases {
		check([]byte(c))
	}
	for _, c := range []string{`1 2`, `{"a":[1,{"b":"c\n"}]} [true,false,null] -1.5e3`, `"\u00e9\/"`, `01`, `truefalse`} {
		if _, ok := jqScanTexts([]byte(c)); !ok {
			t.Errorf("%q: scanner refuses what json.Decoder takes", c)
		}
	}
	rng := rand.New(rand.NewSource(1))
	alphabet := []byte("{}[],:\"\\ \n01-.eE+tfnrulas\x01\xff")
	seeds := []string{`{"a":1,"b":[true,false,null,"x\"y",-0.5e+3]}`, `[{"k":"v"},{"k":[1,2,{"z":{}}]}] 7 "s"`, `[]{}"a"1`}
	for i := 0; i < 200000; i++ {
		b := []byte(seeds[i%len(seeds)])
		for n := rng.Intn(3) + 1; n > 0; n-- {
			p := rng.Intn(len(b) + 1)
			switch rng.Intn(3) {
			case 0: // insert
				b = append(b[:p], append([]byte{alphabet[rng.Intn(len(alphabet))]}, b[p:]...)...)
			case 1: // delete
				if p < len(b) {
					b = append(b[:p], b[p+1:]...)
				}
			case 2: // replace
				if p < len(b) {
					b[p] = alphabet[rng.Intn(len(alphabet))]
				}
			}
		}
		check(b)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestJQFileInputLikeStdin: a file operand (read whole, scanned, parsed
// without json.Decoder when valid) prints what the same bytes on stdin
// (json.Decoder) print, output and errors with their line numbers alike,
// for valid and invalid inputs and a filter that fails on some inputs.
func TestJQFileInputLikeStdin(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	fn, _ := cmd.Lookup("jq")
	inputs := append([]string{
		"{\"a\":1}\n{\"a\":\"x\"}\n\n{\"a\":[1]}\n",
		"[1,2]\n\n\n3\n\"s\"\n{\"a\":{}}",
		"{\"a\":1}\n{\"a\":2\n\n[}\n{\"a\":3}\n",
		"1\n2\n\n3 x\n4\n",
		strings.Repeat("{\"a\":[1,2,{\"b\":\"c\"}]}\n", 400) + "{\"a\" 1}\n" + strings.Repeat("[5]\n", 300),
		strings.Repeat("{\"a\":\"\\u00e9\"}\n", 300),
	}, jqScanCases...)
	for i, in := range inputs {
		if err := os.WriteFile(filepath.Join(dir, "in.json"), []byte(in), 0o644); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{".", ".a", ".[]?", "input_line_number? // 0"} {
			run := func(args []string, stdin string) string {
				var out, errb bytes.Buffer
				st := fn(&cmd.Env{Args: append([]string{"jq", "-c"}, args...), Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb})
				return out.String() + "|" + strings.ReplaceAll(errb.String(), "in.json", "<stdin>") + "|" + string(rune('0'+st))
			}
			file, stdin := run([]string{f, "in.json"}, ""), run([]string{f}, in)
			if file != stdin {
				t.Errorf("input %d (%.60q), filter %q:\nfile:  %.400q\nstdin: %.400q", i, in, f, file, stdin)
			}
		}
	}
}
