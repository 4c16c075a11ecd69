package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

func init() {
	register(&command{
		name:    "elect",
		summary: "run a command while leading an election: elect NAME VALUE [flags] -- CMD ARGS...",
		run:     runElect,
	})
}

// runElect campaigns for election NAME with VALUE (waiting behind other
// candidates), then runs CMD in its own process group with the fence in
// LOCKNODE_FENCE while leading, and resigns when CMD exits. Leadership is
// bound to a session kept alive meanwhile; when it is lost (the session
// cannot be kept, or another campaign is seen leading) CMD's group is
// killed at once: another leader may already act. On SIGINT/SIGTERM the
// group gets SIGTERM, then SIGKILL after --grace. Exit code: the
// command's (128+signal if a signal ended it), 1 on other errors (lost
// leadership included, when CMD had to be stopped), 2 on usage errors.
func runElect(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("elect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: locknode elect NAME VALUE [flags] -- CMD [ARGS...]")
		fs.PrintDefaults()
	}
	cf := addClientFlags(fs)
	ttl := fs.Duration("ttl", 10*time.Second, "session length; kept alive every ttl/3 while leading")
	grace := fs.Duration("grace", 5*time.Second, "time between SIGTERM and SIGKILL when locknode is interrupted")
	var pos []string
	rest := args
	for len(pos) < 2 && len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		pos, rest = append(pos, rest[0]), rest[1:]
	}
	if err := fs.Parse(rest); err != nil {
		return exitUsage
	}
	cmdArgs := fs.Args()
	for len(pos) < 2 && len(cmdArgs) > 0 {
		pos, cmdArgs = append(pos, cmdArgs[0]), cmdArgs[1:]
	}
	if len(pos) < 2 || pos[0] == "" || pos[1] == "" || len(cmdArgs) == 0 {
		fs.Usage()
		return exitUsage
	}
	name, value := pos[0], pos[1]
	if *ttl <= 0 || *grace < 0 {
		fmt.Fprintln(stderr, "locknode elect: --ttl must be positive, --grace not negative")
		return exitUsage
	}
	c, err := cf.client(stderr)
	if err != nil {
		fmt.Fprintln(stderr, "locknode elect:", err)
		return exitUsage
	}
	sess, err := c.NewSession(ctx, *ttl)
	if err != nil {
		fmt.Fprintf(stderr, "locknode elect: session: %v\n", err)
		return exitLockFailed
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = sess.Close(cctx) // releases the election if Resign did not
	}()
	l, err := c.Elect(ctx, name, value, sess)
	if err != nil {
		fmt.Fprintf(stderr, "locknode elect: %s: %v\n", name, err)
		return exitLockFailed
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := l.Resign(rctx); err != nil {
			fmt.Fprintf(stderr, "locknode elect: resigning %s: %v\n", name, err)
		}
	}()

	ch, err := startChild(cmdArgs, []string{
		"LOCKNODE_FENCE=" + strconv.FormatUint(l.Fence(), 10),
		"LOCKNODE_ELECTION=" + name,
		"LOCKNODE_VALUE=" + value}, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "locknode elect: starting %s: %v\n", cmdArgs[0], err)
		return exitStartFailed
	}
	defer ch.group.close()

	select {
	case waitErr := <-ch.exited:
		return exitCode(waitErr)
	case <-l.Done():
		// Another leader may act already: no grace.
		fmt.Fprintf(stderr, "locknode elect: %s: %v; stopping %s\n", name, l.Err(), cmdArgs[0])
		_ = stopGroup(ch.group, ch.exited, 0, time.Now())
		return exitLockFailed
	case <-ctx.Done():
		return exitCode(stopGroup(ch.group, ch.exited, *grace, time.Now().Add(*grace)))
	}
}
