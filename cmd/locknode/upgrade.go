package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

func init() {
	addCommand(newClusterCmd)
}

const clusterUpgradeUsage = `when this node, as leader, activates a newer cluster version: auto (once every member runs it) or manual (only by "locknode cluster upgrade"; keeps the rollback window open, docs/UPGRADING.md)`

// parseClusterUpgrade parses --cluster-upgrade: whether activation is
// manual.
func parseClusterUpgrade(s string) (manual bool, err error) {
	switch s {
	case "auto":
		return false, nil
	case "manual":
		return true, nil
	}
	return false, fmt.Errorf("--cluster-upgrade %q: want auto or manual", s)
}

// newClusterCmd groups cluster-wide operations: upgrade activates the
// highest cluster version every member runs.
func newClusterCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "cluster upgrade [flags]",
		Short:   "cluster-wide operations: upgrade activates a newer cluster version (admin)",
		Example: "  locknode cluster upgrade --endpoints 10.0.0.1:8080",
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError("a subcommand is required: upgrade")
			}
			return usageError("unknown subcommand %q (upgrade)", args[0])
		},
	}
	up := &cobra.Command{
		Use:   "upgrade [flags]",
		Short: "activate the highest cluster version every member runs (admin); closes the rollback window",
		Long: `Activate the highest cluster version every member of the cluster runs, through
the log. New features of the binaries wait for it. Once it is active, a node
cannot be rolled back to a binary that does not run it (docs/UPGRADING.md).
With nothing newer to activate it changes nothing and says so. A member that
does not answer blocks it (exit 1).`,
		Example: "  locknode cluster upgrade --endpoints 10.0.0.1:8080\n  locknode cluster upgrade --json",
		Args:    noArgs,
	}
	fs := up.Flags()
	cf := addClientFlags(fs)
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	asJSON := fs.Bool("json", false, `print {"before": ..., "cluster_version": ..., "members": {id: "min..max"}}`)
	up.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx, stdout, stderr := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
		return exitWith(func() int {
			c, err := cf.client(stderr)
			if err != nil {
				fmt.Fprintln(stderr, "locknode cluster upgrade:", err)
				return exitUsage
			}
			rctx, cancel := context.WithTimeout(ctx, *timeout)
			defer cancel()
			res, err := c.Upgrade(rctx)
			if err != nil {
				fmt.Fprintln(stderr, "locknode cluster upgrade:", explain(err))
				return exitLockFailed
			}
			if *asJSON {
				return printJSON(stdout, stderr, res)
			}
			ids := make([]string, 0, len(res.Members))
			for id := range res.Members {
				ids = append(ids, id)
			}
			slices.Sort(ids)
			var ms []string
			for _, id := range ids {
				ms = append(ms, id+" "+res.Members[id])
			}
			if res.ClusterVersion == res.Before {
				fmt.Fprintf(stdout, "cluster version %d: nothing newer every member runs (members: %s)\n", res.ClusterVersion, strings.Join(ms, ", "))
			} else {
				fmt.Fprintf(stdout, "cluster version %d activated (was %d; members: %s)\n", res.ClusterVersion, res.Before, strings.Join(ms, ", "))
			}
			return 0
		}())
	}
	cmd.AddCommand(up)
	return cmd
}
