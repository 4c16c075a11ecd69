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

// Node-to-node RPCs, carried by transport.Call. A request is one kind
// byte and a body; a response is one status byte and a body. Kinds and
// statuses are part of the wire format: append only.
const (
	rpcApply byte = 1 // body: encoded fsm.Command; ok body: encoded result
	// rpcReadIndex body: empty; ok body: uvarint index, varint now, then
	// the commit hint of the index (appendCommitHint; absent from leaders
	// that predate it).
	rpcReadIndex byte = 2
	// rpcJoin body: str id, str addr, then the joiner's cluster versions,
	// uvarint min and max (absent from nodes that predate them: 1..1);
	// ok body: empty.
	rpcJoin   byte = 3
	rpcRemove byte = 4 // body: str id; ok body: empty
	// rpcApplyBatch body: uvarint count, then count × (uvarint length,
	// encoded fsm.Command); ok body: uvarint count, then count × (status
	// byte, uvarint length, encoded result or error message).
	rpcApplyBatch byte = 6
	// rpcApplyBatchHinted: as rpcApplyBatch; the ok body is followed by
	// the commit hint, uvarint index and uvarint term of the batch's last
	// committed entry (0, 0: none; appendCommitHint).
	rpcApplyBatchHinted byte = 8
	// rpcApplyTraced (9) and rpcApplyBatchTraced (10), otel.go: with the
	// callers' trace context. Cluster version 2.
)

// maxTraceparent bounds the trace context of rpcApplyTraced (a W3C
// traceparent is 55 bytes).
const maxTraceparent = 256

// unknownKind is in the error text of a call of a kind the node does not
// serve (every release has said so): a follower newer than its leader
// looks for it.
const unknownKind = "unknown kind"

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

// handleRPC serves forwarded requests (transport.Handler). It runs on the
// transport's goroutines; each call ends with its answer.
func (n *Node) handleRPC(ctx context.Context, req []byte) ([]byte, error) {
	if len(req) == 0 {
		return nil, errBadRPC
	}
	if err := n.authorizeRPC(ctx, req); err != nil {
		return nil, err
	}
	n.metrics.rpcServed.WithLabelValues(rpcName(req[0])).Inc()
	if !n.rpcKindActive(req[0]) {
		// Unknown here, or of a cluster version not active yet: answered
		// as every release answers a kind it does not serve.
		return nil, fmt.Errorf("%w: %s %d", errBadRPC, unknownKind, req[0])
	}
	switch req[0] {
	case rpcApply, rpcApplyTraced:
		body := req[1:]
		var tp string
		if req[0] == rpcApplyTraced {
			d := fsm.NewDecoder(body)
			tp = d.Str()
			if d.Err() != nil || len(tp) > maxTraceparent {
				return nil, errBadRPC
			}
			body = body[len(body)-d.Len():]
		}
		cmd, err := fsm.DecodeCommand(body)
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
				// This node is shutting down with the entry maybe in
				// the log: for the caller, the leader was lost.
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
	case rpcReadIndex:
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
	case rpcJoin, rpcRemove:
		d := fsm.NewDecoder(req[1:])
		id := d.Str()
		var addr string
		// A join without a range comes from a member forwarding an
		// AddVoter, or from a joiner of a release before cluster
		// versions: the zero range makes checkJoin ask the node itself,
		// whose node info says 1..1 when it predates them.
		var rng VersionRange
		if req[0] == rpcJoin {
			addr = d.Str()
			if d.Err() == nil && d.Len() > 0 {
				lo, hi := d.Uvarint(), d.Uvarint()
				if lo == 0 || lo > hi || hi > 1<<32-1 {
					return nil, errBadRPC
				}
				rng = VersionRange{uint32(lo), uint32(hi)}
			}
		}
		if d.Err() != nil || id == "" || (req[0] == rpcJoin && addr == "") {
			return nil, errBadRPC
		}
		var err error
		if req[0] == rpcJoin {
			err = n.addVoter(ctx, id, addr, rng, true)
			n.auditPeer(ctx, auth.EventMemberAdd, "member", id, "address", addr, "error", errText(err))
		} else {
			err = n.RemoveServer(ctx, id)
			n.auditPeer(ctx, auth.EventMemberRemove, "member", id, "error", errText(err))
		}
		if err != nil {
			return append([]byte{stError}, err.Error()...), nil
		}
		return []byte{stOK}, nil
	case rpcNodeInfo:
		return n.handleNodeInfo(), nil
	case rpcApplyBatch, rpcApplyBatchHinted, rpcApplyBatchTraced:
		return n.handleApplyBatch(ctx, req[1:], req[0] != rpcApplyBatch, req[0] == rpcApplyBatchTraced)
	case rpcWaiterClaim:
		return n.handleWaiterClaim(req[1:])
	}
	return nil, fmt.Errorf("%w: %s %d", errBadRPC, unknownKind, req[0])
}

func rpcName(k byte) string {
	switch k {
	case rpcApply:
		return "apply"
	case rpcApplyTraced:
		return "apply_traced"
	case rpcReadIndex:
		return "read_index"
	case rpcJoin:
		return "join"
	case rpcRemove:
		return "remove"
	case rpcNodeInfo:
		return "node_info"
	case rpcApplyBatch:
		return "apply_batch"
	case rpcApplyBatchHinted:
		return "apply_batch_hinted"
	case rpcApplyBatchTraced:
		return "apply_batch_traced"
	case rpcWaiterClaim:
		return "waiter_claim"
	}
	return "unknown"
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
