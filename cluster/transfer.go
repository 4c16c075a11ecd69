package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/locknode/locknode/api"
)

// Leadership transfer is served by the leader alone: a follower refuses
// it naming the leader (and its HTTP address when known), and the caller
// sends it there. Forwarding it would need a new peer RPC kind, which
// the cluster version would have to gate, for a call an operator makes
// by hand.

var (
	// ErrNotVoter: a leadership transfer names a member that cannot lead
	// (a non-voter). It also wraps api.ErrBadRequest.
	ErrNotVoter = errors.New("cluster: the member is not a voter")
	// ErrTransferTimeout: the leader handed over but no new leader
	// appeared, or the target did not win its election in time. It also
	// wraps api.ErrWaitTimeout.
	ErrTransferTimeout = errors.New("cluster: leadership transfer timed out")
)

// transferWait bounds the wait for a new leader after raft reports the
// transfer done: the target has won by then, but this node learns of it
// from the new leader's first heartbeat.
const transferWait = 10 * time.Second

// TransferLeadership makes voter id the leader, or, with id empty, the
// voter raft picks as the most up to date. It returns the new leader's
// id once this node knows it. Only the leader takes it; a follower
// refuses with an error wrapping api.ErrNoLeader that names the leader.
// Cancelling ctx stops the wait, not a transfer raft has begun.
func (n *leaderTerm) TransferLeadership(ctx context.Context, id string) (api.TransferResult, error) {
	self := n.id
	if n.lead.Load() == nil {
		return api.TransferResult{}, n.notLeader(ctx, "a leadership transfer")
	}
	res := api.TransferResult{Previous: self}
	var target *raft.Server
	if id != "" {
		f := n.raft.GetConfiguration()
		if err := f.Error(); err != nil {
			return res, fmt.Errorf("reading the configuration: %w", err)
		}
		var voters []string
		for _, s := range f.Configuration().Servers {
			if s.Suffrage == raft.Voter {
				voters = append(voters, string(s.ID))
			}
			if string(s.ID) == id {
				s := s
				target = &s
			}
		}
		switch {
		case target == nil:
			return res, &wireErr{msg: fmt.Sprintf("no such member %q: the voters are %s", id, strings.Join(voters, ", ")), is: []error{ErrUnknownMember, api.ErrNotFound}}
		case target.Suffrage != raft.Voter:
			return res, &wireErr{msg: fmt.Sprintf("member %q is a non-voter and cannot lead: the voters are %s", id, strings.Join(voters, ", ")), is: []error{ErrNotVoter, api.ErrBadRequest}}
		case id == self:
			return res, &wireErr{msg: fmt.Sprintf("%q is already the leader", id), is: []error{api.ErrBadRequest}}
		}
	}
	var fut raft.Future
	if target != nil {
		fut = n.raft.LeadershipTransferToServer(target.ID, target.Address)
	} else {
		fut = n.raft.LeadershipTransfer()
	}
	done := make(chan error, 1)
	// Ends when raft answers the future: at the latest after its election
	// timeout, the bound raft sets on a transfer.
	go func() { done <- fut.Error() }()
	select {
	case err := <-done:
		if err != nil {
			if errors.Is(err, raft.ErrLeadershipTransferInProgress) {
				return res, &wireErr{msg: "another leadership transfer is in progress: wait for it to end (at most an election timeout)", is: []error{api.ErrConflict, err}}
			}
			if errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrLeadershipLost) {
				return res, n.notLeader(ctx, "a leadership transfer")
			}
			return res, &wireErr{msg: fmt.Sprintf("leadership transfer timed out: the target did not win an election in time (%v); %s is still the leader", err, self), is: []error{ErrTransferTimeout, api.ErrWaitTimeout, err}}
		}
	case <-ctx.Done():
		return res, ctx.Err()
	}
	wctx, cancel := context.WithTimeout(ctx, transferWait)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, lid := n.raft.LeaderWithID(); lid != "" && string(lid) != self {
			res.Leader = string(lid)
			return res, nil
		}
		select {
		case <-tick.C:
		case <-wctx.Done():
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			return res, &wireErr{msg: fmt.Sprintf("leadership transfer timed out: %s handed over but heard of no new leader within %v", self, transferWait), is: []error{ErrTransferTimeout, api.ErrWaitTimeout}}
		}
	}
}

// notLeader is the refusal of a call only the leader takes, naming the
// leader and, when known, the HTTP address to send the call to.
func (n *leaderTerm) notLeader(ctx context.Context, what string) error {
	leaderAddr, leaderID := n.raft.LeaderWithID()
	if leaderID == "" {
		return &wireErr{msg: fmt.Sprintf("%s is taken by the leader only, and node %s knows none: the cluster has no quorum or is electing one", what, n.id), is: []error{api.ErrNoLeader}}
	}
	httpAddr := ""
	for _, a := range n.PeerAddrs(ctx) {
		if a.ID == string(leaderID) {
			httpAddr = a.HTTP
		}
	}
	if httpAddr == "" {
		return &wireErr{msg: fmt.Sprintf("%s is taken by the leader only: %s (raft %s); send it there", what, leaderID, leaderAddr), is: []error{api.ErrNoLeader}}
	}
	return &wireErr{msg: fmt.Sprintf("%s is taken by the leader only: %s at %s; send it there", what, leaderID, httpAddr), is: []error{api.ErrNoLeader}}
}
