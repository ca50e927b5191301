// Package runner is tumbler's run engine: it takes a Plan — from a catalog
// scenario, from flags or from a file — brings the cluster up, runs the
// workload and the nemesis against it while both append to one history on
// disk, checks that history and writes the run's report directory. Every
// run, whatever its origin, goes through Run: a scenario is data, not a
// code path. The run is judged once, through package outcome
// (outcome.Judge: the verdict, the exit code, whether a catalog row's
// expectation was reproduced), and every output shows that judgement.
package runner

import (
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

	"github.com/tumbler-dev/tumbler/access"
	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/coverage"
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/internal/field"
	"github.com/tumbler-dev/tumbler/nemesis"
	"github.com/tumbler-dev/tumbler/outcome"
	"github.com/tumbler-dev/tumbler/reports"
	"github.com/tumbler-dev/tumbler/workloads"
)

// Options are the run's settings that are not part of the plan.
type Options struct {
	// Store is the directory runs are kept in (default "store"): each run
	// gets Store/<plan name>/<timestamp>/, and Store/latest points to it.
	// Store/index.html lists every run in it, rewritten after each run
	// (reports.WriteStoreIndex).
	Store string
	Log   *slog.Logger
	// Status, when set, is called a few times a second during the run.
	Status func(Status)
	// Command is the command line that replays the run, for the report.
	Command string
	// Expected is the catalog row's expectation, which the run is judged
	// against (Outcome.Judgement), and Source where the failure mode is
	// documented, for the report.
	Expected *outcome.Expectation
	Source   string
	// WorkerLog receives the client processes' stderr (default: a file in
	// the run directory).
	WorkerLog io.Writer
	// ToxiproxyAPI, when set, is the address the embedded toxiproxy's HTTP
	// API listens on during the run, so an operator can inspect the proxies
	// and their toxics.
	ToxiproxyAPI string
	// Linearizability replaces the plan's check.linearizability bounds
	// where set (Analyze: check a stored run with more memory or time).
	Linearizability LinearizabilityPlan
}

// Status is a snapshot of a run in progress.
type Status struct {
	Elapsed, Limit time.Duration
	Ops            int64
	OpsPerSecond   float64
	Grants         int64
	ActiveFaults   []history.Fault
	// Anomalies are the double grants found so far
	// (checker.MutexMonitor: a pair counts once both holds have ended).
	Anomalies int
}

// Outcome is what a run produced.
type Outcome struct {
	Dir    string
	Plan   Plan
	Result *checker.Result
	// Started is when the workload started; Elapsed is how long the run
	// took, from its start to the check of its history.
	Started time.Time
	Elapsed time.Duration
	// Interrupted: the run was cancelled before its time limit.
	Interrupted bool
	// FirstAnomaly is when the first anomaly happened, from the start of
	// the workload; -1 when there is none.
	FirstAnomaly time.Duration
	// Stats of the workload.
	Stats workloads.Stats
	// Coverage is which dangerous windows the run reached and when
	// (coverage.json), nil when nothing was recorded.
	Coverage *coverage.Run
	// Report lists the report's files.
	Report reports.Files
	// Judgement is the run's verdict, its exit code and, with
	// Options.Expected, whether it reproduced the expectation: decided once,
	// here (outcome.Judge), and shown as is by the report (index.html, results.json,
	// junit.xml), the command line and the matrix.
	Judgement outcome.Judgement
}

