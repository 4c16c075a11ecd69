package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/raft"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/transport"
)

// joinProbeTimeout bounds AddVoter's check that the new member answers.
const joinProbeTimeout = 5 * time.Second

// AddVoter adds server id at addr (its raft address) as a voter. Any
// member accepts it and forwards it to the leader. The leader first
// checks that addr completes the peer handshake and answers an RPC, so
// that a mistyped or dead address does not become a voter that counts
// towards the quorum and never votes (ErrPeerUnreachable; a port of
// another service says which, transport.NotPeerError). Adding a member
// that is already present with the same address succeeds and changes
// nothing.
//
// The leader refuses (ErrVersionRefused) a node whose cluster versions do
// not include the active one (version.go: it asks the node).
func (n *roster) AddVoter(ctx context.Context, id, addr string) error {
	return n.addVoter(ctx, id, addr, VersionRange{}, true)
}

// AddVoterForce is AddVoter without the check that addr answers: for a
// member that is not up yet. Only the leader takes it (the check is the
// leader's, and a forwarded request cannot say to skip it); a follower
// refuses it with an error wrapping api.ErrNoLeader, which a client
// retries on its next endpoint. The version check still applies when the
// node answers.
func (n *roster) AddVoterForce(ctx context.Context, id, addr string) error {
	return n.addVoter(ctx, id, addr, VersionRange{}, false)
}

