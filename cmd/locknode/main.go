// Command locknode runs locknode nodes and talks to them.
//
//	locknode dev   [flags]   an N-node cluster in one process on loopback
//	locknode serve [flags]   one node of a real deployment
//
// Run "locknode --help" for every command, "locknode <command> --help"
// for one's flags, examples and exit codes.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command line args until the command is done or SIGINT or
// SIGTERM arrives, and returns the process exit code.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return execute(ctx, args, stdout, stderr)
}