// Run executes plan and returns its outcome. An error wrapping
// outcome.ErrInput (ErrPlan) is bad input; any other error is a failure of the harness. When
// the run got far enough to make its directory, the outcome is returned
// with the error (its Judgement.ExitCode is the error's) and the report
// directory holds what was recorded. The plan is normalized (Normalize)
// and validated first; its run directory's plan.json holds it so, every
// default in it. The machine is made ready next (prepareMachine): that is
// not part of the run or of its time.
func Run(ctx context.Context, plan Plan, opts Options) (*Outcome, error) {
	plan, err := plan.Normalized()
	if err != nil {
		return nil, err
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Store == "" {
		opts.Store = "store"
	}
	if err := prepareMachine(ctx, plan, opts.Log); err != nil {
		return nil, err
	}
	r := &run{plan: plan, opts: opts, log: opts.Log, began: time.Now()}
	if err := r.makeDir(); err != nil {
		return nil, err
	}
	return r.finish(r.execute(ctx))
}

type run struct {
	plan  Plan
	opts  Options
	log   *slog.Logger
	began time.Time
	// elapsed, when set, is how long the run took (Analyze: the stored
	// run's); otherwise it is measured from began once the check is done.
	elapsed time.Duration
	dir     string

	cluster *cluster.Cluster
	// access is how the run logged in (the plan's, or an external
	// deployment's), for the report: it names secrets, never holds them.
	access *access.Config
	// version is what the servers run ("valkey 8.0.1"), for the report.
	version string
	// logs are the Redis logs when there is no cluster to ask (Analyze).
	logs    map[string]string
	clock   *history.Clock
	rec     *history.Recorder
	oracle  *oracle
	started time.Time
	stats   workloads.Stats
	ops     []history.Op
	// interrupted: ctx ended before the time limit.
	interrupted bool
	result      *checker.Result
}

// execute brings the cluster up, records the workload and the nemesis
// against it into the history on disk, and takes the cluster down.
func (r *run) execute(ctx context.Context) (err error) {
	p := r.plan
	provider, acc, err := newProvider(ctx, p)
	if err != nil {
		return err
	}
	r.access = acc
	// Plan.Validate had no provider to ask: check the faults against what
	// this one can do before anything starts.
	if err := p.nemesisPlan().Validate(p.nemesisSetup(provider)); err != nil {
		return errors.Join(fmt.Errorf("%w: %w", ErrPlan, faultsError(err)), provider.Close())
	}
	c, err := r.startCluster(ctx, provider, acc)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := c.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close cluster: %w", cerr)
		}
	}()

	// Every client must be able to log in before a fault runs: bad
	// credentials are an error naming the node, not a history of failures.
	if err := c.CheckClients(ctx); err != nil {
		return accessErr(err)
	}
	cfg, err := r.clientsConfig(c)
	if err != nil {
		return err
	}
	workerLog, closeLog, err := r.openHistory()
	if err != nil {
		return err
	}
	defer closeLog()
	return r.runWorkloadAndNemesis(ctx, c, provider, cfg, workerLog)
}

// startCluster starts the plan's cluster on provider and checks that an
// external deployment runs the server the plan asks for.
func (r *run) startCluster(ctx context.Context, provider cluster.Provider, acc *access.Config) (*cluster.Cluster, error) {
	p := r.plan
	r.log.Info("starting cluster", "topology", p.Topology.String(), "provider", p.Provider, "access", acc.String())
	spec := p.clusterSpec(acc)
	spec.Dir, spec.Provider, spec.APIAddr, spec.ClientACL = filepath.Join(r.dir, "cluster"), provider, r.opts.ToxiproxyAPI, p.clientACL()
	c, err := cluster.Start(ctx, spec)
	if err != nil {
		return nil, accessErr(fmt.Errorf("start cluster %s: %w", p.Topology, err))
	}
	r.cluster = c
	if r.version, err = c.Version(ctx); err != nil {
		r.log.Warn("server version", "err", err)
	}
	if k, _ := p.providerKind(); p.Server != "" && k.Adopts && !strings.HasPrefix(r.version, p.Server.Name()+" ") {
		_ = c.Close()
		return nil, fmt.Errorf("%w: the plan asks for %s, but the external deployment runs %s", ErrPlan, p.Server.Name(), r.version)
	}
	if a := c.APIAddr(); a != "" {
		r.log.Info("toxiproxy API", "addr", "http://"+a+"/proxies")
	}
	return c, nil
}

