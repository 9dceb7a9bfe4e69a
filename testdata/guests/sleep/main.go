// Command sleep sleeps for the duration in argv[1] (default one hour) and
// prints "woke" afterwards: a guest that blocks in poll_oneoff.
package main

import (
	"fmt"
	"os"
	"time"
)

func main() {
	d := time.Hour
	if len(os.Args) > 1 {
		var err error
		if d, err = time.ParseDuration(os.Args[1]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	time.Sleep(d)
	fmt.Println("woke")
}
