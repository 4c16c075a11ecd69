package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/raft"
)

// AddVoter adds server id at addr (its raft address) as a voter. Any
// member accepts it and forwards it to the leader. Adding a member that
// is already present with the same address succeeds and changes nothing.
//
// The leader refuses (ErrVersionRefused) a node whose cluster versions do
// not include the active one (version.go: it asks the node).
func (n *Node) AddVoter(ctx context.Context, id, addr string) error {
	return n.addVoter(ctx, id, addr, VersionRange{})
}

// addVoter is AddVoter for a joiner that said which cluster versions it
// runs (rng; zero: ask it).
func (n *Node) addVoter(ctx context.Context, id, addr string, rng VersionRange) error {
	if id == "" || addr == "" {
		return fmt.Errorf("%w: id and addr are required", ErrConfig)
	}
	req := appendJoin(id, addr, rng)
	return n.membership(ctx, req, func() raft.IndexFuture {
		if err := n.checkJoin(ctx, id, addr, rng); err != nil {
			return errFuture{err}
		}
		return n.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, 0)
	})
}

// appendJoin encodes an rpcJoin request: id, addr, then (when known) the
// joiner's cluster versions, which leaders that predate them ignore.
func appendJoin(id, addr string, rng VersionRange) []byte {
	b := appendStr(appendStr([]byte{rpcJoin}, id), addr)
	if rng != (VersionRange{}) {
		b = binary.AppendUvarint(b, uint64(rng.Min))
		b = binary.AppendUvarint(b, uint64(rng.Max))
	}
	return b
}

// RemoveServer removes server id from the cluster (a dead member, or one
// that leaves). Any member accepts it and forwards it to the leader.
func (n *Node) RemoveServer(ctx context.Context, id string) error {
	if id == "" {
		return fmt.Errorf("%w: id is required", ErrConfig)
	}
	req := appendStr([]byte{rpcRemove}, id)
	return n.membership(ctx, req, func() raft.IndexFuture {
		return n.raft.RemoveServer(raft.ServerID(id), 0, 0)
	})
}

// membership runs a configuration change on the leader. Configuration
// changes are idempotent, so every failure is retried (for as long as
// withLeader says).
func (n *Node) membership(ctx context.Context, req []byte, local func() raft.IndexFuture) error {
	return n.withLeader(ctx, true, func(ctx context.Context) (outcome, error) {
		if l := n.lead.Load(); l != nil {
			err := n.await(local())
			switch {
			case err == nil:
				return outcomeDone, nil
			case isRaftNotLeader(err):
				return outcomeNotReached, err
			case isRaftLost(err):
				return outcomeUnknown, err
			default:
				return outcomeDone, err
			}
		}
		_, oc, err := n.forward(ctx, req)
		return oc, err
	})
}

// Leave removes this node from the cluster for good: a leader first
// transfers leadership, then the (new) leader removes this node. Close
// the node afterwards; its data directory is of no further use.
func (n *Node) Leave(ctx context.Context) error {
	if n.raft.State() == raft.Leader && n.voters() > 1 {
		if err := n.await(n.raft.LeadershipTransfer()); err != nil {
			n.log.Warn("leadership transfer before leave failed", "error", err)
		}
	}
	return n.RemoveServer(ctx, n.id)
}

// join asks the members at addrs, in turn, to add this node, until one
// succeeds or ctx ends. Members may still be starting, so failed rounds
// are repeated after a short pause.
func (n *Node) join(ctx context.Context, addrs []string) error {
	req := appendJoin(n.id, n.Addr(), LocalVersions())
	var last error
	for pause := 50 * time.Millisecond; ; pause = min(2*pause, time.Second) {
		for _, a := range addrs {
			resp, err := n.tr.Call(ctx, a, req)
			if err == nil {
				var st byte
				st, _, err = decodeStatus(resp)
				if err == nil && st == stOK {
					n.log.Info("joined cluster", "via", a)
					return nil
				}
				if err != nil && strings.Contains(err.Error(), ErrVersionRefused.Error()) {
					// Final: retrying cannot change the versions.
					err = fmt.Errorf("%w (this node runs cluster versions %s); the cluster says: %s", ErrVersionRefused,
						LocalVersions(), strings.TrimPrefix(err.Error(), ErrVersionRefused.Error()+": "))
					n.log.Error("join refused", "via", a, "error", err)
					return err
				}
				if err == nil {
					err = errors.New("member has no leader")
				}
			}
			last = err
			n.log.Debug("join attempt failed", "via", a, "error", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: join %v: %w (last error: %v)", addrs, ctx.Err(), last)
		case <-n.closed:
			return ErrClosed
		case <-time.After(pause):
		}
	}
}
