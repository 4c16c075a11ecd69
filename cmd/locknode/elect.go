package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/locknode/locknode/api"
)

func init() { addCommand(newElectCmd) }

// runElect campaigns for election NAME with VALUE (waiting behind other
// candidates), then runs CMD in its own process group with the fence in
// LOCKNODE_FENCE while leading, and resigns when CMD exits. Leadership is
// bound to a session kept alive meanwhile; when it is lost (the session
// cannot be kept, or another campaign is seen leading) CMD's group is
// killed at once: another leader may already act. On SIGINT/SIGTERM the
// group gets SIGTERM, then SIGKILL after --grace. Exit code: the
// command's (128+signal if a signal ended it), 1 on other errors (lost
// leadership included, when CMD had to be stopped), 2 on usage errors.
func newElectCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "elect NAME VALUE [flags] -- CMD [ARGS...] | elect --observe NAME",
		Short: "run a command while leading an election, or watch an election's leader",
		Long: `Campaign for election NAME with VALUE (waiting behind other candidates), then
run CMD with the leadership's fencing token in LOCKNODE_FENCE (and
LOCKNODE_ELECTION, LOCKNODE_VALUE) while leading, and resign when CMD exits.
When leadership is lost CMD's process group is killed at once: another leader
may already act. Flags may come before or after NAME VALUE.

With --observe, print election NAME's current leader (its value and fence, or
"(no leader)") and then every change, until interrupted; it campaigns for
nothing (read permission is enough).`,
		Example: `  locknode elect scheduler "$(hostname)" -- ./scheduler
  locknode elect --ttl 5s primary 10.0.0.7:5432 -- ./run-primary.sh
  locknode elect --observe scheduler
  locknode elect --observe --json primary | jq -r .value`,
		Args: cobra.ArbitraryArgs,
		Annotations: map[string]string{annMaxArgs: "2", annExitCodes: `  CMD's own  CMD ran while leading (128+N if signal N ended it)
  1          no leader reachable (no quorum, wrong --endpoints / LOCKNODE_ENDPOINTS), the cluster refused, or leadership was lost
  2          bad command line (the reason is printed first)
  127        CMD could not be started
`},
	}
	fs := cmd.Flags()
	cf := addClientFlags(fs)
	ttl := fs.Duration("ttl", 10*time.Second, "session length; kept alive every ttl/3 while leading")
	grace := fs.Duration("grace", 5*time.Second, "time between SIGTERM and SIGKILL when locknode is interrupted")
	observe := fs.Bool("observe", false, "print the election's leader and each change until interrupted, instead of campaigning")
	asJSON := fs.Bool("json", false, "with --observe: print each leader as a JSON object on a line of its own")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		ctx, stdout, stderr := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
		pos, cmdArgs := splitAtDash(cmd, args)
		if *observe {
			if len(pos) != 1 || pos[0] == "" || len(cmdArgs) > 0 {
				return usageError("--observe takes one election NAME and no command, got %q", args)
			}
			return exitWith(observeElection(ctx, cf, pos[0], *asJSON, stdout, stderr))
		}
		if *asJSON {
			return usageError("--json goes with --observe")
		}
		if len(pos) != 2 || pos[0] == "" || pos[1] == "" || len(cmdArgs) == 0 {
			return usageError("an election NAME, a VALUE and a command after them are required, got %q", args)
		}
		return exitWith(func() int {
			name, value := pos[0], pos[1]
			if *ttl <= 0 || *grace < 0 {
				fmt.Fprintln(stderr, "locknode elect: --ttl must be positive, --grace not negative")
				return exitUsage
			}
			c, err := cf.client(stderr)
			if err != nil {
				fmt.Fprintln(stderr, "locknode elect:", api.ClientText(err))
				return exitUsage
			}
			sess, err := c.NewSession(ctx, *ttl)
			if err != nil {
				fmt.Fprintf(stderr, "locknode elect: session: %s\n", explain(err))
				return exitLockFailed
			}
			defer func() {
				cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = sess.Close(cctx) // releases the election if Resign did not
			}()
			l, err := c.Elect(ctx, name, value, sess)
			if err != nil {
				fmt.Fprintf(stderr, "locknode elect: %s: %s\n", name, explain(err))
				return exitLockFailed
			}
			defer func() {
				rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				if err := l.Resign(rctx); err != nil {
					fmt.Fprintf(stderr, "locknode elect: resigning %s: %v\n", name, api.ClientText(err))
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
				fmt.Fprintf(stderr, "locknode elect: %s: %v; stopping %s\n", name, api.ClientText(l.Err()), cmdArgs[0])
				_ = stopGroup(ch.group, ch.exited, 0, time.Now())
				return exitLockFailed
			case <-ctx.Done():
				return exitCode(stopGroup(ch.group, ch.exited, *grace, time.Now().Add(*grace)))
			}
		}())
	}
	return cmd
}

// observeElection prints election name's leader and each change until
// ctx ends (exit 0), or 1 when no node can be reached at first. A
// broken stream is resumed by the client on another endpoint.
func observeElection(ctx context.Context, cf clientFlags, name string, asJSON bool, stdout, stderr io.Writer) int {
	c, err := cf.client(stderr)
	if err != nil {
		fmt.Fprintln(stderr, "locknode elect:", err)
		return exitUsage
	}
	ch, err := c.Observe(ctx, name)
	if err != nil {
		fmt.Fprintf(stderr, "locknode elect: observing %s: %s\n", name, explain(err))
		return exitLockFailed
	}
	enc := json.NewEncoder(stdout)
	for l := range ch {
		l = l.Public()
		switch {
		case asJSON:
			if err := enc.Encode(l); err != nil {
				fmt.Fprintln(stderr, "locknode elect:", err)
				return exitLockFailed
			}
		case l.Value == "" && l.Fence == 0:
			fmt.Fprintln(stdout, "(no leader)")
		default:
			fmt.Fprintf(stdout, "%s (fence %d)\n", l.Value, l.Fence)
		}
	}
	return exitOK
}
