package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

// newTransferLeaderCmd is `members transfer-leader [ID]`. Only the
// leader takes a transfer, so the command asks any endpoint who leads
// and sends it to the leader's HTTP address first, with --endpoints
// after it (a follower refuses, naming the leader, and the client moves
// on).
func newTransferLeaderCmd(cf clientFlags, timeout *time.Duration) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "transfer-leader [ID] [flags]",
		Short: "make voter ID (or the most up-to-date voter) the leader (admin)",
		Long: `Ask the leader to hand leadership to voter ID, or without ID to the voter that is
most up to date, and wait until the new leader is known; it prints the new
leader. Use it before stopping or upgrading the leader's machine, so that the
cluster does not wait out an election timeout. Locks, sessions and fences are
unaffected; requests in flight at the moment of the hand-over are retried by
clients as after any change of leader.`,
		Example: `  locknode members transfer-leader --endpoints 10.0.0.1:8080
  locknode members transfer-leader n2 --endpoints 10.0.0.1:8080,10.0.0.2:8080
  locknode members transfer-leader --json n3`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageError("want at most one member ID, got %q", args)
			}
			return nil
		},
	}
	asJSON := cmd.Flags().Bool("json", false, `print {"previous", "leader", "leader_http_addr"}`)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		ctx, stdout, stderr := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
		id := ""
		if len(args) == 1 {
			if id = args[0]; id == "" {
				return usageError("the member ID is empty")
			}
		}
		eps := splitEndpoints(*cf.endpoints)
		if len(eps) == 0 {
			return usageError("--endpoints / LOCKNODE_ENDPOINTS is empty")
		}
		c, err := cf.client(stderr)
		if err != nil {
			return usageError("%w", err)
		}
		tctx, cancel := context.WithTimeout(ctx, *timeout)
		defer cancel()
		st, err := c.Status(tctx)
		if err != nil {
			return &exitError{code: exitLockFailed, err: fmt.Errorf("finding the leader: %s", explain(err))}
		}
		if st.Leader == "" {
			return &exitError{code: exitLockFailed, err: fmt.Errorf("node %s knows no leader: the cluster has no quorum or is electing one", st.ID)}
		}
		if id == st.Leader {
			return &exitError{code: exitLockFailed, err: fmt.Errorf("%s is already the leader", id)}
		}
		lc := c
		if st.LeaderHTTPAddr != "" {
			// The leader first, then --endpoints in case it moved meanwhile.
			withLeader := schemeOf(eps[0]) + st.LeaderHTTPAddr
			for _, e := range eps {
				withLeader += "," + e
			}
			lf := cf
			lf.endpoints = &withLeader
			if lc, err = lf.client(stderr); err != nil {
				return usageError("%w", err)
			}
		}
		res, err := lc.TransferLeadership(tctx, id)
		if err != nil {
			return &exitError{code: exitLockFailed, err: errors.New(explain(err))}
		}
		leaderHTTP := ""
		if nst, err := lc.Status(tctx); err == nil && nst.Leader == res.Leader {
			leaderHTTP = nst.LeaderHTTPAddr
		}
		if *asJSON {
			return exitWith(printJSON(stdout, stderr, map[string]string{"previous": res.Previous, "leader": res.Leader, "leader_http_addr": leaderHTTP}))
		}
		if leaderHTTP != "" {
			fmt.Fprintf(stdout, "leadership moved from %s to %s (http %s)\n", res.Previous, res.Leader, leaderHTTP)
		} else {
			fmt.Fprintf(stdout, "leadership moved from %s to %s\n", res.Previous, res.Leader)
		}
		return nil
	}
	return cmd
}
