package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/locknode/locknode/api"
)

func init() {
	addCommand(newStatusCmd)
	addCommand(newLocksCmd)
	addCommand(newJoinCmd)
}

// runJoin asks a running cluster (through any node's HTTP API) to add a
// voter. It is the operator's alternative to starting the new node with
// "serve --join"; repeating it is harmless.
func newJoinCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "join --id ID --raft-addr HOST:PORT [flags]",
		Short: "add a node to a running cluster as a voter (admin)",
		Long: `Ask a running cluster (through any node's HTTP API) to add a voter. It is the
operator's alternative to starting the new node with "serve --join"; repeating
it is harmless. The leader first checks that --raft-addr answers as a member's
peer port, so that a mistyped or dead address does not become a voter that
counts towards the quorum and never votes; --force skips the check (a node
that is not started yet), and is taken by the leader only: list it in
--endpoints.`,
		Example: `  locknode join --id n4 --raft-addr 10.0.0.4:7000 --endpoints 10.0.0.1:8080
  locknode join --force --id n4 --raft-addr 10.0.0.4:7000 --endpoints 10.0.0.1:8080,10.0.0.2:8080,10.0.0.3:8080`,
		Args: noArgs,
	}
	fs := cmd.Flags()
	cf := addClientFlags(fs)
	id := fs.String("id", "", "id of the node to add (required)")
	raftAddr := fs.String("raft-addr", "", "raft address the cluster dials the new node at (required)")
	// Not LOCKNODE_ID / LOCKNODE_RAFT_ADDR: on a node those name the node
	// itself, and adding it again at another address would move it.
	ownEnv(fs, "id", "LOCKNODE_JOIN_ID")
	ownEnv(fs, "raft-addr", "LOCKNODE_JOIN_RAFT_ADDR")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	asJSON := fs.Bool("json", false, `print {"id": ..., "raft_addr": ...} of the added voter`)
	force := fs.Bool("force", false, "add the voter without the leader's check that --raft-addr answers (a node not started yet)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx, stdout, stderr := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
		return exitWith(func() int {
			if *id == "" || *raftAddr == "" {
				fmt.Fprintln(stderr, "locknode join: --id and --raft-addr are required")
				return exitUsage
			}
			c, err := cf.client(stderr)
			if err != nil {
				fmt.Fprintln(stderr, "locknode join:", err)
				return exitUsage
			}
			rctx, cancel := context.WithTimeout(ctx, *timeout)
			defer cancel()
			add := c.AddVoter
			if *force {
				add = c.AddVoterForce
			}
			if err := add(rctx, *id, *raftAddr); err != nil {
				fmt.Fprintln(stderr, "locknode join:", explain(err))
				return exitLockFailed
			}
			if *asJSON {
				return printJSON(stdout, stderr, map[string]string{"id": *id, "raft_addr": *raftAddr})
			}
			fmt.Fprintf(stdout, "added %s at %s\n", *id, *raftAddr)
			return 0
		}())
	}
	return cmd
}

func newStatusCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status [flags]",
		Short: "show a node's view of the cluster (--cluster: every member's, asked directly)",
		Example: `  locknode status --endpoints 10.0.0.1:8080
  locknode status --cluster --endpoints 10.0.0.1:8080   # finds and asks every member
  locknode status --json | jq .leader
  until locknode status >/dev/null 2>&1; do sleep 1; done   # wait for a leader`,
		Args: noArgs,
		Annotations: map[string]string{annExitCodes: `  0    a leader is known (with --cluster: every member and endpoint answered,
       each knows a leader, and the leader hears from every voter)
  1    no leader, or no node reachable (check --endpoints / LOCKNODE_ENDPOINTS);
       with --cluster also: a member that does not answer, or a voter the
       leader has not heard from lately
  2    bad command line (the reason is printed first)
`},
	}
	fs := cmd.Flags()
	cf := addClientFlags(fs)
	asJSON := fs.Bool("json", false, "print the raw JSON status (with --cluster: an array, one entry per member, then per endpoint that is no member)")
	cluster := fs.Bool("cluster", false, "find every member through the endpoints and ask each at its own HTTP address: role, readiness, indexes, last contact, versions")
	timeout := fs.Duration("timeout", 10*time.Second, "give up after this long")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx, stdout, stderr := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
		return exitWith(func() int {
			rctx, cancel := context.WithTimeout(ctx, *timeout)
			defer cancel()
			if *cluster {
				return clusterStatus(rctx, cf, *asJSON, stdout, stderr)
			}
			c, err := cf.client(stderr)
			if err != nil {
				fmt.Fprintln(stderr, "locknode status:", err)
				return exitUsage
			}
			st, err := c.Status(rctx)
			if err != nil {
				fmt.Fprintln(stderr, "locknode status:", explain(err))
				return exitLockFailed
			}
			if *asJSON {
				if code := printJSON(stdout, stderr, st); code != 0 {
					return code
				}
			} else {
				printStatus(stdout, st)
			}
			// Reported, but the exit code stays the leader's: the node
			// answering may be a follower, which cannot tell.
			unreachableVoters(stderr, st)
			if st.Leader == "" {
				fmt.Fprintf(stderr, "locknode status: no leader known to node %s: the cluster has no quorum or is electing one\n", st.ID)
				return exitLockFailed
			}
			return 0
		}())
	}
	return cmd
}

