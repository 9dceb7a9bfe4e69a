// Command big links a part of the standard library (json, regexp, gzip,
// sha256) so that its binary weighs about 3 MB: the cold-compile benchmark
// guest.
package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"regexp"
)

func main() {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	json.NewEncoder(zw).Encode(map[string]any{"a": 1})
	zw.Close()
	fmt.Println(regexp.MustCompile(`a+b`).FindString("xaab"), sha256.Sum256(buf.Bytes())[0])
}
