package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/hashicorp/raft"

	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/fsm/reply"
)

// Node-to-node RPCs, carried by transport.Call. A request is one kind
// byte and a body; a response is one status byte and a body. Kinds and
// statuses are part of the wire format: append only.
const (
	rpcApply     byte = 1 // body: encoded fsm.Command; ok body: encoded result
	rpcReadIndex byte = 2 // body: empty; ok body: uvarint index, varint now
	rpcJoin      byte = 3 // body: str id, str addr; ok body: empty
	rpcRemove    byte = 4 // body: str id; ok body: empty
	// rpcApplyBatch body: uvarint count, then count × (uvarint length,
	// encoded fsm.Command); ok body: uvarint count, then count × (status
	// byte, uvarint length, encoded result or error message).
	rpcApplyBatch byte = 6
)

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
	switch req[0] {
	case rpcApply:
		cmd, err := fsm.DecodeCommand(req[1:])
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errBadRPC, err)
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
			return appendResult([]byte{stOK}, &res), nil
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
			return binary.AppendVarint(b, now), nil
		default:
			return []byte{stNotLeader}, nil
		}
	case rpcJoin, rpcRemove:
		d := decoder{b: req[1:]}
		id := d.str()
		var addr string
		if req[0] == rpcJoin {
			addr = d.str()
		}
		if d.err != nil || id == "" || (req[0] == rpcJoin && addr == "") {
			return nil, errBadRPC
		}
		var err error
		if req[0] == rpcJoin {
			err = n.AddVoter(ctx, id, addr)
		} else {
			err = n.RemoveServer(ctx, id)
		}
		if err != nil {
			return append([]byte{stError}, err.Error()...), nil
		}
		return []byte{stOK}, nil
	case rpcNodeInfo:
		return n.handleNodeInfo(), nil
	case rpcApplyBatch:
		return n.handleApplyBatch(ctx, req[1:])
	case rpcWaiterClaim:
		return n.handleWaiterClaim(req[1:])
	}
	return nil, fmt.Errorf("%w: unknown kind %d", errBadRPC, req[0])
}

func rpcName(k byte) string {
	switch k {
	case rpcApply:
		return "apply"
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
	case rpcWaiterClaim:
		return "waiter_claim"
	}
	return "unknown"
}

// Result encoding for forwarded applies. Events do not travel: the
// follower applies the same entry and sees them itself.
const (
	rGranted = 1 << iota
	rQueued
	rReleased
	rErr
	rReply
	rNow
)

func appendResult(b []byte, r *fsm.Result) []byte {
	var flags byte
	if r.Granted {
		flags |= rGranted
	}
	if r.Queued {
		flags |= rQueued
	}
	if r.Released {
		flags |= rReleased
	}
	if r.Err != nil {
		flags |= rErr
	}
	if r.Reply.Kind != reply.Nil {
		flags |= rReply
	}
	if r.Now != 0 {
		flags |= rNow
	}
	b = append(b, flags)
	b = binary.AppendUvarint(b, r.Index)
	b = binary.AppendUvarint(b, r.Fence)
	b = binary.AppendVarint(b, r.Deadline)
	b = binary.AppendVarint(b, int64(r.Count))
	if flags&rNow != 0 {
		b = binary.AppendVarint(b, r.Now)
	}
	if r.Err != nil {
		b = append(b, errCode(r.Err))
		b = appendStr(b, r.Err.Error())
	}
	if flags&rReply != 0 {
		b = appendReply(b, r.Reply, 0)
	}
	return b
}

func decodeResult(b []byte) (fsm.Result, error) {
	var r fsm.Result
	if len(b) < 1 {
		return r, errBadRPC
	}
	flags := b[0]
	d := decoder{b: b[1:]}
	r.Index = d.uvarint()
	r.Fence = d.uvarint()
	r.Deadline = d.varint()
	r.Count = int(d.varint())
	if flags&rNow != 0 {
		r.Now = d.varint()
	}
	r.Granted = flags&rGranted != 0
	r.Queued = flags&rQueued != 0
	r.Released = flags&rReleased != 0
	if flags&rErr != 0 {
		code := d.byte()
		r.Err = decodeErr(code, d.str())
	}
	if flags&rReply != 0 {
		r.Reply = d.reply(0)
	}
	if d.err != nil || len(d.b) != 0 {
		return fsm.Result{}, errBadRPC
	}
	return r, nil
}

// maxReplyDepth bounds nesting of decoded replies.
const maxReplyDepth = 64

func appendReply(b []byte, r reply.Reply, depth int) []byte {
	b = append(b, byte(r.Kind))
	switch r.Kind {
	case reply.Status, reply.Error, reply.Bulk, reply.Double, reply.BigNumber, reply.Verbatim:
		b = appendStr(b, r.Str)
	case reply.Int, reply.Bool:
		b = binary.AppendVarint(b, r.Int)
	case reply.Array, reply.Map, reply.Set, reply.Pairs:
		b = binary.AppendUvarint(b, uint64(len(r.Arr)))
		for _, it := range r.Arr {
			b = appendReply(b, it, depth+1)
		}
	}
	return b
}

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = errBadRPC
	}
}

func (d *decoder) byte() byte {
	if d.err != nil || len(d.b) == 0 {
		d.fail()
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *decoder) uvarint() uint64 { return readVarint(d, binary.Uvarint) }

func (d *decoder) varint() int64 { return readVarint(d, binary.Varint) }

// readVarint reads one varint with read (binary.Uvarint or binary.Varint).
func readVarint[T uint64 | int64](d *decoder, read func([]byte) (T, int)) T {
	if d.err != nil {
		return 0
	}
	v, k := read(d.b)
	if k <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[k:]
	return v
}

func (d *decoder) str() string {
	l := d.uvarint()
	if d.err != nil || l > uint64(len(d.b)) {
		d.fail()
		return ""
	}
	s := string(d.b[:l])
	d.b = d.b[l:]
	return s
}

// bytes reads a uvarint length and that many bytes (not copied).
func (d *decoder) bytes() []byte {
	l := d.uvarint()
	if d.err != nil || l > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	b := d.b[:l:l]
	d.b = d.b[l:]
	return b
}

func (d *decoder) reply(depth int) reply.Reply {
	if depth > maxReplyDepth {
		d.fail()
		return reply.Reply{}
	}
	r := reply.Reply{Kind: reply.Kind(d.byte())}
	switch r.Kind {
	case reply.Status, reply.Error, reply.Bulk, reply.Double, reply.BigNumber, reply.Verbatim:
		r.Str = d.str()
	case reply.Int, reply.Bool:
		r.Int = d.varint()
	case reply.Array, reply.Map, reply.Set, reply.Pairs:
		cnt := d.uvarint()
		if cnt > uint64(len(d.b)) { // every item takes at least one byte
			d.fail()
			return reply.Reply{}
		}
		r.Arr = make([]reply.Reply, 0, cnt)
		for i := uint64(0); i < cnt && d.err == nil; i++ {
			r.Arr = append(r.Arr, d.reply(depth+1))
		}
	case reply.Nil, reply.NilArray:
	default:
		d.fail()
	}
	return r
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
