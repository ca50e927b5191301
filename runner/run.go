// Package runner is tumbler's run engine: it takes a Plan — from a catalog
// scenario, from flags or from a file — brings the cluster up, runs the
// workload and the nemesis against it while both append to one history on
// disk, checks that history and writes the run's report directory. Every
// run, whatever its origin, goes through Run: a scenario is data, not a
// code path.
package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/tumbler-dev/tumbler/checker"
	"github.com/tumbler-dev/tumbler/cluster"
	"github.com/tumbler-dev/tumbler/history"
	"github.com/tumbler-dev/tumbler/nemesis"
	"github.com/tumbler-dev/tumbler/reports"
	"github.com/tumbler-dev/tumbler/workloads"
)

// Options are the run's settings that are not part of the plan.
type Options struct {
	// Store is the directory runs are kept in (default "store"): each run
	// gets Store/<plan name>/<timestamp>/, and Store/latest points to it.
	Store string
	Log   *slog.Logger
	// Status, when set, is called a few times a second during the run.
	Status func(Status)
	// Command is the command line that replays the run, for the report.
	Command string
	// Expected is the catalog row's expectation and Source where the
	// failure mode is documented, for the report.
	Expected *reports.Expectation
	Source   string
	// WorkerLog receives the client processes' stderr (default: a file in
	// the run directory).
	WorkerLog io.Writer
	// ToxiproxyAPI, when set, is the address the embedded toxiproxy's HTTP
	// API listens on during the run, so an operator can inspect the proxies
	// and their toxics.
	ToxiproxyAPI string
}

// Status is a snapshot of a run in progress.
type Status struct {
	Elapsed, Limit time.Duration
	Ops            int64
	OpsPerSecond   float64
	Grants         int64
	ActiveFaults   []history.Fault
	// Anomalies found so far by the mutual-exclusion checker.
	Anomalies int
}

// Outcome is what a run produced.
type Outcome struct {
	Dir    string
	Plan   Plan
	Result *checker.Result
	// Started is when the workload started; Elapsed covers the whole run.
	Started time.Time
	Elapsed time.Duration
	// Interrupted: the run was cancelled before its time limit.
	Interrupted bool
	// FirstAnomaly is when the first anomaly happened, from the start of
	// the workload; -1 when there is none.
	FirstAnomaly time.Duration
	// Stats of the workload.
	Stats workloads.Stats
	// Report lists the report's files.
	Report reports.Files
}

