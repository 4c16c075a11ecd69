package main

import (
	"context"
	"io"
)

// Each runs one subcommand in-process as "locknode NAME args..." would,
// and returns its exit code.

func runCmd(name string) func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		return execute(ctx, append([]string{name}, args...), stdout, stderr)
	}
}

var (
	runServe    = runCmd("serve")
	runDev      = runCmd("dev")
	runLock     = runCmd("lock")
	runElect    = runCmd("elect")
	runStatus   = runCmd("status")
	runLocks    = runCmd("locks")
	runMembers  = runCmd("members")
	runRelease  = runCmd("release")
	runJoin     = runCmd("join")
	runSnapshot = runCmd("snapshot")
)
