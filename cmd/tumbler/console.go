package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tumbler-dev/tumbler/internal/procgroup"
	"github.com/tumbler-dev/tumbler/outcome"
	"github.com/tumbler-dev/tumbler/runner"
)

// console is the command's output: results on out, logs on err, and on a
// terminal a status line redrawn in place that logs and results step
// around. Elsewhere (a pipe, a CI log) progress is a log line every few
// seconds instead.
type console struct {
	mu   sync.Mutex
	out  io.Writer
	err  io.Writer
	live bool
	// width of the terminal: a status line that wraps cannot be redrawn.
	width int
	line  string
	// lastProgress: when progress was last logged (not live).
	lastProgress time.Time
}

// progressEvery is how often progress is logged when not on a terminal.
const progressEvery = 5 * time.Second

func newConsole(out, err io.Writer) *console {
	c := &console{out: out, err: err, width: 100}
	if f, ok := out.(*os.File); ok {
		if st, serr := f.Stat(); serr == nil && st.Mode()&os.ModeCharDevice != 0 {
			c.live = true
			if ws, werr := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ); werr == nil && ws.Col > 20 {
				c.width = int(ws.Col)
			}
		}
	}
	return c
}

// erase removes the status line; the caller holds mu.
func (c *console) erase() {
	if c.line != "" {
		fmt.Fprint(c.out, "\r\033[K")
	}
}

// redraw shows the status line again; the caller holds mu.
func (c *console) redraw() {
	if c.line != "" {
		fmt.Fprint(c.out, c.line)
	}
}

// setStatus replaces the status line (terminal only).
func (c *console) setStatus(line string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r := []rune(line); len(r) >= c.width {
		line = string(r[:c.width-2]) + "…"
	}
	c.erase()
	c.line = line
	c.redraw()
}

// clear removes the status line for good.
func (c *console) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.erase()
	c.line = ""
}

// printf prints results on out, around the status line.
func (c *console) printf(format string, a ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.erase()
	fmt.Fprintf(c.out, format, a...)
	c.redraw()
}

// logWriter is where log lines go: err, around the status line.
func (c *console) logWriter() io.Writer { return logWriter{c} }

type logWriter struct{ c *console }

func (w logWriter) Write(p []byte) (int, error) {
	w.c.mu.Lock()
	defer w.c.mu.Unlock()
	w.c.erase()
	n, err := w.c.err.Write(p)
	w.c.redraw()
	return n, err
}

// statusFunc is a runner.Options.Status showing the run's progress,
// prefixed with what runs ("single-failover seed 3").
func (a *app) statusFunc(prefix string) func(runner.Status) {
	if prefix != "" {
		prefix += "  "
	}
	return func(s runner.Status) {
		faults := "none"
		if len(s.ActiveFaults) > 0 {
			fs := make([]string, len(s.ActiveFaults))
			for i, f := range s.ActiveFaults {
				fs[i] = f.ID + " " + f.Desc
			}
			faults = strings.Join(fs, "; ")
		}
		if a.con.live {
			a.con.setStatus(fmt.Sprintf("%s%5.1fs/%.0fs  %d ops (%.0f/s)  %d grants  anomalies: %d  faults: %s",
				prefix, s.Elapsed.Seconds(), s.Limit.Seconds(), s.Ops, s.OpsPerSecond, s.Grants, s.Anomalies, faults))
			return
		}
		if a.con.progressDue() {
			a.log.Info("progress", "run", strings.TrimSpace(prefix), "elapsed", s.Elapsed.Round(100*time.Millisecond),
				"limit", s.Limit, "ops", s.Ops, "ops_per_s", int(s.OpsPerSecond), "grants", s.Grants,
				"anomalies", s.Anomalies, "faults", faults)
		}
	}
}

// interruptible is ctx cancelled by a first Ctrl-C (or SIGTERM): the run
// stops, heals its faults, stops its processes and still writes the report
// of what was recorded. A second one exits at once; the servers and
// clients die with tumbler (parent-death signal, and the orphan sweep of
// the next run).
func (a *app) interruptible(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(ctx)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
		case <-done:
			return
		}
		a.con.clear()
		a.log.Warn("interrupted: stopping the run, healing its faults and writing the report of what was recorded (Ctrl-C again quits at once)")
		cancel()
		select {
		case <-sigs:
			a.con.clear()
			fmt.Fprintln(a.stderr, "tumbler: quit at once: no report; the servers and clients die with tumbler")
			procgroup.KillAll() // the clients and what they started
			os.Exit(outcome.ExitAbort)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}

// progressDue says whether a progress line is due in the log (one every
// progressEvery when there is no status line to update), and counts it.
func (c *console) progressDue() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.lastProgress) < progressEvery {
		return false
	}
	c.lastProgress = time.Now()
	return true
}