// addVoter adds a voter; rng is the cluster versions the joiner said it
// runs (zero: ask it), check whether addr must answer as a peer first.
func (n *roster) addVoter(ctx context.Context, id, addr string, rng VersionRange, check bool) error {
	if id == "" || addr == "" {
		return fmt.Errorf("%w: id and addr are required", ErrConfig)
	}
	if !check && n.lead.Load() == nil {
		leaderAddr, leaderID := n.raft.LeaderWithID()
		return fmt.Errorf("%w: a forced join is taken by the leader only (%s at %s): send it there",
			api.ErrNoLeader, orNone(string(leaderID)), orNone(string(leaderAddr)))
	}
	req := appendJoin(id, addr, rng)
	return n.membership(ctx, req, func(ctx context.Context) (raft.IndexFuture, error) {
		// A range the joiner sent is checked before it is dialled; one
		// asked of it (checkJoin) only once it answers as a peer.
		if rng != (VersionRange{}) {
			if err := n.checkJoin(ctx, id, addr, rng); err != nil {
				return nil, err
			}
		}
		if check && !n.hasServer(id, addr) {
			if err := n.probePeer(ctx, addr); err != nil {
				return nil, err
			}
		}
		if rng == (VersionRange{}) {
			if err := n.checkJoin(ctx, id, addr, rng); err != nil {
				return nil, err
			}
		}
		return n.raft.AddVoter(raft.ServerID(id), raft.ServerAddress(addr), 0, 0), nil
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
// that leaves). Any member accepts it and forwards it to the leader. An
// id the configuration does not hold is refused (ErrUnknownMember).
func (n *roster) RemoveServer(ctx context.Context, id string) error {
	if id == "" {
		return fmt.Errorf("%w: id is required", ErrConfig)
	}
	req := appendStr([]byte{rpcRemove}, id)
	return n.membership(ctx, req, func(context.Context) (raft.IndexFuture, error) {
		if !n.hasServer(id, "") {
			return nil, fmt.Errorf("%w: %w: %q is not a member (the members: %s)", ErrUnknownMember, api.ErrNotFound, id, n.memberIDs())
		}
		return n.raft.RemoveServer(raft.ServerID(id), 0, 0), nil
	})
}

// hasServer reports whether the latest configuration holds server id (at
// addr, unless addr is empty).
func (n *roster) hasServer(id, addr string) bool {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return false
	}
	for _, s := range f.Configuration().Servers {
		if string(s.ID) == id && (addr == "" || string(s.Address) == addr) {
			return true
		}
	}
	return false
}

// probePeer checks that addr is a member's peer port that answers: the
// transport's handshake (TLS, when configured, authenticates it) and a
// node-info call. An error answer still proves a peer (a node that
// predates node info, or one that refuses this node).
func (n *roster) probePeer(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, joinProbeTimeout)
	defer cancel()
	_, err := n.tr.Call(ctx, addr, []byte{rpcNodeInfo})
	if err == nil || errors.Is(err, transport.ErrRemote) {
		return nil
	}
	return fmt.Errorf("%w: %w: %s: %w (with force it is added anyway)", ErrPeerUnreachable, api.ErrBadRequest, addr, err)
}

// membership runs a configuration change on the leader. Configuration
// changes are idempotent, so every failure is retried (for as long as
// withLeader says). local runs on the leader: it may refuse the change
// (a final answer) or start it.
func (n *roster) membership(ctx context.Context, req []byte, local func(context.Context) (raft.IndexFuture, error)) error {
	lost := false // an earlier attempt may have made the change
	err := n.withLeader(ctx, true, func(ctx context.Context) (outcome, error) {
		if l := n.lead.Load(); l != nil {
			f, err := local(ctx)
			if err != nil {
				return outcomeDone, err
			}
			err = n.await(f)
			switch {
			case err == nil:
				return outcomeDone, nil
			case isRaftNotLeader(err):
				return outcomeNotReached, err
			case isRaftLost(err):
				lost = true
				return outcomeUnknown, err
			default:
				return outcomeDone, err
			}
		}
		_, oc, err := n.forward(ctx, req)
		lost = lost || oc == outcomeUnknown
		return oc, memberErr(err)
	})
	if lost && errors.Is(err, ErrUnknownMember) {
		// The removal that was lost with its leader took effect.
		return nil
	}
	return err
}

// memberErr restores the sentinels of a refusal the leader sent back as
// text (rpc stError).
func memberErr(err error) error {
	if err == nil || errors.Is(err, ErrUnknownMember) || errors.Is(err, ErrPeerUnreachable) {
		return err
	}
	switch msg := err.Error(); {
	case strings.Contains(msg, ErrUnknownMember.Error()):
		return &wireErr{msg: msg, is: []error{ErrUnknownMember, api.ErrNotFound}}
	case strings.Contains(msg, ErrPeerUnreachable.Error()):
		return &wireErr{msg: msg, is: []error{ErrPeerUnreachable, api.ErrBadRequest}}
	}
	return err
}

// wireErr is an error that came as text, with the sentinels it had.
type wireErr struct {
	msg string
	is  []error
}

func (e *wireErr) Error() string   { return e.msg }
func (e *wireErr) Unwrap() []error { return e.is }

func orNone(s string) string {
	if s == "" {
		return "none known"
	}
	return s
}

// Leave removes this node from the cluster for good: a leader first
// transfers leadership, then the (new) leader removes this node. Close
// the node afterwards; its data directory is of no further use.
func (n *roster) Leave(ctx context.Context) error {
	if n.raft.State() == raft.Leader && n.voters() > 1 {
		if err := n.await(n.raft.LeadershipTransfer()); err != nil {
			n.log.Warn("leadership transfer before leave failed", "error", err)
		}
	}
	return n.RemoveServer(ctx, n.id)
}

// Join makes this node a member through the running members at addrs,
// as Config.Join does inside Start: for a caller that serves clients
// while the node joins (they are refused at once meanwhile, with
// ErrNotJoined). It does nothing when Start found raft state in DataDir
// or bootstrapped. It retries until a member adds this node or ctx ends;
// an address that is another service's port (an HTTP port, say) fails
// at once with an error wrapping transport.ErrNotPeer.
func (n *roster) Join(ctx context.Context, addrs []string) error {
	if n.hadState || n.cfg.Bootstrap || len(addrs) == 0 {
		return nil
	}
	return n.join(ctx, addrs)
}

// join asks the members at addrs, in turn, to add this node, until one
// succeeds or ctx ends. Members may still be starting, so failed rounds
// are repeated after a short pause; an address that is not a peer port
// is a mistake no retry mends.
func (n *roster) join(ctx context.Context, addrs []string) error {
	req := appendJoin(n.id, n.Addr(), LocalVersions())
	var last error
	warned := "" // the leader's last refusal logged at WARN
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
			if errors.Is(err, transport.ErrNotPeer) {
				return fmt.Errorf("cluster: join through %s: %w", a, err)
			}
			if err = memberErr(err); errors.Is(err, ErrPeerUnreachable) && err.Error() != warned {
				// Retried (a firewall may open), but worth an operator's eye.
				warned = err.Error()
				n.log.Warn("the leader cannot reach this node's raft address; check Advertise", "addr", n.Addr(), "error", err)
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

// memberIDs lists the configuration's member ids, for an error that
// refuses another.
func (n *roster) memberIDs() string {
	f := n.raft.GetConfiguration()
	if f.Error() != nil {
		return "unknown"
	}
	ids := make([]string, 0, len(f.Configuration().Servers))
	for _, s := range f.Configuration().Servers {
		ids = append(ids, string(s.ID))
	}
	slices.Sort(ids)
	return strings.Join(ids, ", ")
}
