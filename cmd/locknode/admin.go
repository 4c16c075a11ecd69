package main

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/client"
)

func init() {
	addCommand(newMembersCmd)
	addCommand(newReleaseCmd)
}

// newMembersCmd lists the raft configuration, removes a member, or
// removes the node the first endpoint names (leave: run it against the
// node that goes away).
func newMembersCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "members list|remove ID|leave|transfer-leader [ID] [flags]",
		Short: "list the cluster's members, remove one, make a node leave, or move leadership",
		Example: `  locknode members list --endpoints 10.0.0.1:8080
  locknode members list --json
  locknode members remove n3                         # admin
  locknode members leave --endpoints 10.0.0.3:8080   # admin: the node at that address leaves
  locknode members transfer-leader n2                # admin: n2 becomes the leader`,
		RunE: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError("a subcommand is required: list, remove ID, leave or transfer-leader [ID]")
			}
			return usageError("unknown subcommand %q (list, remove ID, leave, transfer-leader [ID])", args[0])
		},
	}
	fs := cmd.PersistentFlags()
	cf := addClientFlags(fs)
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	connect := func(cmd *cobra.Command) (*client.Client, context.Context, context.CancelFunc, error) {
		c, err := cf.client(cmd.ErrOrStderr())
		if err != nil {
			return nil, nil, nil, usageError("%w", err)
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), *timeout)
		return c, ctx, cancel, nil
	}
	remove := func(ctx context.Context, cmd *cobra.Command, c *client.Client, id string) error {
		if err := c.RemoveServer(ctx, id); err != nil {
			return &exitError{code: exitLockFailed, err: fmt.Errorf("removing %s: %s", id, explain(err))}
		}
		fmt.Fprintf(cmd.OutOrStdout(), "removed %s\n", id)
		return nil
	}

	list := &cobra.Command{
		Use:     "list [flags]",
		Short:   "list the members: id, raft address, voter or not, leader",
		Example: "  locknode members list --endpoints 10.0.0.1:8080\n  locknode members list --json | jq -r '.[].id'",
	}
	asJSON := list.Flags().Bool("json", false, "print a JSON array of members")
	list.RunE = func(cmd *cobra.Command, _ []string) error {
		c, ctx, cancel, err := connect(cmd)
		if err != nil {
			return err
		}
		defer cancel()
		st, err := c.Status(ctx)
		if err != nil {
			return &exitError{code: exitLockFailed, err: errors.New(explain(err))}
		}
		if *asJSON {
			return exitWith(printJSON(cmd.OutOrStdout(), cmd.ErrOrStderr(), st.Members))
		}
		tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tADDRESS\tSUFFRAGE\tLEADER")
		for _, m := range st.Members {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%v\n", m.ID, m.Address, m.Suffrage, m.Leader)
		}
		return tw.Flush()
	}

	rm := &cobra.Command{
		Use:     "remove ID [flags]",
		Short:   "remove a member from the cluster (admin)",
		Example: "  locknode members remove n3 --endpoints 10.0.0.1:8080",
		Args:    exactArgs(1, "a member ID"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, ctx, cancel, err := connect(cmd)
			if err != nil {
				return err
			}
			defer cancel()
			return remove(ctx, cmd, c, args[0])
		},
	}

	leave := &cobra.Command{
		Use:   "leave [flags]",
		Short: "remove the node the first --endpoints address names (admin)",
		Long: `Remove the node that answers at the first --endpoints address from the cluster:
run it against the node that goes away, before stopping it for good.`,
		Example: "  locknode members leave --endpoints 10.0.0.3:8080",
		RunE: func(cmd *cobra.Command, _ []string) error {
			// Ask the first endpoint alone who it is: with fail-over another
			// node could answer and remove itself instead.
			first := splitEndpoints(*cf.endpoints)
			if len(first) == 0 {
				return usageError("--endpoints / LOCKNODE_ENDPOINTS is empty")
			}
			c, ctx, cancel, err := connect(cmd)
			if err != nil {
				return err
			}
			defer cancel()
			one := cf
			one.endpoints = &first[0]
			oc, err := one.client(cmd.ErrOrStderr())
			if err != nil {
				return usageError("%w", err)
			}
			st, err := oc.Status(ctx)
			if err != nil {
				return &exitError{code: exitLockFailed, err: fmt.Errorf("leave: %s", explain(err))}
			}
			return remove(ctx, cmd, c, st.ID)
		},
	}
	cmd.AddCommand(list, rm, leave, newTransferLeaderCmd(cf, timeout))
	return cmd
}

// runRelease ends every hold on KEY whoever holds it. Holders are not
// told: their next renewal fails, and fenced writes with their token are
// refused once the next holder's token is checked.
func newReleaseCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "release --force KEY [flags]",
		Short: "release a lock whoever holds it (admin)",
		Long: `End every hold on KEY whoever holds it (admin). A lock's own holder releases it
by ending "locknode lock". Holders are not told: their next renewal fails, and
fenced writes with their token are refused once the next holder's token is
checked.`,
		Example: `  locknode release --force nightly-backup
  locknode release --force --json stuck/job --endpoints 10.0.0.1:8080`,
		Args: exactArgs(1, "one KEY"),
	}
	fs := cmd.Flags()
	cf := addClientFlags(fs)
	force := fs.Bool("force", false, "required: release whoever holds KEY")
	asJSON := fs.Bool("json", false, "print the release result as JSON")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	cmd.RunE = func(cmd *cobra.Command, pos []string) error {
		ctx, stdout, stderr := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
		if !*force {
			return usageError("--force is required: it releases KEY whoever holds it")
		}
		return exitWith(func() int {
			c, err := cf.client(stderr)
			if err != nil {
				fmt.Fprintln(stderr, "locknode release:", err)
				return exitUsage
			}
			rctx, cancel := context.WithTimeout(ctx, *timeout)
			defer cancel()
			res, err := c.Release(rctx, api.ReleaseRequest{Key: pos[0], Force: true})
			switch {
			case errors.Is(err, api.ErrNotHeld):
				res.Released = false
			case err != nil:
				fmt.Fprintf(stderr, "locknode release: %s: %s\n", pos[0], explain(err))
				return exitLockFailed
			}
			if *asJSON {
				return printJSON(stdout, stderr, res)
			}
			if res.Released {
				fmt.Fprintf(stdout, "released %s\n", pos[0])
			} else {
				fmt.Fprintf(stdout, "%s was not held\n", pos[0])
			}
			return 0
		}())
	}
	return cmd
}
