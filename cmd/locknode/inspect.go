package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/locknode/locknode/api"
)

func init() {
	register(&command{name: "status", summary: "show a node's view of the cluster", run: runStatus})
	register(&command{name: "locks", summary: "list locks and their holders: locks [--prefix P] [--json]", run: runLocks})
	register(&command{name: "join", summary: "add a node to a running cluster: join --id ID --raft-addr HOST:PORT", run: runJoin})
}

// runJoin asks a running cluster (through any node's HTTP API) to add a
// voter. It is the operator's alternative to starting the new node with
// "serve --join"; repeating it is harmless.
func runJoin(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("join", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := addClientFlags(fs)
	id := fs.String("id", "", "id of the node to add (required)")
	raftAddr := fs.String("raft-addr", "", "raft address the cluster dials the new node at (required)")
	timeout := fs.Duration("timeout", time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return exitUsage
	}
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
	if err := c.AddVoter(rctx, *id, *raftAddr); err != nil {
		fmt.Fprintln(stderr, "locknode join:", err)
		return exitLockFailed
	}
	fmt.Fprintf(stdout, "added %s at %s\n", *id, *raftAddr)
	return 0
}

func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: locknode status [--cluster] [--json] [flags]")
		fs.PrintDefaults()
		fmt.Fprintln(stderr, "exit codes: 0 a leader is known (with --cluster: to every node, and every node answered), 1 otherwise, 2 bad command line")
	}
	cf := addClientFlags(fs)
	asJSON := fs.Bool("json", false, "print the raw JSON status (with --cluster: an array, one entry per endpoint)")
	cluster := fs.Bool("cluster", false, "ask every node in --endpoints for its own status, not just the first that answers")
	timeout := fs.Duration("timeout", 10*time.Second, "give up after this long")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
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
	if st.Leader == "" {
		fmt.Fprintf(stderr, "locknode status: no leader known to node %s: the cluster has no quorum or is electing one\n", st.ID)
		return exitLockFailed
	}
	return 0
}

func printStatus(stdout io.Writer, st api.Status) {
	fmt.Fprintf(stdout, "id=%s state=%s leader=%s term=%d applied_index=%d commit_index=%d\n",
		st.ID, st.State, orNone(st.Leader), st.Term, st.AppliedIndex, st.CommitIndex)
	fmt.Fprintf(stdout, "locks=%d keys=%d waiters=%d sessions=%d\n", st.Locks, st.Keys, st.Waiters, st.Sessions)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMBER\tADDRESS\tSUFFRAGE\tLEADER")
	for _, m := range st.Members {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%v\n", m.ID, m.Address, m.Suffrage, m.Leader)
	}
	tw.Flush()
}

// nodeStatus is one endpoint's answer in "status --cluster".
type nodeStatus struct {
	Endpoint string      `json:"endpoint"`
	Status   *api.Status `json:"status,omitempty"`
	Error    string      `json:"error,omitempty"`
}

// clusterStatus asks each endpoint on its own (a client with that one
// endpoint, so no fail-over hides a dead node) and prints a row per node,
// then the members no endpoint answered for.
func clusterStatus(ctx context.Context, cf clientFlags, asJSON bool, stdout, stderr io.Writer) int {
	eps := splitEndpoints(*cf.endpoints)
	if len(eps) == 0 {
		fmt.Fprintln(stderr, "locknode status: --endpoints / LOCKNODE_ENDPOINTS is empty")
		return exitUsage
	}
	nodes := make([]nodeStatus, len(eps))
	var wg sync.WaitGroup
	for i, ep := range eps {
		one := cf
		one.endpoints = &eps[i]
		c, err := one.client(io.Discard)
		if err != nil {
			fmt.Fprintln(stderr, "locknode status:", err)
			return exitUsage
		}
		nodes[i].Endpoint = ep
		wg.Add(1)
		// Ends when Status returns (ctx bounds it).
		go func(n *nodeStatus) {
			defer wg.Done()
			st, err := c.Status(ctx)
			if err != nil {
				n.Error = explain(err)
				return
			}
			n.Status = &st
		}(&nodes[i])
	}
	wg.Wait()
	healthy := true
	seen := map[string]bool{}
	var members []api.Member
	for _, n := range nodes {
		if n.Status == nil || n.Status.Leader == "" {
			healthy = false
			continue
		}
		seen[n.Status.ID] = true
		if len(members) == 0 {
			members = n.Status.Members
		}
	}
	var missing []string
	for _, m := range members {
		if !seen[m.ID] {
			missing = append(missing, m.ID)
		}
	}
	if asJSON {
		if code := printJSON(stdout, stderr, nodes); code != 0 {
			return code
		}
	} else {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ENDPOINT\tID\tSTATE\tLEADER\tTERM\tAPPLIED\tCOMMIT\tERROR")
		for _, n := range nodes {
			if n.Status == nil {
				fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t%s\n", n.Endpoint, n.Error)
				continue
			}
			st := n.Status
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t-\n", n.Endpoint, st.ID, st.State, orNone(st.Leader), st.Term, st.AppliedIndex, st.CommitIndex)
		}
		tw.Flush()
	}
	if len(missing) > 0 {
		fmt.Fprintf(stderr, "locknode status: members not in --endpoints: %s\n", strings.Join(missing, ", "))
	}
	if !healthy {
		fmt.Fprintln(stderr, "locknode status: not every node answered with a leader")
		return exitLockFailed
	}
	return 0
}

func runLocks(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("locks", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := addClientFlags(fs)
	prefix := fs.String("prefix", "", "only keys starting with this")
	asJSON := fs.Bool("json", false, "print a JSON array of api.LockInfo")
	stale := fs.Bool("stale", false, "read the answering node's state without confirming with the leader")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return exitUsage
	}
	c, err := cf.client(stderr)
	if err != nil {
		fmt.Fprintln(stderr, "locknode locks:", err)
		return exitUsage
	}
	rctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	all := []api.LockInfo{}
	req := api.ListRequest{Prefix: *prefix, Limit: 1000, ReadOptions: api.ReadOptions{Stale: *stale}}
	for {
		page, err := c.List(rctx, req)
		if err != nil {
			fmt.Fprintln(stderr, "locknode locks:", err)
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
