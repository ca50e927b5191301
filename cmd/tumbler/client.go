package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tumbler-dev/tumbler/clients"
	"github.com/tumbler-dev/tumbler/outcome"
)

func (a *app) clientCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "client",
		Short: "Write a lock client of your own (tumbler client new)",
		Args:  noArgs,
	}
	var lang, dir string
	newCmd := &cobra.Command{
		Use:   "new NAME --lang " + strings.Join(clients.LangNames(), "|") + " [--dir DIR]",
		Short: "Write a client directory — program, manifest, README — that passes tumbler conform as it is",
		Long: `new writes a client directory for a lock client of your own: the program,
which speaks the lock client protocol (clients/PROTOCOL.md: dispatch on the
request's type, each outcome mapped to ok, fail or info, steps reported as
init arms them, credentials read from the file or variable init names, TLS),
its manifest (client.json) and a README. For python and php it drives the
lock of the language's Redis library on Debian (redis-py's Lock, Symfony
Lock's RedisStore); for go, node and java it speaks RESP with the standard
library, so that it runs here with nothing installed. Each passes
"tumbler conform --client DIR" against a real server as written; then swap
in your library's calls where the program says LIBRARY, say in client.json
what your library does, and conform, run and hunt it with --client DIR.

Exit codes: 0 written, 254 a bad name, language or directory.`,
		Example: `  tumbler client new my-lock --lang python
  tumbler conform --client ./my-lock --trace
  tumbler hunt --client ./my-lock --nemesis step-pause,step-crash,partition --budget 5m`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if lang == "" {
				return fmt.Errorf("--lang: give the client's language (%s)", strings.Join(clients.LangNames(), ", "))
			}
			out, err := clients.Scaffold(args[0], lang, dir)
			if errors.Is(err, clients.ErrScaffold) {
				return failed(outcome.Input(err))
			}
			if err != nil {
				return failed(err)
			}
			fmt.Fprintf(a.stdout, "wrote %s (see its README.md); check it with: tumbler conform --client %s\n", out, dirArg(out))
			return nil
		},
	}
	newCmd.Flags().StringVar(&lang, "lang", "", "the program's language: "+strings.Join(clients.LangNames(), ", "))
	newCmd.Flags().StringVar(&dir, "dir", "", "the directory to write (default ./NAME; its last element must be NAME)")
	cmd.AddCommand(newCmd)
	return cmd
}

// dirArg is dir as --client takes it: a path, not a shipped client's name.
func dirArg(dir string) string {
	if strings.ContainsRune(dir, '/') || strings.HasPrefix(dir, ".") {
		return dir
	}
	return "./" + dir
}
