package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	_ "github.com/tumbler-dev/tumbler/clients" // the shipped clients
	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/lock"
	"github.com/tumbler-dev/tumbler/lock/conform"
	"github.com/tumbler-dev/tumbler/lock/protocol"
	"github.com/tumbler-dev/tumbler/lock/variants"
	"github.com/tumbler-dev/tumbler/spans"
	"github.com/tumbler-dev/tumbler/workloads"
)

// ConformOptions say which lock client to check and where.
type ConformOptions struct {
	// Client is a shipped client, a client directory or a bare program.
	Client protocol.Program
	// Server the nodes run: redis (default) or valkey.
	Server cluster.Server
	// TTL of the timing checks (0: the client's manifest's, else 1 s).
	TTL time.Duration
	// Store is where the check's directory goes (its clients' logs and
	// conform.json): Store/conform/<client>/<time>.
	Store string
	Log   *slog.Logger
	// Trace keeps each check's transcript (ConformCheck.Transcript), and
	// writes it to trace/<check>.txt in the check's directory.
	Trace bool
}

// ConformResult is a conformance run: one line per check.
type ConformResult struct {
	Client  string         `json:"client"`
	Library string         `json:"library"`
	Dir     string         `json:"dir"`
	Checks  []ConformCheck `json:"checks"`
}

// Outcomes of a conformance check.
const (
	ConformPass = "pass"
	ConformFail = "FAIL"
	// ConformDeviation: the check failed as the client's manifest says its
	// library does (a documented property).
	ConformDeviation = "deviation"
	// ConformUnexpectedPass: a documented deviation did not show: the
	// manifest is out of date.
	ConformUnexpectedPass = "unexpected pass"
	// ConformNotApplicable: the check is about something the client does
	// not declare (Valid, for a client without answers_valid).
	ConformNotApplicable = "not applicable"
)

// ConformCheck is one check's outcome.
type ConformCheck struct {
	Name    string        `json:"name"`
	What    string        `json:"what"`
	Outcome string        `json:"outcome"`
	Detail  string        `json:"detail,omitempty"`
	Took    time.Duration `json:"took_ns"`
	// Transcript is every line the check's contenders exchanged with
	// tumbler, each after its contender ("c3 > {…}", "c3 < {…}"), with
	// ConformOptions.Trace.
	Transcript []string `json:"transcript,omitempty"`
}

// Passed reports whether every check passed or deviated as documented.
func (r ConformResult) Passed() bool {
	for _, c := range r.Checks {
		if c.Outcome == ConformFail || c.Outcome == ConformUnexpectedPass {
			return false
		}
	}
	return true
}

// conformContenders is how many client views the checks use at once.
const conformContenders = 8

// Conform runs the conformance checks (package lock/conform) against a lock
// client program, on real servers with a proxy on every link: the
// properties every lock has, and an unknown outcome for a reply that never
// came. It honours what the client's manifest declares (its validity, its
// servers, its TTL), and a check the manifest documents as a deviation of
// its library is reported as such; a bare program declares nothing, and
// each of its leases is judged by what it carries. The error is for what
// kept the checks from running at all: a client program that refuses its
// init (protocol.ErrInit) or whose command cannot start
// (protocol.ErrCommand) is bad input (outcome.ErrInput), as in a run; one
// that never answers its init is a failure of the harness's run (the
// first check stops there).
func Conform(ctx context.Context, o ConformOptions) (ConformResult, error) {
	m, err := o.Client.Manifest()
	if err != nil {
		return ConformResult{}, fmt.Errorf("%w: lock client: %w", ErrPlan, err)
	}
	if _, err := m.Install(); err != nil {
		return ConformResult{}, err
	}
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ttl := o.TTL
	if ttl == 0 {
		ttl = max(time.Duration(m.Conform.TTLMS)*time.Millisecond, time.Second)
	}
	res := ConformResult{Client: m.Name}
	res.Dir = filepath.Join(o.Store, "conform", strings.ReplaceAll(filepath.Base(m.Name), string(filepath.Separator), "-"), time.Now().Format("20060102T150405.000"))
	if err := os.MkdirAll(res.Dir, 0o755); err != nil {
		return res, err
	}
	topo := cluster.Topology{Kind: cluster.Independent, N: 1}
	if m.AllNodes {
		topo.N = 3
	}
	p := Plan{Name: "conform", Topology: topo, Server: o.Server, TTL: spans.Fixed(ttl),
		Lock: LockPlan{Options: variants.Options{Variant: variants.ClientVariant, Client: &o.Client}}}.Normalize()
	p.Workload.Clients = conformContenders
	prov, acc, err := newProvider(ctx, p)
	if err != nil {
		return res, err
	}
	log.Info("starting servers", "topology", topo.String(), "server", p.Server.Name())
	c, err := cluster.Start(ctx, cluster.Spec{Topology: topo, Clients: conformContenders, Dir: filepath.Join(res.Dir, "cluster"),
		Provider: prov, Access: acc, ClientACL: p.clientACL(), Server: p.Server})
	if err != nil {
		return res, accessErr(fmt.Errorf("start servers %s: %w", topo, err))
	}
	defer c.Close()
	ck := &conformer{ctx: ctx, plan: p, cluster: c, dir: res.Dir, manifest: m, trace: o.Trace}
	target := conform.Target{New: ck.contender, TTL: ttl, Validity: conform.ValidityUnknown, Seen: &conform.Seen{}, Remote: true, Cut: ck.cutReplies,
		Hung: func(err error) bool { var pe *protocol.Error; return errors.As(err, &pe) }}
	if m.File() != "" { // a manifest says what the leases carry
		target.Validity = conform.ValidityNone
		if m.Validity {
			target.Validity = conform.ValidityExposed
		}
	}
	for _, check := range conform.Checks {
		log.Info("check", "name", check.Name)
		out, _ := ck.run(ctx, check, target)
		if serr := ck.startErr(); serr != nil { // no check can run
			return res, clientInput(fmt.Errorf("check %s: %w", check.Name, serr))
		}
		if ctx.Err() != nil {
			return res, fmt.Errorf("interrupted in check %s: %w", check.Name, ctx.Err())
		}
		res.Checks = append(res.Checks, out)
	}
	res.Library = ck.library
	b, _ := json.MarshalIndent(res, "", "  ")
	return res, os.WriteFile(filepath.Join(res.Dir, "conform.json"), append(b, '\n'), 0o644)
}

