package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wasmbox/wasmbox/audit"
)

func init() { subcommands = append(subcommands, newAuditVerifyCmd) }

func newAuditVerifyCmd(a *app) *cobra.Command {
	var expect string
	cmd := &cobra.Command{
		Use:   "audit-verify [FILE|-]",
		Short: "Check the hash chain of an audit log",
		Long: `Read an audit log written by wasmbox (one JSON entry per line, each with
its sequence number, the hash of the entry before it and its own hash) and
check the chain. A changed, removed, inserted or reordered line is
reported with its line number and the exit status is 1. Lines cut off the
end are only visible against a head recorded earlier: pass it with
--expect-head SEQ:HASH. On success it prints the number of entries and the
head (SEQ:HASH) to record.`,
		Example: `  wasmbox audit-verify /var/log/wasmbox/audit.jsonl
  wasmbox audit-verify --expect-head 1042:9f86d08... audit.jsonl`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var want *audit.Head
			if expect != "" {
				h, err := parseHead(expect)
				if err != nil {
					return err
				}
				want = &h
			}
			name := "stdin"
			var head audit.Head
			var err error
			if len(args) == 1 && args[0] != "-" {
				// Under a shared lock: a line being appended is not
				// read as a cut one.
				name = args[0]
				head, err = audit.VerifyFile(cmd.Context(), name)
			} else {
				head, err = audit.VerifyFrom(a.stdin, audit.Head{})
			}
			if err != nil {
				var ve *audit.VerifyError
				if errors.As(err, &ve) {
					return a.fail(fmt.Errorf("%s: tampered: line %d: %s", name, ve.Line, ve.Reason))
				}
				return a.fail(err)
			}
			if want != nil && head != *want {
				return a.fail(fmt.Errorf("%s: head is %s, expected %s: entries were cut off or replaced", name, formatHead(head), formatHead(*want)))
			}
			fmt.Fprintf(a.stdout, "ok: %d entries, head %s\n", head.Seq, formatHead(head))
			return nil
		},
	}
	cmd.Flags().StringVar(&expect, "expect-head", "", "the head SEQ:HASH the log must end with")
	return cmd
}

func formatHead(h audit.Head) string {
	if h.Seq == 0 {
		return "0:"
	}
	return strconv.FormatUint(h.Seq, 10) + ":" + h.Hash
}

func parseHead(s string) (audit.Head, error) {
	seq, hash, ok := strings.Cut(s, ":")
	n, err := strconv.ParseUint(seq, 10, 64)
	if !ok || err != nil || (n > 0 && len(hash) != 64) || (n == 0 && hash != "") {
		return audit.Head{}, fmt.Errorf("bad --expect-head %q: want SEQ:HASH (hash: 64 hex digits)", s)
	}
	return audit.Head{Seq: n, Hash: hash}, nil
}
