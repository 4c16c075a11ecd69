package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/locknode/locknode/auth"
	"github.com/locknode/locknode/fsm"
)

// maxTraceparent bounds the trace context of rpcApplyTraced (a W3C
// traceparent is 55 bytes).
const maxTraceparent = 256

const (
	stOK        byte = 0
	stNotLeader byte = 1 // not executed; safe to retry at the leader
	stLost      byte = 2 // leadership lost mid-way; outcome unknown
	stError     byte = 3 // body: str message; a final answer
)

var (
	errNotLeader     = errors.New("cluster: not the leader")
	errLeaderUnknown = errors.New("cluster: no leader known")
	errLeaderLost    = errors.New("cluster: leadership lost during the request")
	errBadRPC        = errors.New("cluster: malformed rpc")
)

// serveApply serves rpcApply.
func (n *forwarder) serveApply(ctx context.Context, body []byte) ([]byte, error) {
	return n.serveApplyCmd(ctx, "", body)
}

// serveApplyTraced serves rpcApplyTraced.
func (n *forwarder) serveApplyTraced(ctx context.Context, body []byte) ([]byte, error) {
	d := fsm.NewDecoder(body)
	tp := d.Str()
	if d.Err() != nil || len(tp) > maxTraceparent {
		return nil, errBadRPC
	}
	return n.serveApplyCmd(ctx, tp, body[len(body)-d.Len():])
}

// serveApplyCmd proposes the encoded command b forwarded by a follower,
// traced under tp ("" untraced), and answers with its result.
func (n *forwarder) serveApplyCmd(ctx context.Context, tp string, b []byte) ([]byte, error) {
	cmd, err := fsm.DecodeCommand(b)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errBadRPC, err)
	}
	ctx, sp := n.serveTraced(ctx, tp, cmd)
	if sp != nil {
		defer sp.End()
	}
	l := n.lead.Load()
	if l == nil {
		return []byte{stNotLeader}, nil
	}
	switch cmd.Op {
	case fsm.OpAcquire:
		n.deferQueuedAcquire(ctx, cmd)
	case fsm.OpRelease:
		n.openHandoff(cmd)
	}
	res, oc, err := n.applyAsLeader(ctx, l, cmd)
	switch oc {
	case outcomeDone:
		if errors.Is(err, ErrClosed) {
			// This node is shutting down with the entry maybe in the
			// log: for the caller, the leader was lost.
			return []byte{stLost}, nil
		}
		if err != nil {
			return append([]byte{stError}, err.Error()...), nil
		}
		n.auditPeerForced(ctx, &res)
		return fsm.AppendResult([]byte{stOK}, &res), nil
	case outcomeNotReached:
		return []byte{stNotLeader}, nil
	default:
		return []byte{stLost}, nil
	}
}

// serveReadIndex serves rpcReadIndex.
func (n *forwarder) serveReadIndex(ctx context.Context, _ []byte) ([]byte, error) {
	l := n.lead.Load()
	if l == nil {
		return []byte{stNotLeader}, nil
	}
	idx, now, oc, err := n.readIndexAsLeader(ctx, l)
	switch oc {
	case outcomeDone:
		if err != nil {
			return append([]byte{stError}, err.Error()...), nil
		}
		b := binary.AppendUvarint([]byte{stOK}, idx)
		b = binary.AppendVarint(b, now)
		return n.appendCommitHint(b, idx), nil
	default:
		return []byte{stNotLeader}, nil
	}
}

// serveJoin serves rpcJoin.
func (n *roster) serveJoin(ctx context.Context, body []byte) ([]byte, error) {
	d := fsm.NewDecoder(body)
	id, addr := d.Str(), d.Str()
	// A join without a range comes from a member forwarding an AddVoter,
	// or from a joiner of a release before cluster versions: the zero
	// range makes checkJoin ask the node itself, whose node info says
	// 1..1 when it predates them.
	var rng VersionRange
	if d.Err() == nil && d.Len() > 0 {
		lo, hi := d.Uvarint(), d.Uvarint()
		if lo == 0 || lo > hi || hi > 1<<32-1 {
			return nil, errBadRPC
		}
		rng = VersionRange{uint32(lo), uint32(hi)}
	}
	if d.Err() != nil || id == "" || addr == "" {
		return nil, errBadRPC
	}
	err := n.addVoter(ctx, id, addr, rng, true)
	n.auditPeer(ctx, auth.EventMemberAdd, "member", id, "address", addr, "error", errText(err))
	return statusOf(err), nil
}

// serveRemove serves rpcRemove.
func (n *roster) serveRemove(ctx context.Context, body []byte) ([]byte, error) {
	d := fsm.NewDecoder(body)
	id := d.Str()
	if d.Err() != nil || id == "" {
		return nil, errBadRPC
	}
	err := n.RemoveServer(ctx, id)
	n.auditPeer(ctx, auth.EventMemberRemove, "member", id, "error", errText(err))
	return statusOf(err), nil
}

// statusOf answers a call without a result: stOK, or stError with err's
// text.
func statusOf(err error) []byte {
	if err != nil {
		return append([]byte{stError}, err.Error()...)
	}
	return []byte{stOK}
}

// serveNodeInfo serves rpcNodeInfo.
func (n *roster) serveNodeInfo(context.Context, []byte) ([]byte, error) {
	return n.handleNodeInfo(), nil
}

// serveWaiterClaim serves rpcWaiterClaim.
func (n *leaderTerm) serveWaiterClaim(_ context.Context, body []byte) ([]byte, error) {
	return n.handleWaiterClaim(body)
}

// serveApplyBatch, serveApplyBatchHinted and serveApplyBatchTraced serve
// their kinds (handleApplyBatch).
func (n *forwarder) serveApplyBatch(ctx context.Context, body []byte) ([]byte, error) {
	return n.handleApplyBatch(ctx, body, false, false)
}

func (n *forwarder) serveApplyBatchHinted(ctx context.Context, body []byte) ([]byte, error) {
	return n.handleApplyBatch(ctx, body, true, false)
}

func (n *forwarder) serveApplyBatchTraced(ctx context.Context, body []byte) ([]byte, error) {
	return n.handleApplyBatch(ctx, body, true, true)
}

// decodeResult decodes a forwarded apply's result (fsm.DecodeResult); a
// malformed one is a malformed RPC.
func decodeResult(b []byte) (fsm.Result, error) {
	r, err := fsm.DecodeResult(b)
	if err != nil {
		return fsm.Result{}, fmt.Errorf("%w: %w", errBadRPC, err)
	}
	return r, nil
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decodeStatus splits a response into status and body; stError bodies
// become errors.
func decodeStatus(resp []byte) (byte, []byte, error) {
	if len(resp) == 0 {
		return 0, nil, errBadRPC
	}
	st, body := resp[0], resp[1:]
	switch st {
	case stOK, stNotLeader, stLost:
		return st, body, nil
	case stError:
		return st, nil, errors.New(string(body))
	}
	return 0, nil, errBadRPC
}

// isRaftNotLeader and isRaftLost classify raft's future errors.
func isRaftNotLeader(err error) bool {
	return errors.Is(err, raft.ErrNotLeader) || errors.Is(err, raft.ErrNotVoter) ||
		errors.Is(err, raft.ErrLeadershipTransferInProgress)
}

func isRaftLost(err error) bool {
	return errors.Is(err, raft.ErrLeadershipLost) || errors.Is(err, raft.ErrRaftShutdown) || errors.Is(err, raft.ErrAbortedByRestore)
}