// Run executes plan and returns its outcome. An error wrapping ErrPlan is
// bad input; any other error is a failure of the harness. When the run got
// far enough to record anything, the outcome is returned with the error
// and the report directory holds what was recorded.
func Run(ctx context.Context, plan Plan, opts Options) (*Outcome, error) {
	plan = plan.withDefaults()
	if err := plan.Validate(); err != nil {
		return nil, err
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if opts.Store == "" {
		opts.Store = "store"
	}
	r := &run{plan: plan, opts: opts, log: opts.Log, began: time.Now()}
	if err := r.makeDir(); err != nil {
		return nil, err
	}
	err := r.execute(ctx)
	out := r.finish(err)
	return out, err
}

type run struct {
	plan  Plan
	opts  Options
	log   *slog.Logger
	began time.Time
	dir   string

	cluster *cluster.Cluster
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

// makeDir creates the run directory with plan.json and points latest at it.
func (r *run) makeDir() error {
	name := r.plan.Name
	stamp := r.began.Format("20060102T150405.000")
	r.dir = filepath.Join(r.opts.Store, name, stamp)
	if err := os.MkdirAll(r.dir, 0o755); err != nil {
		return fmt.Errorf("run directory: %w", err)
	}
	if err := os.WriteFile(filepath.Join(r.dir, "plan.json"), r.plan.JSON(), 0o644); err != nil {
		return fmt.Errorf("run directory: %w", err)
	}
	for _, l := range []struct{ link, target string }{
		{filepath.Join(r.opts.Store, "latest"), filepath.Join(name, stamp)},
		{filepath.Join(r.opts.Store, name, "latest"), stamp},
	} {
		_ = os.Remove(l.link)
		if err := os.Symlink(l.target, l.link); err != nil {
			r.log.Warn("cannot update the latest link", "link", l.link, "err", err)
		}
	}
	return nil
}

func (r *run) execute(ctx context.Context) (err error) {
	p := r.plan
	provider, err := newProvider(ctx, p)
	if err != nil {
		return err
	}
	r.log.Info("starting cluster", "topology", p.Topology.String(), "provider", p.Provider)
	c, err := cluster.Start(ctx, cluster.Spec{
		Topology: p.Topology, Clients: p.Workload.Clients, Persistence: p.Persistence,
		Clock: p.needsNodeClock(), Dir: filepath.Join(r.dir, "cluster"), Provider: provider,
		APIAddr: r.opts.ToxiproxyAPI,
	})
	if err != nil {
		return fmt.Errorf("start cluster %s: %w", p.Topology, err)
	}
	r.cluster = c
	if a := c.APIAddr(); a != "" {
		r.log.Info("toxiproxy API", "addr", "http://"+a+"/proxies")
	}
	defer func() {
		if cerr := c.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close cluster: %w", cerr)
		}
	}()

	specs := make([]json.RawMessage, p.Workload.Clients)
	for i := range specs {
		view, verr := c.ClientView(i)
		if verr != nil {
			return verr
		}
		if specs[i], err = clientLockSpec(p.lockSpec(), view, p.readTimeout()); err != nil {
			return err
		}
	}
	cfg, err := p.workloadConfig(specs)
	if err != nil {
		return fmt.Errorf("%w: workload: %w", ErrPlan, err)
	}

	r.oracle = newOracle()
	rec, err := history.CreateFile(filepath.Join(r.dir, "history.jsonl"), history.RecorderOptions{
		KeepOps: true, Observe: r.oracle.observe,
	})
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	r.rec = rec
	workerLog := r.opts.WorkerLog
	if workerLog == nil {
		f, ferr := os.Create(filepath.Join(r.dir, "clients.log"))
		if ferr != nil {
			return fmt.Errorf("client log: %w", ferr)
		}
		defer f.Close()
		workerLog = f
	}

	r.clock = history.NewClock()
	r.started = time.Now()
	var resource *workloads.Resource
	if cfg.Kind != workloads.Mutex {
		if resource, err = workloads.NewResource(r.clock, rec, true); err != nil {
			return err
		}
	}
	wctx, stopWorkload := context.WithCancel(ctx)
	defer stopWorkload()
	wl, err := workloads.Start(wctx, cfg, workloads.Harness{
		Clock: r.clock, Recorder: rec, Resource: resource, WorkerLog: workerLog,
	})
	if err != nil {
		return fmt.Errorf("start workload: %w", err)
	}
	defer wl.Close()

	nctx, stopNemesis := context.WithCancel(ctx)
	defer stopNemesis()
	nemesisDone := make(chan error, 1)
	go func() {
		nemesisDone <- nemesis.Run(nctx, p.nemesisPlan(), nemesis.Env{
			Cluster: c, Clients: clientControls{wl}, Oracle: r.oracle, Clock: r.clock,
			NodeClock: p.needsNodeClock(), ClientMode: p.nemesisSetup().ClientMode,
			Refuses: providerRefuses(p),
		}, rec)
	}()

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
		return fmt.Errorf("workload: %w", werr)
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

// finish closes the history, checks it and writes the report, whatever
// happened before.
func (r *run) finish(runErr error) *Outcome {
	var checkErr string
	if r.rec == nil {
		checkErr = fmt.Sprintf("the run failed before it recorded anything: %v", runErr)
	} else {
		if err := r.rec.Close(); err != nil {
			r.log.Error("history file incomplete", "err", err)
		}
		r.ops = r.rec.Ops()
	}
	return r.checkAndReport(runErr, checkErr)
}

// checkAndReport checks r.ops, unless checkErr already says why they
// cannot be, and writes the report: the end of Run, and all of Analyze.
func (r *run) checkAndReport(runErr error, checkErr string) *Outcome {
	out := &Outcome{Dir: r.dir, Plan: r.plan, Started: r.started, Interrupted: r.interrupted, FirstAnomaly: -1, Stats: r.stats}
	defer func() { out.Elapsed = time.Since(r.began) }()
	if checkErr == "" {
		if res, err := checker.Check(r.ops, r.plan.checkConfig()); err != nil {
			checkErr = err.Error()
			r.log.Error("check", "err", err)
		} else {
			r.result, out.Result = res, res
			for _, a := range res.Anomalies {
				if d := time.Duration(a.At); out.FirstAnomaly < 0 || d < out.FirstAnomaly {
					out.FirstAnomaly = d
				}
			}
		}
	}
	if runErr != nil && checkErr == "" && r.result == nil {
		checkErr = runErr.Error()
	}
	files, err := r.writeReport(checkErr)
	out.Report = files
	if err != nil {
		r.log.Error("report", "err", err)
	}
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
		lastCheck := time.Time{}
		anomalies := 0
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
				if now.Sub(lastCheck) >= time.Second {
					lastCheck = now
					anomalies = r.liveAnomalies()
				}
				r.opts.Status(Status{
					Elapsed: time.Since(r.started), Limit: limit, Ops: n, OpsPerSecond: rate,
					Grants: r.oracle.grants(), ActiveFaults: r.oracle.tracker.ActiveFaults(), Anomalies: anomalies,
				})
			}
		}
	}()
	return func() { close(quit); wg.Wait() }
}

