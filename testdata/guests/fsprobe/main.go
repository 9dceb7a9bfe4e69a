// Command fsprobe runs filesystem operations given as arguments and prints
// what it sees:
//
//	pwd            print the working directory
//	read PATH      print the file
//	write PATH S   write S to the file (created or truncated)
//	ls DIR         print the sorted names in DIR
//	stat PATH      print "PATH size mode"
package main

import (
	"fmt"
	"os"
	"sort"
)

func main() {
	a := os.Args[1:]
	for len(a) > 0 {
		var err error
		switch a[0] {
		case "pwd":
			var wd string
			wd, err = os.Getwd()
			fmt.Println(wd)
			a = a[1:]
		case "read":
			var b []byte
			b, err = os.ReadFile(a[1])
			os.Stdout.Write(b)
			a = a[2:]
		case "write":
			err = os.WriteFile(a[1], []byte(a[2]), 0o644)
			a = a[3:]
		case "ls":
			var es []os.DirEntry
			es, err = os.ReadDir(a[1])
			names := make([]string, 0, len(es))
			for _, e := range es {
				names = append(names, e.Name())
			}
			sort.Strings(names)
			for _, n := range names {
				fmt.Println(n)
			}
			a = a[2:]
		case "stat":
			var fi os.FileInfo
			if fi, err = os.Stat(a[1]); err == nil {
				fmt.Printf("%s %d %v\n", a[1], fi.Size(), fi.Mode())
			}
			a = a[2:]
		default:
			fmt.Fprintf(os.Stderr, "fsprobe: unknown op %q\n", a[0])
			os.Exit(2)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "fsprobe: %v\n", err)
			os.Exit(1)
		}
	}
}