// clientsConfig is the workload's configuration with each client's lock
// spec, made for the client's view of cluster c.
func (r *run) clientsConfig(c *cluster.Cluster) (workloads.Config, error) {
	p := r.plan
	plain, err := p.workloadConfig(nil)
	if err != nil {
		return workloads.Config{}, fmt.Errorf("%w: workload: %w", ErrPlan, err)
	}
	specs := make([]json.RawMessage, p.Workload.Clients)
	for i := range specs {
		view, verr := c.ClientView(i)
		if verr != nil {
			return workloads.Config{}, verr
		}
		if specs[i], err = json.Marshal(p.clientLock(i, view, plain.AllKeys(), r.dir)); err != nil {
			return workloads.Config{}, err
		}
	}
	cfg, err := p.workloadConfig(specs)
	if err != nil {
		return workloads.Config{}, fmt.Errorf("%w: workload: %w", ErrPlan, err)
	}
	return cfg, nil
}

// openHistory starts the oracle and the history file, and opens where the
// client processes' stderr goes (closeLog closes it).
func (r *run) openHistory() (workerLog io.Writer, closeLog func(), err error) {
	r.oracle = newOracle(r.plan.checkConfig())
	// The history is not kept in memory: it is on disk, and read back to
	// be checked when the run ends.
	rec, err := history.CreateFile(filepath.Join(r.dir, reports.HistoryFile), history.RecorderOptions{Observe: r.oracle.observe})
	if err != nil {
		return nil, nil, fmt.Errorf("history: %w", err)
	}
	r.rec = rec
	if r.opts.WorkerLog != nil {
		return r.opts.WorkerLog, func() {}, nil
	}
	f, err := os.Create(filepath.Join(r.dir, "clients.log"))
	if err != nil {
		return nil, nil, fmt.Errorf("client log: %w", err)
	}
	return f, func() { f.Close() }, nil
}

// runWorkloadAndNemesis runs the workload and, beside it, the nemesis,
// until the workload ends or ctx is cancelled (interrupted).
func (r *run) runWorkloadAndNemesis(ctx context.Context, c *cluster.Cluster, provider cluster.Provider, cfg workloads.Config, workerLog io.Writer) (err error) {
	p, rec := r.plan, r.rec
	r.clock = history.NewClock() // for what is noted should the clients not get ready
	r.started = time.Now()
	wctx, stopWorkload := context.WithCancel(ctx)
	defer stopWorkload()
	// The clients start first — worker processes, lock client programs and
	// their inits — and time zero comes once all are ready, so the plan's
	// times mean the same for a Python client as for a Go one.
	wl, err := workloads.Prepare(wctx, cfg, workloads.Harness{Recorder: rec, WorkerLog: workerLog})
	if err != nil {
		return clientInput(fmt.Errorf("start workload: %w", err))
	}
	defer wl.Close()
	if err := wl.Ready(ctx); err != nil {
		// A run whose clients never all got ready ran nothing: no verdict,
		// a failure of the run (or bad input: a client that refused its
		// init, a command that cannot start), said as such.
		if ctx.Err() != nil {
			r.interrupted = true
			r.note("interrupted: the run was cancelled while its clients were starting; nothing ran")
			return errors.New("interrupted while its clients were starting: nothing ran, so there is nothing to judge")
		}
		return clientInput(fmt.Errorf("its clients never got ready, so nothing ran: %w", err))
	}
	r.clock = history.NewClock()
	r.started = time.Now()
	var resource *workloads.Resource
	if cfg.Kind != workloads.Mutex && cfg.Kind != workloads.Latch {
		if resource, err = workloads.NewResource(r.clock, rec, true); err != nil {
			return err
		}
	}

	// The nemesis starts first and the clients begin once the faults due at
	// time zero are in place (a failover's cut at 0 s comes before the
	// first acquire, not in a race with it).
	nctx, stopNemesis := context.WithCancel(ctx)
	defer stopNemesis()
	nemesisDone := make(chan error, 1)
	settled := make(chan struct{})
	go func() {
		setup := p.nemesisSetup(provider)
		nemesisDone <- nemesis.Run(nctx, p.nemesisPlan(), nemesis.Env{
			Cluster: c, Clients: clientControls{wl}, Oracle: r.oracle, Clock: r.clock,
			NodeClock: setup.NodeClock, ClientMode: setup.ClientMode,
			Settled: func() { close(settled) },
		}, rec)
	}()
	select {
	case <-settled:
	case nerr := <-nemesisDone: // it could not run at all: the clients run anyway
		nemesisDone <- nerr
	case <-ctx.Done():
	}
	if err := wl.Begin(r.clock, resource); err != nil {
		return err
	}

	stopStatus := r.reportStatus(wl.Done())
	stats, werr := wl.Wait()
	stopStatus()
	r.stats = stats
	r.interrupted = ctx.Err() != nil
	stopNemesis()
	nerr := <-nemesisDone
	wl.Close()
	if r.interrupted {
		r.note("interrupted: the run was cancelled before its time limit; the history holds what was recorded until then")
	}
	if werr != nil && !r.interrupted {
		return clientInput(fmt.Errorf("workload: %w", werr))
	}
	if nerr != nil {
		// A fault that could not be applied is recorded in the history with
		// its error; the run goes on to be checked, and the report says so.
		r.log.Warn("nemesis", "err", nerr)
		r.note("nemesis: " + nerr.Error())
	}
	return nil
}

