// Command hog allocates and touches memory 1 MiB at a time until the
// runtime refuses (or argv[1] MiB are reached), then prints the total.
package main

import (
	"fmt"
	"os"
	"strconv"
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
	fmt.Printf("allocated %d MiB\n", len(keep))
}
