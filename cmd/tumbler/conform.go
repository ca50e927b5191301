package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	_ "github.com/tumbler-dev/tumbler/clients" // the shipped clients
	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/lock/protocol"
	"github.com/tumbler-dev/tumbler/outcome"
	"github.com/tumbler-dev/tumbler/runner"
)

func (a *app) conformCmd() *cobra.Command {
	var spec protocol.Program
	var serverName string
	var ttl time.Duration
	var store string
	var asJSON, trace bool
	cmd := &cobra.Command{
		Use:   "conform --client NAME|DIR | --client-cmd CMD",
		Short: "Check a lock client program against the properties every lock must have, before trusting a verdict on it",
		Long: `conform starts real servers with a proxy on every link and runs a lock client
program — a shipped one (--client NAME), a client directory of your own
(--client DIR: its client.json and the program, see clients/PROTOCOL.md) or
a bare program without a manifest (--client-cmd) — through the checks every
tumbler lock passes: a lease's
fields, mutual exclusion under contention (eight client programs), refusal
to release another owner's lease, expiry, extend, and an unknown outcome
(info) for an acquire whose reply never came. It prints one line per check.

conform honours what the manifest declares: a lease carries a validity
within the TTL when it says "validity": true, and none otherwise. A bare
program declares nothing: each lease is judged by what it carries (a
validity within the TTL, or none: held until released), and every lease
must carry the same.

A check that the client's manifest documents as a deviation of its library
(Symfony's release of a lease it no longer holds reports success, say) is
shown as "deviation" with the reason; one that fails otherwise is FAIL. The
clients' logs and conform.json are kept under --store/conform/. --trace
prints, after the table, each check's transcript: every line tumbler and the
contenders exchanged (c3 > request, c3 < reply or step), as they went, so
that a failing client can be fixed from what it was sent and what it said.

Exit codes: 0 every check passed or deviated as documented, 1 a check
failed (or a documented deviation did not show), 254 bad input (a manifest
that breaks a rule, an option the client's manifest does not list, a
command that cannot start, or a client that refuses its init), 255 the
harness failed (a client that never answers its init, within 30 s).`,
		Example: `  tumbler conform --client redis-py
  tumbler conform --client redis-py --client-option timeout=null
  tumbler conform --client ./my-lock --trace
  tumbler conform --client-cmd "python3 my_client.py"`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (spec.Name == "" && spec.Dir == "") == (len(spec.Command) == 0) {
				return fmt.Errorf("give one of --client NAME|DIR (shipped: %s; or a client directory) and --client-cmd", strings.Join(protocol.Shipped(), ", "))
			}
			server, err := cluster.ParseServer(serverName)
			if err != nil {
				return fmt.Errorf("--server: %w", err)
			}
			ctx, stop := a.interruptible(cmd.Context())
			defer stop()
			res, err := runner.Conform(ctx, runner.ConformOptions{Client: spec, Server: server, TTL: ttl, Store: store, Log: a.log, Trace: trace})
			if err != nil {
				return failed(err)
			}
			if asJSON {
				b, _ := json.MarshalIndent(res, "", "  ")
				fmt.Fprintln(a.stdout, string(b))
			} else {
				a.conformTable(res)
				if trace {
					a.conformTrace(res)
				}
			}
			return exit(outcome.FindingCode(!res.Passed(), nil))
		},
	}
	fs := cmd.Flags()
	fs.Var(protocol.ClientFlag{P: &spec}, "client", "a shipped lock client ("+strings.Join(protocol.Shipped(), ", ")+"), or the path of a client directory of your own (client.json and the program)")
	fs.Var(protocol.CommandFlag{C: &spec.Command}, "client-cmd", "a bare lock client program, without a manifest, as a command line")
	fs.Var(protocol.OptionsFlag{O: &spec.Options}, "client-option", "an option of the client's library, key=value (the value JSON, or a string); repeat it for more")
	fs.StringVar(&serverName, "server", "", "software of the nodes: redis or valkey (default redis)")
	fs.DurationVar(&ttl, "ttl", 0, "TTL of the timing checks (default: the client's manifest's, else 1s)")
	fs.StringVar(&store, "store", "store", "directory the clients' logs and conform.json are kept in")
	fs.BoolVar(&asJSON, "json", false, "print conform.json instead of the table")
	fs.BoolVar(&trace, "trace", false, "print each check's transcript after the table (requests, replies, steps); also in trace/ beside conform.json")
	return cmd
}

func (a *app) conformTable(res runner.ConformResult) {
	fmt.Fprintf(a.stdout, "client %s (%s)\n\n", res.Client, res.Library)
	tw := tabwriter.NewWriter(a.stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tOUTCOME\tTOOK\tWHAT\tDETAIL")
	for _, c := range res.Checks {
		fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%s\n", c.Name, c.Outcome, c.Took.Round(10*time.Millisecond), c.What, c.Detail)
	}
	tw.Flush()
	verdict := "conforms"
	if !res.Passed() {
		verdict = "DOES NOT CONFORM"
	}
	fmt.Fprintf(a.stdout, "\n%s; logs and conform.json: %s\n", verdict, res.Dir)
}

// traceShown is how many lines of a check's transcript the terminal shows;
// the whole of it is in the check's trace file.
const traceShown = 200

func (a *app) conformTrace(res runner.ConformResult) {
	for _, c := range res.Checks {
		fmt.Fprintf(a.stdout, "\n== %s: %s (%d lines)\n", c.Name, c.Outcome, len(c.Transcript))
		for i, l := range c.Transcript {
			if i == traceShown {
				fmt.Fprintf(a.stdout, "… %d more lines: %s\n", len(c.Transcript)-traceShown, filepath.Join(res.Dir, "trace", c.Name+".txt"))
				break
			}
			fmt.Fprintln(a.stdout, l)
		}
	}
}