func (r *run) note(msg string) {
	if r.rec == nil {
		return
	}
	_, _ = r.rec.Record(history.Op{Process: history.NemesisProcess, Type: history.Info, F: history.Message, Value: msg, Time: r.clock.Now()})
}

// finish closes the history, checks it, judges the run and writes the
// report, whatever happened before; it returns the run's outcome and error.
// A recorded history the checkers refuse is the harness's own (a bug), so
// the run fails; the report still shows what was recorded.
func (r *run) finish(runErr error) (*Outcome, error) {
	var checkErr string
	if r.rec == nil {
		checkErr = fmt.Sprintf("the run failed before it recorded anything: %v", runErr)
	} else {
		if err := r.rec.Close(); err != nil {
			r.log.Error("history file incomplete", "err", err)
			checkErr = fmt.Sprintf("the history could not be written in full, so it was not checked: %v", err)
		} else if r.ops, err = ReadHistory(filepath.Join(r.dir, reports.HistoryFile)); err != nil {
			checkErr = fmt.Sprintf("the history written by this run could not be read back: %v", err)
		}
		if checkErr == "" {
			if err := r.check(); err != nil {
				r.log.Error("check", "err", err)
				checkErr = err.Error()
				if runErr == nil {
					runErr = fmt.Errorf("the recorded history breaks the checkers' contract (a harness bug): %w", err)
				}
			}
		}
	}
	out := r.outcome(runErr)
	files, err := r.writeReport(r.dir, out, checkErr)
	out.Report = files
	if err != nil {
		r.log.Error("report", "err", err)
	}
	r.indexStore(r.opts.Store)
	return out, runErr
}

// indexStore rewrites store's index.html (reports.WriteStoreIndex) now that
// a run's report changed; a failure is only logged: the run is complete.
func (r *run) indexStore(store string) {
	if err := reports.WriteStoreIndex(store); err != nil {
		r.log.Warn("store index", "err", err)
	}
}

// check runs the checkers on r.ops: r.result, or the error of a history
// that breaks the checkers' contract.
func (r *run) check() error {
	res, err := checker.Check(r.ops, r.plan.checkConfig())
	if err != nil {
		return err
	}
	r.result = res
	return nil
}

