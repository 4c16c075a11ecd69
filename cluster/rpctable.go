package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/locknode/locknode/transport"
)

// Node-to-node RPCs, carried by transport.Call. A request is one kind
// byte and a body; a response is one status byte and a body (rpc.go).
// Kinds and statuses are part of the wire format: append only, and list
// every kind in rpcKinds below with the cluster version that introduced
// it (docs/DESIGN.md "Changing replicated behaviour").
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
	// rpcNodeInfo asks a member for its addresses (nodeinfo.go). Body:
	// empty; ok body: str id, str http, str resp, then uvarint min and max
	// of the cluster versions it runs and uvarint its active cluster
	// version (absent from nodes that predate cluster versions: those run
	// 1..1).
	rpcNodeInfo byte = 5
	// rpcApplyBatch body: uvarint count, then count × (uvarint length,
	// encoded fsm.Command); ok body: uvarint count, then count × (status
	// byte, uvarint length, encoded result or error message).
	rpcApplyBatch byte = 6
	// rpcWaiterClaim: the sender's requests are blocked on these waiters
	// (waiter_lease.go). Body: uvarint count, then that many str ids; ok
	// body: empty.
	rpcWaiterClaim byte = 7
	// rpcApplyBatchHinted: as rpcApplyBatch; the ok body is followed by
	// the commit hint, uvarint index and uvarint term of the batch's last
	// committed entry (0, 0: none; appendCommitHint).
	rpcApplyBatchHinted byte = 8
	// rpcApplyTraced is rpcApply with the caller's W3C traceparent (otel.go):
	// body str traceparent, then the encoded fsm.Command; the answer is
	// rpcApply's.
	rpcApplyTraced byte = 9
	// rpcApplyBatchTraced is rpcApplyBatchHinted with each command's W3C
	// traceparent: body uvarint count, then count × (str traceparent, ""
	// for an untraced command; uvarint length, encoded fsm.Command); the
	// answer is rpcApplyBatchHinted's.
	rpcApplyBatchTraced byte = 10
)

// rpcAuth is what a peer must be, over mutual TLS, to have a kind served
// (peerauth.go). Without TLS there is no identity to check.
type rpcAuth uint8

const (
	// authMember: a current member.
	authMember rpcAuth = iota + 1
	// authMemberOrJoiner: a member, or the node the join adds.
	authMemberOrJoiner
	// authMemberOrUnjoined: a member; or, while this node has not joined
	// yet and so knows no members, any node with a certificate of the
	// cluster's CA (the leader about to add it asks this first).
	authMemberOrUnjoined
)

// rpcKind is one peer RPC: everything the node needs to serve it.
type rpcKind struct {
	kind byte
	// name labels the kind in metrics (rpcServed, rpcRefused,
	// forwardCalls) and logs.
	name string
	auth rpcAuth
	// version is the cluster version that introduced the kind. A node
	// sends a kind only once its version is active, and serves it only
	// then, so a kind added by a later release is never exchanged with a
	// node that does not know it.
	version uint32
	// serve answers the request body (after the kind byte). A returned
	// error is a refusal (refuse); the caller sees it as transport.ErrRemote.
	serve func(n *Node, ctx context.Context, body []byte) ([]byte, error)
}

// rpcKinds is every peer RPC this binary serves.
var rpcKinds = []rpcKind{
	{rpcApply, "apply", authMember, 1, (*Node).serveApply},
	{rpcReadIndex, "read_index", authMember, 1, (*Node).serveReadIndex},
	{rpcJoin, "join", authMemberOrJoiner, 1, (*Node).serveJoin},
	{rpcRemove, "remove", authMember, 1, (*Node).serveRemove},
	{rpcNodeInfo, "node_info", authMemberOrUnjoined, 1, (*Node).serveNodeInfo},
	{rpcApplyBatch, "apply_batch", authMember, 1, (*Node).serveApplyBatch},
	{rpcWaiterClaim, "waiter_claim", authMember, 1, (*Node).serveWaiterClaim},
	{rpcApplyBatchHinted, "apply_batch_hinted", authMember, 1, (*Node).serveApplyBatchHinted},
	{rpcApplyTraced, "apply_traced", authMember, traceVersion, (*Node).serveApplyTraced},
	{rpcApplyBatchTraced, "apply_batch_traced", authMember, traceVersion, (*Node).serveApplyBatchTraced},
}

// rpcByKind indexes rpcKinds by kind byte (nil: not a kind of this
// binary). Filled by init rather than by an initializer: the handlers
// reach functions that read it, which Go would report as an
// initialization cycle.
var rpcByKind [256]*rpcKind

