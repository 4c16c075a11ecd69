package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/client"
)

// Roles of a row of "status --cluster".
const (
	roleLeader      = "leader"
	roleFollower    = "follower"
	roleUnreachable = "unreachable"
)

// nodeStatus is one member (or one --endpoints entry that is no member)
// in "status --cluster": its own answer, asked directly, and the
// leader's view of it.
type nodeStatus struct {
	ID string `json:"id,omitempty"`
	// Endpoint is the HTTP address asked: from --endpoints, or the
	// member's HTTP address as the cluster reported it.
	Endpoint string `json:"endpoint"`
	Suffrage string `json:"suffrage,omitempty"`
	RaftAddr string `json:"raft_addr,omitempty"` // from the configuration
	// Role is leader, follower, candidate (its own state when it knows
	// no leader), or unreachable.
	Role string `json:"role"`
	// Ready is the node's /readyz answer; NotReady its reasons.
	Ready    bool   `json:"ready"`
	NotReady string `json:"not_ready,omitempty"`
	// LastContactMs and UnreachableFromLeader are the leader's view of
	// the member (api.Member).
	LastContactMs         *int64      `json:"last_contact_ms,omitempty"`
	UnreachableFromLeader bool        `json:"unreachable_from_leader,omitempty"`
	Status                *api.Status `json:"status,omitempty"`
	Error                 string      `json:"error,omitempty"`

	asked bool
}

// askNode fills n with the node's status and readiness, asking only
// endpoint (a client with that one endpoint, so no fail-over hides a
// dead node).
func askNode(ctx context.Context, cf clientFlags, endpoint string, n *nodeStatus) error {
	one := cf
	one.endpoints = &endpoint
	c, err := one.client(io.Discard)
	if err != nil {
		return err
	}
	n.Endpoint, n.asked = endpoint, true
	st, err := c.Status(ctx)
	if err != nil {
		n.Role, n.Error = roleUnreachable, explain(err)
		return nil
	}
	n.Status, n.ID = &st, st.ID
	switch {
	case st.Leader != "" && st.Leader == st.ID:
		n.Role = roleLeader
	case st.Leader != "":
		n.Role = roleFollower
	default:
		n.Role = strings.ToLower(st.State)
	}
	switch err := c.Ready(ctx); {
	case err == nil:
		n.Ready = true
	case errors.Is(err, client.ErrNotReady):
		n.NotReady = strings.TrimPrefix(err.Error(), client.ErrNotReady.Error()+": ")
	default:
		n.NotReady = explain(err)
	}
	return nil
}

