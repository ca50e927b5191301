package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/spf13/cobra"
	tclog "github.com/testcontainers/testcontainers-go/log"

	"github.com/tumbler-dev/tumbler/outcome"
)

// exitError ends the command with code; err, when set, is printed.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// exit ends the command with code, having printed what it had to say.
func exit(code int) error {
	if code == 0 {
		return nil
	}
	return &exitError{code: code}
}

// failed ends the command with the exit code of an error of the packages
// (outcome.ErrorCode: bad input or a failure of the harness).
func failed(err error) error {
	if err == nil {
		return nil
	}
	return &exitError{outcome.ErrorCode(err), err}
}

// app holds what every command shares.
type app struct {
	stdout, stderr io.Writer
	args           []string
	logLevel       string
	log            *slog.Logger
	con            *console
}

// execute runs the command line args and returns the exit code.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a := &app{stdout: stdout, stderr: stderr, args: args}
	a.con = newConsole(stdout, stderr)
	root := a.rootCmd()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	a.con.clear()
	if err == nil {
		return outcome.ExitValid
	}
	code := outcome.ExitBadInput // what cobra itself refuses: flags, arguments, commands
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
		err = ee.err
	}
	if err != nil {
		msg := strings.TrimSpace(err.Error())
		if code == outcome.ExitBadInput {
			path := root.CommandPath()
			if c, _, ferr := root.Find(args); ferr == nil {
				path = c.CommandPath()
			}
			msg += " (see " + path + " --help)"
		}
		fmt.Fprintln(stderr, "tumbler: "+msg)
	}
	return code
}

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "tumbler",
		Short: "Jepsen-style fault injection and correctness checking for Redis distributed locks",
		Long: `tumbler runs a Redis lock — its own variants, the broken recipes of the blog
articles, or a peer client such as redsync — with concurrent clients against
real Redis servers while a nemesis injects faults (partitions, kills,
restarts, pauses, clock jumps, failovers), records every operation, checks the
history for double grants, stale writes, reused fencing tokens, lost updates
and locks that never expire, and writes a report directory.

Exit codes: 0 valid, 1 invalid, 2 unknown (or a valid verdict on an
interrupted run), 254 bad input (arguments, a plan, a history), 255 the
harness failed (a missing redis-server, say), 130 a second Ctrl-C. reproduce and matrix: 0 when every
run matched its row's expectation, 1 when one did not, 255 when none
mismatched but a run failed.`,
		Example: `  tumbler list
  tumbler reproduce single-restart-empty
  tumbler run --lock redlock --nodes 5 --nemesis kill,partition --time-limit 20s
  tumbler analyze store/latest`,
		SilenceUsage:      true,
		SilenceErrors:     true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error { return a.setupLog() },
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.PersistentFlags().StringVar(&a.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	root.AddCommand(a.runCmd(), a.planCmd(), a.listCmd(), a.reproduceCmd(), a.matrixCmd(), a.huntCmd(), a.campaignCmd(), a.shrinkCmd(), a.analyzeCmd(), a.auditCmd(), a.conformCmd(), a.clientCmd(), a.imageCmd())
	return root
}

// setupLog makes the logger: text lines on stderr that the status line
// steps aside for.
func (a *app) setupLog() error {
	var level slog.Level
	if err := level.UnmarshalText([]byte(a.logLevel)); err != nil {
		return fmt.Errorf("--log-level: %q unknown (valid: debug, info, warn, error)", a.logLevel)
	}
	a.log = slog.New(slog.NewTextHandler(a.con.logWriter(), &slog.HandlerOptions{Level: level}))
	// testcontainers prints a banner and its progress on its own global
	// logger: keep them for --log-level debug.
	tcLog.Store(a.log)
	tcLogOnce.Do(func() { tclog.SetDefault(printfLogger{}) })
	return nil
}

var (
	tcLog     atomic.Pointer[slog.Logger]
	tcLogOnce sync.Once
)

// printfLogger turns testcontainers' Printf lines into debug records of
// the latest command's logger.
type printfLogger struct{}

func (printfLogger) Printf(format string, v ...any) {
	if l := tcLog.Load(); l != nil {
		l.Debug(strings.TrimSpace(fmt.Sprintf(format, v...)), "from", "testcontainers")
	}
}