func printStatus(stdout io.Writer, st api.Status) {
	fmt.Fprintf(stdout, "id=%s state=%s leader=%s term=%d applied_index=%d commit_index=%d\n",
		st.ID, st.State, orNone(st.Leader), st.Term, st.AppliedIndex, st.CommitIndex)
	if st.Leader != "" {
		fmt.Fprintf(stdout, "leader_http=%s leader_raft=%s\n", orNone(st.LeaderHTTPAddr), orNone(st.LeaderAddr))
	}
	fmt.Fprintf(stdout, "locks=%d keys=%d waiters=%d sessions=%d\n", st.Locks, st.Keys, st.Waiters, st.Sessions)
	if st.ClusterVersion != 0 {
		fmt.Fprintf(stdout, "cluster_version=%d runs=%s\n", st.ClusterVersion, st.ClusterVersions)
	}
	if st.Halted != "" {
		fmt.Fprintf(stdout, "apply_halted=%q\n", st.Halted)
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMBER\tADDRESS\tHTTP\tSUFFRAGE\tLEADER\tLAST_CONTACT")
	for _, m := range st.Members {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%v\t%s\n", m.ID, m.Address, orNone(m.HTTPAddr), m.Suffrage, m.Leader, contactText(m))
	}
	tw.Flush()
}

// contactText is a member's last contact as the leader saw it: "-" where
// the status is not the leader's (or for the leader itself).
func contactText(m api.Member) string {
	ago := "never"
	if m.LastContactMs != nil {
		ago = (time.Duration(*m.LastContactMs) * time.Millisecond).String() + " ago"
	}
	switch {
	case m.Unreachable:
		return "UNREACHABLE (last " + ago + ")"
	case m.LastContactMs != nil:
		return ago
	}
	return "-"
}

// unreachableVoters reports, on stderr, the voters st (a leader's status)
// marks unreachable, and how many.
func unreachableVoters(stderr io.Writer, st api.Status) int {
	n := 0
	for _, m := range st.Members {
		if m.Unreachable && m.Suffrage == "voter" {
			n++
			fmt.Fprintf(stderr, "locknode status: voter %s (%s) does not answer the leader %s: %s\n", m.ID, m.Address, st.ID, contactText(m))
		}
	}
	return n
}

func newLocksCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "locks [flags]",
		Short: "list locks, their holders, waiters and leases",
		Example: `  locknode locks
  locknode locks --prefix jobs/ --json
  locknode locks --stale --endpoints 10.0.0.2:8080   # this node's view, without the leader`,
		Args: noArgs,
	}
	fs := cmd.Flags()
	cf := addClientFlags(fs)
	prefix := fs.String("prefix", "", "only keys starting with this")
	asJSON := fs.Bool("json", false, "print a JSON array of api.LockInfo")
	stale := fs.Bool("stale", false, "read the answering node's state without confirming with the leader")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx, stdout, stderr := cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr()
		return exitWith(func() int {
			c, err := cf.client(stderr)
			if err != nil {
				fmt.Fprintln(stderr, "locknode locks:", err)
				return exitUsage
			}
			rctx, cancel := context.WithTimeout(ctx, *timeout)
			defer cancel()
			all := []api.LockInfo{}
			req := api.ListRequest{Prefix: *prefix, Limit: 1000, ReadOptions: api.ReadOptions{Stale: *stale}}
			for {
				page, err := c.List(rctx, req)
				if err != nil {
					fmt.Fprintln(stderr, "locknode locks:", explain(err))
					return exitLockFailed
				}
				all = append(all, page.Locks...)
				if page.Next == "" {
					break
				}
				req.After = page.Next
			}
			if *asJSON {
				return printJSON(stdout, stderr, all)
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KEY\tKIND\tFENCE\tHOLDERS\tWAITERS\tTTL")
			now := time.Now()
			for _, l := range all {
				var hs []string
				for _, h := range l.Holders {
					d := fmt.Sprintf("%s(%s,fence=%d", h.Owner, h.Mode, h.Fence)
					if ago := since(h.GrantedMs, now); ago != "" {
						d += ",since=" + ago
					}
					if len(h.Meta) > 0 {
						d += "," + metaText(h.Meta)
					}
					hs = append(hs, d+")")
				}
				ttl := "-"
				if l.TTLMs >= 0 {
					ttl = (time.Duration(l.TTLMs) * time.Millisecond).String()
				}
				fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%s\n", l.Key, l.Kind, l.Fence, orNone(strings.Join(hs, " ")), len(l.Waiters), ttl)
			}
			tw.Flush()
			return 0
		}())
	}
	return cmd
}

func printJSON(stdout, stderr io.Writer, v any) int {
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fmt.Fprintln(stderr, "locknode:", err)
		return exitLockFailed
	}
	return 0
}

func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
