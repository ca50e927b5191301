package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/tumbler-dev/tumbler/access"
	"github.com/tumbler-dev/tumbler/audit"
	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/outcome"
)

func (a *app) auditCmd() *cobra.Command {
	var f auditFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "audit --external FILE | --node ADDR... [--sentinel ADDR...]",
		Short: "Read a deployment's settings and name the catalog rows its risks expose locks to",
		Long: `audit reads a Redis or Valkey deployment's settings — CONFIG GET, INFO, ROLE,
TIME, SENTINEL MASTERS, CLUSTER INFO and the server version; it changes
nothing — and prints each setting that exposes a lock to a failure mode,
next to the catalog rows that demonstrate it: persistence and appendfsync
(the restart rows), min-replicas-to-write without WAIT (the failover and
split-brain rows), Sentinel's down-after-milliseconds and failover-timeout
against the lock TTL, a maxmemory-policy that can evict lock keys, a
primary or replicas without persistence, clocks off the auditor's, cluster
mode. Reproduce a row against the same deployment with
"tumbler reproduce ROW --external FILE".

The nodes come from an external configuration (--external, the file the
external provider reads, with its "access" block) or from --node and
--sentinel; --auth-*/--admin-*/--tls-* log in (CONFIG GET needs the admin's
rights: the admin's credentials are used where given).

Exit codes: 0 nothing risky, 1 something risky, 254 bad arguments or a login
refused, 255 a node could not be read.`,
		Example: `  tumbler audit --external deploy/external.json
  tumbler audit --node 10.0.0.11:6379 --node 10.0.0.12:6379 --sentinel 10.0.0.21:26379 --ttl 30s --json
  tumbler audit --node redis.internal:6380 --auth-user ops --auth-password-env OPS_PW --tls-ca ca.crt`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d, err := f.deployment()
			if err != nil {
				return err
			}
			ctx, stop := a.interruptible(cmd.Context())
			defer stop()
			rep, err := audit.Run(ctx, d)
			if errors.Is(err, cluster.ErrAccess) {
				err = outcome.Input(err) // refused credentials are bad input
			}
			if err != nil {
				return &exitError{outcome.FindingCode(false, err), err}
			}
			if asJSON {
				b, _ := json.MarshalIndent(rep, "", "  ")
				fmt.Fprintf(a.stdout, "%s\n", b)
			} else if err := rep.WriteText(a.stdout); err != nil {
				return failed(err)
			}
			return exit(outcome.FindingCode(rep.Risky(), nil))
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&f.external, "external", "", "the deployment's external configuration (its nodes, Sentinels and access)")
	fs.StringSliceVar(&f.nodes, "node", nil, "a data node's address host:port (repeat, or comma separated)")
	fs.StringSliceVar(&f.sentinels, "sentinel", nil, "a Sentinel's address host:port (repeat, or comma separated)")
	fs.DurationVar(&f.ttl, "ttl", audit.DefaultTTL, "the TTL of the locks the deployment serves, to weigh Sentinel's timings and clock skew against")
	fs.BoolVar(&asJSON, "json", false, "print the findings as JSON")
	f.target.bindAccess(fs)
	return cmd
}

// auditFlags are audit's flags that name the deployment and how to log in.
type auditFlags struct {
	external         string
	nodes, sentinels []string
	ttl              time.Duration
	target           targetFlags
}

// deployment is the deployment the flags name, with the login to read it
// by (the admin's where given).
func (f *auditFlags) deployment() (audit.Deployment, error) {
	var d audit.Deployment
	var acc *access.Config
	switch {
	case f.external != "" && (len(f.nodes) > 0 || len(f.sentinels) > 0):
		return d, errors.New("--external conflicts with --node and --sentinel: give one")
	case f.external != "":
		cfg, err := cluster.LoadExternalConfig(f.external)
		if err != nil {
			return d, fmt.Errorf("--external: %w", err)
		}
		d, acc = audit.FromExternal(cfg), cfg.Access
	case len(f.nodes) == 0:
		return d, errors.New("give the deployment: --external FILE, or --node ADDR (and --sentinel ADDR)")
	default:
		d = audit.Deployment{Nodes: map[string]string{}, Sentinels: map[string]string{}}
		for i, n := range f.nodes {
			d.Nodes["n"+strconv.Itoa(i+1)] = n
		}
		for i, s := range f.sentinels {
			d.Sentinels["s"+strconv.Itoa(i+1)] = s
		}
	}
	t, err := f.target.target()
	if err != nil {
		return d, err
	}
	if t.Access != nil {
		acc = t.Access
	}
	if f.ttl < 0 {
		return d, fmt.Errorf("--ttl: %v is negative", f.ttl)
	}
	d.TTL = f.ttl
	if acc != nil {
		who := acc.Admin
		if who.IsZero() {
			who = acc.Client
		}
		if d.Login, err = access.Resolve(who, acc.TLS); err != nil {
			return d, fmt.Errorf("--auth-*/--admin-*/--tls-*: %w", err)
		}
	}
	return d, nil
}