// outcome is the run's outcome once its history is checked (or could not
// be), judged: the end of Run, and of Analyze.
func (r *run) outcome(runErr error) *Outcome {
	if r.elapsed == 0 {
		r.elapsed = time.Since(r.began)
	}
	out := &Outcome{
		Dir: r.dir, Plan: r.plan, Result: r.result, Started: r.started, Elapsed: r.elapsed,
		Interrupted: r.interrupted, FirstAnomaly: -1, Stats: r.stats, Coverage: r.judgeCoverage(),
	}
	if r.result != nil {
		for _, a := range r.result.Anomalies {
			if d := time.Duration(a.At); out.FirstAnomaly < 0 || d < out.FirstAnomaly {
				out.FirstAnomaly = d
			}
		}
	}
	out.Judgement = outcome.Judge(r.opts.Expected, outcome.Facts{
		Result: r.result, Err: runErr, Interrupted: r.interrupted,
		Elapsed: r.elapsed, Faults: len(r.plan.Faults) > 0,
	})
	return out
}

// reportStatus calls Options.Status until the returned stop is called.
func (r *run) reportStatus(done <-chan struct{}) (stop func()) {
	if r.opts.Status == nil {
		return func() {}
	}
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		var lastOps int64
		lastT := time.Now()
		limit := r.plan.span(r.plan.TimeLimit)
		for {
			select {
			case <-quit:
				return
			case <-done:
				return
			case now := <-tick.C:
				n := r.rec.Len()
				rate := float64(n-lastOps) / now.Sub(lastT).Seconds()
				lastOps, lastT = n, now
				r.opts.Status(Status{
					Elapsed: time.Since(r.started), Limit: limit, Ops: n, OpsPerSecond: rate,
					Grants: r.oracle.grants(), ActiveFaults: r.oracle.tracker.ActiveFaults(), Anomalies: r.oracle.mutex.Anomalies(),
				})
			}
		}
	}()
	return func() { close(quit); wg.Wait() }
}

// prepareMachine makes this machine ready for the plan's provider once,
// before the run begins and outside its time (ProviderKind.Ready: the
// docker provider's server image is built if it is not here).
func prepareMachine(ctx context.Context, p Plan, log *slog.Logger) error {
	k, err := p.providerKind()
	if err != nil || k.Ready == nil {
		return err
	}
	return k.Ready(ctx, p.providerOptions(), log)
}

// newProvider builds the cluster provider the plan names, and says how to
// log in to its servers: the plan's access, else an external deployment's
// own. Building one starts no server; a provider the cluster does not take
// is closed by the caller.
func newProvider(ctx context.Context, p Plan) (cluster.Provider, *access.Config, error) {
	k, err := p.providerKind()
	if err != nil {
		return nil, nil, err
	}
	prov, acc, err := k.New(ctx, p.providerOptions())
	if errors.Is(err, cluster.ErrProviderConfig) {
		err = fmt.Errorf("%w: %w", ErrPlan, err)
	}
	return prov, acc, err
}

// providerKind is what the plan's provider declares of itself (the
// default one's for a plan not normalized yet, as Normalize would fill
// in); an unknown one is bad input naming the field.
func (p Plan) providerKind() (cluster.ProviderKind, error) {
	if p.Provider == "" {
		return cluster.DefaultProvider(), nil
	}
	k, err := cluster.LookupProvider(p.Provider)
	if err != nil {
		return k, fmt.Errorf("%w: %w", ErrPlan, field.Errorf("provider", "%w", err))
	}
	return k, nil
}

// providerOptions are what the plan tells its provider.
func (p Plan) providerOptions() cluster.ProviderOptions {
	return cluster.ProviderOptions{Server: p.Server, Topology: p.Topology, External: p.External, Access: p.Access}
}

// accessErr makes refused credentials bad input rather than a failure of
// the harness.
func accessErr(err error) error {
	if errors.Is(err, cluster.ErrAccess) {
		return fmt.Errorf("%w: %w", ErrPlan, err)
	}
	return err
}