// conformer makes the contenders of the checks: each a client program of
// its own, over the proxies of one of the cluster's client views.
type conformer struct {
	ctx      context.Context
	plan     Plan
	cluster  *cluster.Cluster
	dir      string
	manifest protocol.Manifest
	trace    bool

	mu      sync.Mutex
	n       int
	open    []func() error
	library string
	failed  error         // a client program that could not start
	lines   *bytes.Buffer // the transcript of the check running
}

// startErr is why a client program could not start, if one could not.
func (ck *conformer) startErr() error {
	ck.mu.Lock()
	defer ck.mu.Unlock()
	return ck.failed
}

// run runs one check: its outcome, and the error it failed with.
func (ck *conformer) run(ctx context.Context, check conform.Check, t conform.Target) (ConformCheck, error) {
	start := time.Now()
	ck.mu.Lock()
	ck.lines = &bytes.Buffer{}
	ck.mu.Unlock()
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	err := check.Run(cctx, t, fmt.Sprintf("%sconform:%s", workloads.DefaultKeyPrefix, strings.ToLower(check.Name)))
	cancel()
	ck.closeAll()
	out := ConformCheck{Name: check.Name, What: check.What, Outcome: ConformPass, Took: time.Since(start)}
	if ck.trace {
		ck.mu.Lock()
		text := ck.lines.String()
		ck.mu.Unlock()
		if text != "" {
			out.Transcript = strings.Split(strings.TrimSuffix(text, "\n"), "\n")
		}
		if werr := os.MkdirAll(filepath.Join(ck.dir, "trace"), 0o755); werr == nil {
			_ = os.WriteFile(filepath.Join(ck.dir, "trace", check.Name+".txt"), []byte(text), 0o644)
		}
	}
	why, deviates := ck.manifest.Conform.Deviations[check.Name]
	switch {
	case errors.Is(err, conform.ErrNotApplicable):
		out.Outcome, out.Detail = ConformNotApplicable, err.Error()
	case err != nil && deviates:
		out.Outcome, out.Detail = ConformDeviation, why+" (here: "+err.Error()+")"
	case err != nil:
		out.Outcome, out.Detail = ConformFail, err.Error()
	case deviates:
		out.Outcome, out.Detail = ConformUnexpectedPass, "the manifest says: "+why
	}
	return out, err
}

// contender starts one more client program on key, over the next client
// view's proxies.
func (ck *conformer) contender(key string, ttl time.Duration) (lock.Locker, error) {
	ck.mu.Lock()
	i := ck.n
	ck.n++
	ck.mu.Unlock()
	view, err := ck.cluster.ClientView(i % conformContenders)
	if err != nil {
		return nil, err
	}
	cl := ck.plan.clientLock(i%conformContenders, view, []string{key}, ck.dir)
	cl.Lock.TTL = ttl
	cl.ClientLog = filepath.Join(ck.dir, "clients", fmt.Sprintf("contender-%d.log", i))
	var trace io.Writer
	if ck.trace {
		trace = &traceWriter{ck: ck, prefix: fmt.Sprintf("c%d ", i)}
	}
	prog, closeFn, err := startProgram(ck.ctx, cl, trace)
	if err != nil {
		ck.mu.Lock()
		if ck.failed == nil {
			ck.failed = err
		}
		ck.mu.Unlock()
		return nil, err
	}
	ck.mu.Lock()
	ck.open = append(ck.open, closeFn)
	ck.library = prog.Library()
	ck.mu.Unlock()
	p, err := prog.Primitive(key)
	if err != nil {
		return nil, err
	}
	l, ok := p.(lock.Locker)
	if !ok {
		return nil, fmt.Errorf("client %s drives a %s: the conformance checks are for locks", ck.manifest.Name, ck.manifest.Kind)
	}
	return l, nil
}

// traceWriter adds a contender's lines to the transcript of the check
// running, after the contender's name.
type traceWriter struct {
	ck     *conformer
	prefix string
}

func (w *traceWriter) Write(b []byte) (int, error) {
	w.ck.mu.Lock()
	defer w.ck.mu.Unlock()
	if w.ck.lines != nil {
		w.ck.lines.WriteString(w.prefix)
		w.ck.lines.Write(b)
	}
	return len(b), nil
}

func (ck *conformer) closeAll() {
	ck.mu.Lock()
	open := ck.open
	ck.open = nil
	ck.mu.Unlock()
	for _, c := range open {
		_ = c()
	}
}

// cutReplies blackholes the replies of every node to every contender.
func (ck *conformer) cutReplies() (func() error, error) {
	var links []string
	for i := range conformContenders {
		for _, n := range ck.cluster.Nodes() {
			links = append(links, fmt.Sprintf("c%d->%s", i, n))
		}
	}
	if err := ck.cluster.Cut(cluster.Blackhole, cluster.Downstream, links...); err != nil {
		return nil, err
	}
	return func() error { return ck.cluster.Heal(links...) }, nil
}