// liveAnomalies runs the mutual-exclusion checker on what was recorded so
// far: cheap (well under a second for a million ops), and what a person
// watching a run wants to see first.
func (r *run) liveAnomalies() int {
	cfg := r.plan.checkConfig()
	cfg.Skip = []string{checker.Linearizability, checker.Fencing, checker.StaleWrites, checker.LostUpdates, checker.Liveness}
	res, err := checker.Check(r.rec.Ops(), cfg)
	if err != nil {
		return 0
	}
	return len(res.Anomalies)
}

// clientControls gives the nemesis the workload's clients.
type clientControls struct{ w *workloads.Workload }

func (c clientControls) client(i int) (*workloads.Client, error) {
	cs := c.w.Clients()
	if i < 0 || i >= len(cs) {
		return nil, fmt.Errorf("client %d: the workload has clients 0..%d", i, len(cs)-1)
	}
	return cs[i], nil
}

func (c clientControls) Count() int { return len(c.w.Clients()) }

func (c clientControls) Pause(i int) error { return c.do(i, (*workloads.Client).Pause) }

func (c clientControls) Resume(i int) error { return c.do(i, (*workloads.Client).Resume) }

func (c clientControls) SetClockOffset(i int, d time.Duration) error {
	return c.do(i, func(cl *workloads.Client) error { return cl.SetClockOffset(d) })
}

func (c clientControls) ArmStep(i int, step string, a nemesis.StepAction) error {
	return c.do(i, func(cl *workloads.Client) error {
		return cl.ArmStep(step, workloads.StepAction{Pause: a.Pause, Crash: a.Crash})
	})
}

func (c clientControls) GateResource(i int, closed bool) error {
	return c.do(i, func(cl *workloads.Client) error { return cl.GateResource(closed) })
}

func (c clientControls) do(i int, f func(*workloads.Client) error) error {
	cl, err := c.client(i)
	if err != nil {
		return err
	}
	return f(cl)
}

// oracle answers the nemesis's questions about the live history.
type oracle struct {
	tracker *history.Tracker
	mu      sync.Mutex
	waiters map[string][]chan int
	granted int64
}

func newOracle() *oracle {
	return &oracle{tracker: history.NewTracker(), waiters: map[string][]chan int{}}
}

// observe runs under the recorder's lock: it must stay quick.
func (o *oracle) observe(op history.Op) {
	o.tracker.Observe(op)
	if op.IsNemesis() || op.F != history.Acquire || op.Type != history.OK {
		return
	}
	o.mu.Lock()
	o.granted++
	for _, ch := range o.waiters[op.Key] {
		ch <- op.Client
	}
	delete(o.waiters, op.Key)
	o.mu.Unlock()
}

func (o *oracle) grants() int64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.granted
}

func (o *oracle) Holder(key string) (int, bool) {
	h, ok := o.tracker.Holder(key)
	return h.Client, ok
}

func (o *oracle) WaitGrant(ctx context.Context, key string) (int, error) {
	ch := make(chan int, 1)
	o.mu.Lock()
	o.waiters[key] = append(o.waiters[key], ch)
	o.mu.Unlock()
	select {
	case c := <-ch:
		return c, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// newProvider makes the cluster provider the plan names (nil: process).
func newProvider(ctx context.Context, p Plan) (cluster.Provider, error) {
	switch p.Provider {
	case "docker":
		prov, err := cluster.NewDockerProvider(ctx, cluster.DockerOptions{Image: os.Getenv("TUMBLER_REDIS_IMAGE")})
		if err != nil {
			return nil, fmt.Errorf("docker provider: %w", err)
		}
		return prov, nil
	case "external":
		cfg, err := cluster.LoadExternalConfig(p.External)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrPlan, err)
		}
		if cfg.Topology != p.Topology {
			return nil, fmt.Errorf("%w: the plan's topology %s is not the external deployment's %s (%s)", ErrPlan, p.Topology, cfg.Topology, p.External)
		}
		return cluster.NewExternalProvider(cfg)
	}
	return nil, nil
}

// providerRefuses lists the faults a provider cannot take, so a plan is
// refused before anything starts (the provider refuses at run time too).
// An external deployment takes only the faults it has hooks for.
func providerRefuses(p Plan) []nemesis.Kind {
	if p.Provider != "external" {
		return nil
	}
	cfg, err := cluster.LoadExternalConfig(p.External)
	if err != nil {
		return nil // newProvider reports the error
	}
	h := cfg.Hooks
	var out []nemesis.Kind
	if h.Kill == "" || h.Start == "" {
		out = append(out, nemesis.Kill, nemesis.Restart)
	}
	if h.Pause == "" || h.Resume == "" {
		out = append(out, nemesis.Pause)
	}
	if h.Clock == "" {
		out = append(out, nemesis.Clock)
	}
	return out
}
