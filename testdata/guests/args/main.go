// Command args prints its argv (one "argv[i]=..." line each), the sorted
// environment (one "env:K=V" line each) and exits with the status in $EXIT.
package main

import (
	"fmt"
	"os"
	"sort"
	"strconv"
)

func main() {
	for i, a := range os.Args {
		fmt.Printf("argv[%d]=%s\n", i, a)
	}
	env := os.Environ()
	sort.Strings(env)
	for _, e := range env {
		fmt.Printf("env:%s\n", e)
	}
	if s := os.Getenv("STDERR"); s != "" {
		fmt.Fprintln(os.Stderr, s)
	}
	code, _ := strconv.Atoi(os.Getenv("EXIT"))
	os.Exit(code)
}