func init() {
	for i := range rpcKinds {
		rpcByKind[rpcKinds[i].kind] = &rpcKinds[i]
	}
}

// handleRPC serves peer RPCs (transport.Handler). It runs on the
// transport's goroutines; each call ends with its answer.
func (n *Node) handleRPC(ctx context.Context, req []byte) ([]byte, error) {
	if len(req) == 0 {
		return nil, refuse(errBadRPC)
	}
	k := rpcByKind[req[0]]
	if err := n.authorizeRPC(ctx, k, req); err != nil {
		return nil, refuse(err)
	}
	n.metrics.rpcServe(req[0])
	if k == nil || !n.versionActive(k.version) {
		// Unknown here, or of a cluster version not active yet: answered
		// as every release answers a kind it does not serve.
		return nil, refuse(fmt.Errorf("%w %d", errUnknownKind, req[0]))
	}
	resp, err := k.serve(n, ctx, req[1:])
	return resp, refuse(err)
}

// rpcName is kind k's label in metrics and logs.
func rpcName(k byte) string {
	if r := rpcByKind[k]; r != nil {
		return r.name
	}
	return "unknown"
}

// rpcKindActive reports whether RPC kind k may be used: it is a kind of
// this binary and its version is active.
func (n *Node) rpcKindActive(k byte) bool {
	r := rpcByKind[k]
	return r != nil && n.versionActive(r.version)
}

// versionActive reports whether cluster version v is active. Version 1
// skips the table's lock.
func (n *Node) versionActive(v uint32) bool {
	return v == 1 || v > 1 && v <= n.ClusterVersion()
}

// Refusals. A peer RPC that is not served is answered with an error
// (a transport error frame, whose body is text). The caller branches on
// why, so the text carries a typed code: the refusal's words, exactly as
// every release has written them, followed by refusalTag, the code in
// decimal and ")". A node of an earlier release reads the words (it looks
// for unknownKind anywhere in the text), a node of this one the code; a
// code it does not know (a later release's) is refusalOther.
type refusalCode uint8

const (
	refusalNone        refusalCode = 0 // not a refusal
	refusalOther       refusalCode = 1 // a refusal of a kind this release does not name
	refusalMalformed   refusalCode = 2 // the request does not decode (errBadRPC)
	refusalUnknownKind refusalCode = 3 // a kind the node does not serve, or not yet (errUnknownKind)
	refusalNotMember   refusalCode = 4 // the peer is not a member (errNotMember)
)

// refusalTag introduces the code at the end of a refusal's text.
const refusalTag = " (refusal code "

// unknownKind is in the text of the refusal of a kind the node does not
// serve: every release has said so, and releases before refusal codes
// recognise that refusal by it.
const unknownKind = "unknown kind"

// errUnknownKind refuses a kind the node does not serve (or not yet: its
// cluster version is not active). Its text must keep unknownKind.
var errUnknownKind = fmt.Errorf("%w: %s", errBadRPC, unknownKind)

// rpcRefusal is a refusal with its code; it unwraps to the refusal's
// error, so errors.Is sees errBadRPC, errNotMember and the like.
type rpcRefusal struct {
	code refusalCode
	err  error
}

func (r *rpcRefusal) Error() string {
	return r.err.Error() + refusalTag + strconv.Itoa(int(r.code)) + ")"
}

func (r *rpcRefusal) Unwrap() error { return r.err }

// refuse gives a handler's error its refusal code. The end of the
// caller's context is no refusal (the caller is gone) and passes as is.
func refuse(err error) error {
	var code refusalCode
	switch {
	case err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, errUnknownKind):
		code = refusalUnknownKind
	case errors.Is(err, errNotMember):
		code = refusalNotMember
	case errors.Is(err, errBadRPC):
		code = refusalMalformed
	default:
		code = refusalOther
	}
	return &rpcRefusal{code: code, err: err}
}

// refusalOf returns the code of the peer's refusal err carries
// (refusalNone: err is not a peer's refusal). A peer of a release before
// refusal codes writes no code; of its refusals only an unknown kind is
// one a caller branches on, recognised by its words.
func refusalOf(err error) refusalCode {
	if !errors.Is(err, transport.ErrRemote) {
		return refusalNone
	}
	s := err.Error()
	if i := strings.LastIndex(s, refusalTag); i >= 0 && strings.HasSuffix(s, ")") {
		c, perr := strconv.ParseUint(s[i+len(refusalTag):len(s)-1], 10, 8)
		switch {
		case perr != nil:
		case refusalCode(c) > refusalNotMember || c == 0:
			return refusalOther
		default:
			return refusalCode(c)
		}
	}
	if strings.Contains(s, unknownKind) {
		return refusalUnknownKind
	}
	return refusalOther
}
