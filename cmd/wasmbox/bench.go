package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wasmbox/wasmbox/bench"
)

func init() { subcommands = append(subcommands, newBenchCmd) }

// newBenchCmd is `wasmbox bench`: the measurement suite of package bench,
// printed as a markdown table (or JSON).
func newBenchCmd(a *app) *cobra.Command {
	var (
		quick, asJSON bool
		only          []string
		binary        string
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure kill latency, command and pipeline cost against native, throughput, memory and responsiveness",
		Long: `bench runs the wasmbox measurement suite and prints a markdown table of
median and p99 per measurement, with the native equivalent (GNU tools,
/bin/bash, a Go loop) and the ratio where one exists.

  wasmbox bench            full run (a few minutes)
  wasmbox bench --quick    smoke run (well under a minute on an idle machine)
  wasmbox bench --only kill,command --json

Groups: kill, command, script, throughput, memory, sandbox, startup,
compute, tools, responsiveness. The exit status is 1 when a measurement failed
(its error is printed after the table).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOnly(only); err != nil {
				return err
			}
			ctx, cancel := signalContext(context.Background())
			defer cancel()
			if a.memoryBudget == 0 {
				a.memoryBudget = bench.MemoryBudget
			}
			eng, err := a.engine(ctx)
			if err != nil {
				return a.fail(err)
			}
			defer eng.Close(context.Background())
			if binary == "" {
				if binary, err = os.Executable(); err != nil {
					return a.fail(fmt.Errorf("bench: own executable: %w", err))
				}
			}
			if binary == "-" {
				binary = ""
			}
			rep, runErr := bench.Run(ctx, bench.Config{
				Quick: quick, Engine: eng, Binary: binary, Only: only, Progress: a.stderr,
			})
			if asJSON {
				err = rep.JSON(a.stdout)
			} else {
				err = rep.Markdown(a.stdout)
			}
			if err != nil {
				return a.fail(err)
			}
			if runErr != nil {
				return a.fail(runErr)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&quick, "quick", false, "few samples: a short smoke run")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	cmd.Flags().StringSliceVar(&only, "only", nil, "run only the groups whose name contains one of these (comma-separated)")
	cmd.Flags().StringVar(&binary, "binary", "", `wasmbox executable timed by the warm-start row (default: this one; "-" skips the row)`)
	return cmd
}

// checkOnly refuses an --only entry that selects no measurement group: a
// typo must not pass for a run that measured nothing.
func checkOnly(only []string) error {
	var groups []string
	for _, m := range bench.Measurements() {
		groups = append(groups, m.Group)
	}
	for _, o := range only {
		found := false
		for _, g := range groups {
			if o != "" && strings.Contains(g, o) {
				found = true
				break
			}
		}
		if !found {
			return fmt.Errorf("--only %q: no measurement group matches (groups: %s)", o, strings.Join(groups, ", "))
		}
	}
	return nil
}
