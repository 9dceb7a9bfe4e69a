// Command hog allocates and touches memory 1 MiB at a time until the
// runtime refuses (or argv[1] MiB are reached), then prints the total.
//
// hog N hold FILE COUNT then appends that line to FILE instead and keeps
// its memory until FILE has COUNT lines (others append theirs): a group
// of hogs that hold their memory at the same time.
package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"
)

var keep [][]byte

func main() {
	limit := 1 << 30
	if len(os.Args) > 1 {
		limit, _ = strconv.Atoi(os.Args[1])
	}
	for i := 0; i < limit; i++ {
		b := make([]byte, 1<<20)
		for j := range b {
			b[j] = byte(j)
		}
		keep = append(keep, b)
	}
	line := fmt.Sprintf("allocated %d MiB\n", len(keep))
	if len(os.Args) < 5 || os.Args[2] != "hold" {
		fmt.Print(line)
		return
	}
	file := os.Args[3]
	count, _ := strconv.Atoi(os.Args[4])
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	f.WriteString(line)
	f.Close()
	for {
		b, _ := os.ReadFile(file)
		if bytes.Count(b, []byte("\n")) >= count {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
