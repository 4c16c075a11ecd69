// Command locknode runs locknode nodes and talks to them.
//
//	locknode dev   [flags]   an N-node cluster in one process on loopback
//	locknode serve [flags]   one node of a real deployment
//
// Run "locknode <command> -h" for a command's flags.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"
)

// command is one subcommand. Files add theirs to commands from init, so
// a new subcommand is one new file.
type command struct {
	name    string
	summary string
	// run parses args (the arguments after the command name) and runs
	// until ctx ends (SIGINT/SIGTERM) or the work is done. It returns the
	// process exit code.
	run func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

var commands = map[string]*command{}

func register(c *command) {
	if _, dup := commands[c.name]; dup {
		panic("locknode: command registered twice: " + c.name)
	}
	commands[c.name] = c
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: locknode <command> [flags]")
	fmt.Fprintln(w, "commands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "--version" || args[0] == "-version" {
		args[0] = "version"
	}
	c := commands[args[0]]
	if c == nil {
		fmt.Fprintf(stderr, "locknode: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return c.run(ctx, args[1:], stdout, stderr)
}
