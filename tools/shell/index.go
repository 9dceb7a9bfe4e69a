//go:build wasmbox_index

package main

import "fmt"

func run() {
	for _, name := range []string{"bash", "dash", "sh"} {
		fmt.Println(name, "shell")
	}
}