// askAll runs askNode for each of nodes at once.
func askAll(ctx context.Context, cf clientFlags, nodes []*nodeStatus, endpoints []string) error {
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Add(1)
		// Ends when askNode returns (ctx bounds its calls).
		go func() {
			defer wg.Done()
			errs[i] = askNode(ctx, cf, endpoints[i], nodes[i])
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// schemeOf is endpoint's "scheme://", or "" when it names none.
func schemeOf(endpoint string) string {
	if i := strings.Index(endpoint, "://"); i >= 0 {
		return endpoint[:i+3]
	}
	return ""
}

// clusterStatus asks each endpoint, learns every member and its HTTP
// address from the answers (the leader's when it is among them), asks
// each member not yet asked at that address, and prints a row per
// member, then the endpoints that are no member.
func clusterStatus(ctx context.Context, cf clientFlags, asJSON bool, stdout, stderr io.Writer) int {
	eps := splitEndpoints(*cf.endpoints)
	if len(eps) == 0 {
		fmt.Fprintln(stderr, "locknode status: --endpoints / LOCKNODE_ENDPOINTS is empty")
		return exitUsage
	}
	asked := make([]*nodeStatus, len(eps))
	for i := range asked {
		asked[i] = &nodeStatus{}
	}
	if err := askAll(ctx, cf, asked, eps); err != nil {
		fmt.Fprintln(stderr, "locknode status:", err)
		return exitUsage
	}
	// The member list comes from the leader's answer when there is one
	// (it also says when it last heard from each), else from any node
	// that knows a leader, else from any answer.
	ref := func(all []*nodeStatus) *nodeStatus {
		var best *nodeStatus
		rank := func(n *nodeStatus) int {
			switch {
			case n == nil || n.Status == nil:
				return 0
			case n.Role == roleLeader:
				return 3
			case n.Status.Leader != "":
				return 2
			}
			return 1
		}
		for _, n := range all {
			if rank(n) > rank(best) {
				best = n
			}
		}
		if rank(best) == 0 {
			return nil
		}
		return best
	}
	byID := map[string]*nodeStatus{}
	for _, n := range asked {
		if n.ID != "" && byID[n.ID] == nil {
			byID[n.ID] = n
		}
	}
	var members []*nodeStatus
	if r := ref(asked); r != nil {
		scheme := schemeOf(r.Endpoint)
		var more []*nodeStatus
		var moreEps []string
		for _, m := range r.Status.Members {
			n := byID[m.ID]
			if n == nil {
				n = &nodeStatus{ID: m.ID, Role: roleUnreachable}
				byID[m.ID] = n
				if m.HTTPAddr != "" {
					more, moreEps = append(more, n), append(moreEps, scheme+m.HTTPAddr)
				} else {
					n.Error = fmt.Sprintf("its HTTP address is unknown: it has not answered node %s (raft %s)", r.ID, m.Address)
				}
			}
			n.Suffrage, n.RaftAddr = m.Suffrage, m.Address
			members = append(members, n)
		}
		if err := askAll(ctx, cf, more, moreEps); err != nil {
			fmt.Fprintln(stderr, "locknode status:", err)
			return exitUsage
		}
		// A member answering for another id (an address reused) is not
		// the member asked for.
		for i, n := range more {
			if n.Status != nil && n.Status.ID != n.ID {
				want := n.ID
				*more[i] = nodeStatus{ID: want, Suffrage: n.Suffrage, RaftAddr: n.RaftAddr, Endpoint: n.Endpoint, Role: roleUnreachable, asked: true,
					Error: fmt.Sprintf("%s answers as node %s", n.Endpoint, n.Status.ID)}
			}
		}
		// The leader's view of its members, if the leader answered.
		if l := ref(members); l != nil && l.Role == roleLeader {
			for _, m := range l.Status.Members {
				if n := byID[m.ID]; n != nil {
					n.LastContactMs, n.UnreachableFromLeader = m.LastContactMs, m.Unreachable
				}
			}
		}
	}
	rows := append([]*nodeStatus{}, members...)
	inRows := map[*nodeStatus]bool{}
	for _, n := range rows {
		inRows[n] = true
	}
	for _, n := range asked {
		if !inRows[n] {
			inRows[n] = true
			rows = append(rows, n)
		}
	}

	if asJSON {
		if code := printJSON(stdout, stderr, rows); code != 0 {
			return code
		}
	} else {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tENDPOINT\tROLE\tHEALTH\tTERM\tAPPLIED\tCOMMIT\tLAST_CONTACT\tVERSION\tERROR")
		for _, n := range rows {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", orNone(n.ID), orNone(n.Endpoint), n.Role, healthText(n),
				statusField(n, func(st *api.Status) uint64 { return st.Term }),
				statusField(n, func(st *api.Status) uint64 { return st.AppliedIndex }),
				statusField(n, func(st *api.Status) uint64 { return st.CommitIndex }),
				rowContact(n), rowVersion(n), orNone(n.Error))
		}
		tw.Flush()
	}
	return clusterVerdict(rows, members, stderr)
}

// clusterVerdict reports on stderr what is wrong and returns the exit
// code: 1 when a voter is unreachable (asked directly or in the leader's
// view), a node asked knows no leader, or no leader answered.
func clusterVerdict(rows, members []*nodeStatus, stderr io.Writer) int {
	code := 0
	leaders := 0
	for _, n := range rows {
		if n.Role == roleLeader {
			leaders++
		}
		voter := n.Suffrage == "voter"
		switch {
		case n.Status == nil && voter:
			fmt.Fprintf(stderr, "locknode status: voter %s (%s) does not answer: %s\n", n.ID, n.RaftAddr, n.Error)
			code = exitLockFailed
		case n.Status == nil:
			fmt.Fprintf(stderr, "locknode status: %s does not answer: %s\n", orNone(n.ID), n.Error)
			code = exitLockFailed
		case n.Status.Leader == "":
			fmt.Fprintf(stderr, "locknode status: node %s knows no leader\n", n.ID)
			code = exitLockFailed
		}
		if n.UnreachableFromLeader && voter {
			fmt.Fprintf(stderr, "locknode status: voter %s (%s) does not answer the leader: %s\n", n.ID, n.RaftAddr, rowContact(n))
			code = exitLockFailed
		}
	}
	if code != 0 {
		fmt.Fprintln(stderr, "locknode status: not every node answered with a leader, or a voter is unreachable: the cluster has less fault tolerance than it counts on")
	}
	if leaders == 0 {
		if len(members) == 0 {
			fmt.Fprintln(stderr, "locknode status: no node reachable with a member list; check --endpoints / LOCKNODE_ENDPOINTS")
		} else {
			fmt.Fprintln(stderr, "locknode status: the leader did not answer: voters' contact not checked")
		}
		code = exitLockFailed
	}
	return code
}

func healthText(n *nodeStatus) string {
	switch {
	case n.Status == nil:
		return "-"
	case n.Ready:
		return "ready"
	}
	return "not ready: " + n.NotReady
}

func statusField(n *nodeStatus, f func(*api.Status) uint64) string {
	if n.Status == nil {
		return "-"
	}
	return fmt.Sprint(f(n.Status))
}

// rowContact is the leader's last contact with the member.
func rowContact(n *nodeStatus) string {
	if n.Role == roleLeader {
		return "-"
	}
	return contactText(api.Member{LastContactMs: n.LastContactMs, Unreachable: n.UnreachableFromLeader})
}

// rowVersion is the node's release and the cluster version it runs.
func rowVersion(n *nodeStatus) string {
	if n.Status == nil {
		return "-"
	}
	st := n.Status
	v := fmt.Sprintf("cluster v%d (runs %s)", st.ClusterVersion, orNone(st.ClusterVersions))
	if st.Release != "" {
		v = st.Release + " " + v
	}
	return v
}
