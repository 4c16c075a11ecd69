package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/hashicorp/raft"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/cluster/lockservice"
	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/internal/oteltrace"
)

// Batched forwarding. On a follower, ApplyAsync queues the command and
// returns, and Apply queues it and waits (except a blocking acquire: see
// batchable); one sender goroutine per node forwards
// the queue to the leader in rpcApplyBatch calls, one call in flight at a
// time, and the leader proposes each call's commands in order from one
// goroutine. So commands queued one after another commit in that order
// (a connection's pipeline keeps its order), and a pipeline through a
// follower costs one forwarding round trip and one group commit per
// batch instead of one of each per command.
//
// A command is never proposed twice: a batch is sent again only when it
// reached no leader (no leader known, dial failure, or the whole batch
// refused as not leader). Since nothing after it has been sent, that
// keeps the order too. A batch whose answer is lost fails each of its
// commands with ErrUnknownOutcome, as a lost leader does on the leader's
// own asynchronous path; Apply then retries a command that carries a
// request id, as it does after any lost answer.
//
// The call is rpcApplyBatchHinted: the leader's answer also names the
// batch's last committed entry (index and the entry's own term), and the
// follower hands that to raft (the fork's LocknodeCommitted) so it commits
// and applies the batch without waiting for the AppendEntries that
// carries the new commit index. A leader that predates the kind refuses
// it as unknown, having proposed nothing; the follower then sends
// rpcApplyBatch to that leader.

const (
	// maxForwardBatch bounds the commands of one rpcApplyBatch; the
	// leader refuses larger calls. The follower never has more queued
	// than its async window (maxAsyncInFlight).
	maxForwardBatch = maxAsyncInFlight
	// maxForwardBatchBytes bounds a batch's encoded commands (a single
	// larger command is sent alone, within the transport's frame limit).
	maxForwardBatchBytes = 4 << 20
)

// forwardQueue is a follower's asynchronous commands waiting to be
// forwarded, oldest first.
type forwardQueue struct {
	mu      sync.Mutex
	items   []*forwardItem
	sending bool // the sender goroutine runs
	// held counts the open groups of asynchronous proposals
	// (async_group.go): while one is open no call starts, unless
	// maxGroupHeld commands are queued, a caller waits for one of them
	// (waiting: queued items of Apply, whose caller may be the group's)
	// or the hold is maxGroupHold old (expired: the next batch leaves;
	// hold sets it).
	held, waiting int
	expired       bool
	hold          groupHold

	// noHint is the id of a leader that refused rpcApplyBatchHinted as
	// unknown. Only the sender goroutine uses it (one at a time: sending).
	noHint string
}

// busy reports whether commands are queued or being forwarded: a
// command that must come after them has to join the queue. (Commands
// may be queued with no sender while a group holds them.)
func (q *forwardQueue) busy() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.sending || len(q.items) > 0
}

type forwardItem struct {
	// cmd is the command, stamped by the leader; nil when only req is
	// kept (ApplyAsync: the caller's command is not ours to keep, and a
	// copy per pipelined command was garbage in the common case, where
	// only the encoding is sent). commandOf decodes req then.
	cmd *fsm.Command
	req []byte // cmd's encoding
	tp  string // the W3C traceparent of its forward span ("" untraced; otel.go)
	// Exactly one of f (ApplyAsync: holds a slot of n.asyncWindow) and
	// reply (Apply: its caller waits, room for one answer) is set.
	f     *applyFuture
	reply chan forwardAnswer
}

// forwardAnswer is what Apply's attempt learns of its queued command.
type forwardAnswer struct {
	res fsm.Result
	oc  outcome
	err error
}

// batchable reports whether Apply may queue cmd with the others. A
// blocking acquire goes on its own: the leader may hold it back for a
// hand-off (deferQueuedAcquire), which would hold back the whole batch.
func batchable(cmd *fsm.Command) bool {
	return cmd.Op != fsm.OpAcquire || cmd.Wait == 0
}

// forwardQueued is one attempt of Apply on a follower: cmd joins the
// queue and the attempt ends with its answer, as forward's does.
func (n *forwarder) forwardQueued(ctx context.Context, cmd *fsm.Command) (fsm.Result, outcome, error) {
	it := &forwardItem{cmd: cmd, req: appendCommand(cmd), reply: make(chan forwardAnswer, 1)}
	if n.traced(ctx) {
		// The command carries its span's context to the leader when the
		// batch is rpcApplyBatchTraced (otel.go).
		var sp trace.Span
		ctx, sp = childSpan(ctx, "cluster.forward", trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(oteltrace.AttrOp.String(opName(cmd.Op)), attribute.Bool("locknode.batched", true)))
		defer sp.End()
		it.tp = oteltrace.Traceparent(ctx)
	}
	n.enqueueForward(it)
	select {
	case a := <-it.reply:
		return a.res, a.oc, a.err
	case <-ctx.Done():
		// Like a forwarded call whose ctx ended: it may still run.
		return fsm.Result{}, outcomeDone, ctx.Err()
	case <-n.closed:
		return fsm.Result{}, outcomeDone, ErrClosed
	}
}

// forwardAsync queues cmd for the leader and returns its future; the
// caller holds one slot of n.asyncWindow, released when the future
// completes.
func (n *forwarder) forwardAsync(cmd *fsm.Command) *applyFuture {
	// cmd is the caller's: ApplyAsync does not modify it or keep it.
	it := &forwardItem{req: appendCommand(cmd), f: &applyFuture{n: n.Node, done: make(chan struct{})}}
	n.enqueueForward(it)
	return it.f
}

// appendCommand is cmd's encoding in a buffer sized for it (grown from
// nil it would be allocated several times over).
func appendCommand(cmd *fsm.Command) []byte {
	return cmd.AppendBinary(make([]byte, 0, lockservice.EncodedSizeHint(cmd)))
}

// enqueueForward appends it to the queue and starts the sender if it is
// not running.
func (n *forwarder) enqueueForward(it *forwardItem) {
	q := &n.fwd
	q.mu.Lock()
	q.items = append(q.items, it)
	if it.reply != nil {
		q.waiting++
	}
	start := !q.sending && !q.holding()
	if start {
		q.sending = true
	} else if !q.sending {
		n.armForwardHoldLocked()
	}
	q.mu.Unlock()
	if start {
		// Ends when the queue is empty (the next command starts a new
		// one); after Close every batch fails at once (ErrClosed). Not
		// in n.wg: it touches no storage, and an Add racing Close's Wait
		// would be a misuse.
		go n.sendForwarded()
	}
}

// sendForwarded forwards the queue batch by batch until it is empty.
func (n *forwarder) sendForwarded() {
	for {
		batch := n.fwd.next(n.armForwardHoldLocked)
		if batch == nil {
			return
		}
		n.forwardBatch(batch)
	}
}

// holding reports whether an open group holds the queue back (q.mu
// held).
func (q *forwardQueue) holding() bool {
	return q.held > 0 && q.waiting == 0 && len(q.items) < maxGroupHeld && !q.expired
}

// next takes the queue's next batch, oldest first: at most
// maxForwardBatch commands and maxForwardBatchBytes of their encodings,
// but always the first command, however large. On an empty queue, or
// while a group is open (async_group.go) and fewer than maxGroupHeld
// commands are queued, it returns nil and marks the sender stopped under
// the same lock, so a command queued after that, or the group's end,
// starts a new sender; arm (q.mu held) then bounds the hold.
func (q *forwardQueue) next(arm func()) []*forwardItem {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.holding() {
		q.sending = false
		if len(q.items) > 0 {
			arm()
		}
		return nil
	}
	q.expired = false
	q.hold.disarm()
	k, size := 0, 0
	for k < len(q.items) && k < maxForwardBatch {
		size += len(q.items[k].req)
		if k > 0 && size > maxForwardBatchBytes {
			break
		}
		k++
	}
	if k == 0 {
		q.items = nil
		q.sending = false
		return nil
	}
	batch := append([]*forwardItem(nil), q.items[:k]...)
	for _, it := range batch {
		if it.reply != nil {
			q.waiting--
		}
	}
	clear(q.items[:k])
	q.items = q.items[k:]
	return batch
}

// forwardBatch sends batch to the leader (or proposes it here if this
// node leads now) and arranges for each item's future to complete.
func (n *forwarder) forwardBatch(batch []*forwardItem) {
	var req []byte
	handed := false // the futures are someone else's to complete
	err := n.withLeader(context.Background(), false, func(ctx context.Context) (outcome, error) {
		if l := n.lead.Load(); l != nil {
			oc, err := n.proposeBatchHere(ctx, l, batch)
			handed = oc == outcomeDone && err == nil
			return oc, err
		}
		_, leaderID := n.raft.LeaderWithID()
		if req == nil {
			req = appendForwardBatch(batch)
		}
		req[0] = rpcApplyBatchHinted
		if string(leaderID) == n.fwd.noHint {
			req[0] = rpcApplyBatch
		}
		sent := traceStart()
		if req[0] == rpcApplyBatchHinted && batchTraced(batch) && n.rpcKindActive(rpcApplyBatchTraced) {
			body, oc, err := n.forward(ctx, appendTracedBatch(batch))
			if !(oc == outcomeDone && refusalOf(err) == refusalUnknownKind) {
				if oc != outcomeDone || err != nil {
					return oc, err
				}
				err = n.completeForwarded(batch, body, sent, true)
				handed = err == nil
				return outcomeDone, err
			}
			// A leader that has not applied the activation yet (just
			// elected): nothing was proposed; the batch goes untraced.
		}
		body, oc, err := n.forward(ctx, req)
		if req[0] == rpcApplyBatchHinted && oc == outcomeDone && refusalOf(err) == refusalUnknownKind {
			// A leader that predates the kind: nothing was proposed.
			n.fwd.noHint = string(leaderID)
			req[0] = rpcApplyBatch
			sent = traceStart()
			body, oc, err = n.forward(ctx, req)
		}
		if oc != outcomeDone || err != nil {
			return oc, err
		}
		err = n.completeForwarded(batch, body, sent, req[0] == rpcApplyBatchHinted)
		handed = err == nil
		return outcomeDone, err
	})
	if !handed {
		if err == nil {
			err = errBadRPC
		}
		for _, it := range batch {
			n.finishForwarded(it, fsm.Result{}, err)
		}
	}
}

// proposeBatchHere proposes batch on this node, which became the leader
// while the batch waited: in order, each future completed by its own
// goroutine as on proposeAsync.
func (n *forwarder) proposeBatchHere(ctx context.Context, l *leadership, batch []*forwardItem) (outcome, error) {
	select {
	case <-l.ready:
	case <-l.done:
		return outcomeNotReached, errNotLeader
	case <-ctx.Done():
		return outcomeDone, ctx.Err()
	case <-n.closed:
		return outcomeDone, ErrClosed
	}
	for _, it := range batch {
		cmd, err := it.commandOf()
		if err != nil {
			// Not reached: req is this node's own encoding.
			n.finishForwarded(it, fsm.Result{}, err)
			continue
		}
		rf := n.propose(l, cmd)
		// Ends when raft answers rf (see proposeAsync).
		go func() {
			var a applyFuture
			a.complete(rf)
			n.finishForwarded(it, a.res, a.err)
		}()
	}
	return outcomeDone, nil
}

// commandOf is the item's command, decoded from its encoding when only
// that was kept.
func (it *forwardItem) commandOf() (*fsm.Command, error) {
	if it.cmd != nil {
		return it.cmd, nil
	}
	c, err := fsm.DecodeCommand(it.req)
	if err != nil {
		return nil, fmt.Errorf("cluster: queued command: %w", err)
	}
	return c, nil
}

// completeForwarded completes batch from the leader's answer body: each
// command's result once this node has applied it (so a read here after
// the answer sees the write), or its error. sent is when the call was
// sent, for the latency trace. hinted: the body ends with the commit
// hint (appendCommitHint), handed to raft before the wait for the apply.
func (n *forwarder) completeForwarded(batch []*forwardItem, body []byte, sent int64, hinted bool) error {
	d := fsm.NewDecoder(body)
	if cnt := d.Uvarint(); d.Err() != nil || cnt != uint64(len(batch)) {
		return errBadRPC
	}
	// Each answer is decoded where its caller will read it: an
	// ApplyAsync item's own future (read only once finishForwarded closes
	// its done), else a slot of answers. Holding many locks through a
	// follower answers a pipelined renewal each, and a copy of every
	// result in a slice of the batch was garbage apiece.
	var answers []forwardAnswer
	for _, it := range batch {
		if it.f == nil {
			answers = make([]forwardAnswer, len(batch))
			break
		}
	}
	slot := func(i int) (*fsm.Result, *error) {
		if f := batch[i].f; f != nil {
			return &f.res, &f.err
		}
		return &answers[i].res, &answers[i].err
	}
	var last uint64
	for i := range batch {
		st := d.Byte()
		item := d.Bytes()
		if d.Err() != nil {
			return errBadRPC
		}
		res, rerr := slot(i)
		*res, *rerr = fsm.Result{}, nil
		switch st {
		case stOK:
			r, err := decodeResult(item)
			if err != nil {
				return err
			}
			*res = r
			last = max(last, r.Index)
			traceFwdGot(r.Index, sent)
		case stNotLeader:
			*rerr = fmt.Errorf("%w: %w", api.ErrNoLeader, errNotLeader)
		case stLost:
			*rerr = fmt.Errorf("%w: %w: %v", ErrUnknownOutcome, api.ErrNoLeader, errLeaderLost)
		case stError:
			*rerr = errors.New(string(item))
		default:
			return errBadRPC
		}
	}
	if hinted {
		idx, term := d.Uvarint(), d.Uvarint()
		if d.Err() != nil || idx > last {
			// The hint names the batch's own last entry, never a later one.
			return errBadRPC
		}
		n.commitHint(idx, term)
	}
	if d.Len() != 0 {
		return errBadRPC
	}
	n.metrics.forwarded.Add(float64(len(batch)))
	// Ends once this node applied the batch's last entry, closes, or
	// RetryTimeout passes; the sender goes on with the next batch
	// meanwhile. Not in n.wg, as the sender.
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), n.cfg.RetryTimeout)
		defer cancel()
		if !hinted {
			// A leader that gives no hint: its commit push tells this
			// node of the commit (wantsCommits).
			defer n.hub.CommitDemand()()
		}
		// Past the timeout the committed results are answered anyway,
		// as Apply does when its ctx ends while this node catches up.
		if err := n.waitApplied(ctx, last); errors.Is(err, ErrClosed) {
			for _, it := range batch {
				n.finishForwarded(it, fsm.Result{}, err)
			}
			return
		}
		for i, it := range batch {
			res, rerr := slot(i)
			if *rerr == nil {
				// As Apply's forward does: the forced releases of the
				// entry as this node applied it.
				res.Events = n.forced.lookup(res.Index)
			}
			n.finishForwarded(it, *res, *rerr)
			if *rerr == nil {
				traceFwdDone(res.Index)
			}
		}
	}()
	return nil
}

// finishForwarded completes it with res or err (as ApplyAsync reports
// them: see applyFuture.complete).
func (n *forwarder) finishForwarded(it *forwardItem, res fsm.Result, err error) {
	if it.reply != nil {
		oc := outcomeDone
		switch {
		case errors.Is(err, ErrUnknownOutcome):
			oc = outcomeUnknown
		case errors.Is(err, api.ErrNoLeader):
			oc = outcomeNotReached
		}
		it.reply <- forwardAnswer{res: res, oc: oc, err: err}
		return
	}
	it.f.res, it.f.err = res, err
	<-n.asyncWindow
	close(it.f.done)
}

// appendForwardBatch encodes an rpcApplyBatch request: the kind, the
// count, then each command's encoding with its length. The kind byte may
// be changed to rpcApplyBatchHinted: the bodies are the same.
func appendForwardBatch(batch []*forwardItem) []byte {
	size := 1 + binary.MaxVarintLen64
	for _, it := range batch {
		size += binary.MaxVarintLen64 + len(it.req)
	}
	b := make([]byte, 0, size)
	b = append(b, rpcApplyBatch)
	b = binary.AppendUvarint(b, uint64(len(batch)))
	for _, it := range batch {
		b = binary.AppendUvarint(b, uint64(len(it.req)))
		b = append(b, it.req...)
	}
	return b
}

// handleApplyBatch serves rpcApplyBatch, rpcApplyBatchHinted (hinted)
// and rpcApplyBatchTraced (hinted, traced) on the leader: it proposes the
// commands in order, then answers stOK with each command's status and
// result (stNotLeader for the whole call if none was proposed), followed
// if hinted by the commit hint (appendCommitHint).
func (n *forwarder) handleApplyBatch(ctx context.Context, body []byte, hinted, traced bool) ([]byte, error) {
	recv := traceStart()
	cmds, encs, lists, tps, err := decodeApplyBatch(body, traced)
	if err != nil {
		return nil, err
	}
	// Proposing copies what it needs (an encoding): the commands go back
	// to the pool once proposed, or at once when none will be.
	putSlabs := func() {
		putCommandSlab(cmds)
		putEncodingSlab(encs)
		putListSlab(lists)
	}
	l := n.lead.Load()
	if l == nil {
		putSlabs()
		return []byte{stNotLeader}, nil
	}
	select {
	case <-l.ready:
	case <-l.done:
		putSlabs()
		return []byte{stNotLeader}, nil
	case <-ctx.Done():
		putSlabs()
		return nil, ctx.Err()
	case <-n.closed:
		putSlabs()
		return []byte{stNotLeader}, nil
	}
	// Proposed one after another from this goroutine: log order is
	// batch order. A blocking acquire is not held back for a hand-off
	// here (deferQueuedAcquire): it would hold back the rest too.
	b := &servedBatch{recv: recv, futs: make([]raft.ApplyFuture, len(cmds))}
	if traceOn {
		b.proposed = make([]int64, len(cmds))
	}
	b.spans = n.serveBatchTraced(ctx, tps, cmds)
	release := n.holdRenewals()
	for i := range cmds {
		if cmds[i].Op == fsm.OpRelease {
			n.openHandoff(&cmds[i])
		}
		if traceOn {
			b.proposed[i] = traceStart()
		}
		b.spans.begin(n.Node, i)
		b.futs[i] = n.proposeEncoded(l, &cmds[i], encs[i])
	}
	release()
	putSlabs()
	resp, last, refused := n.answerBatch(ctx, b)
	if refused == len(b.futs) {
		// Nothing was proposed: the follower may send it all again.
		return []byte{stNotLeader}, nil
	}
	if hinted {
		resp = n.appendCommitHint(resp, last)
	}
	if traceOn {
		for _, f := range b.futs {
			if f.Error() == nil {
				traceFwdAnswered(f.Index())
			}
		}
	}
	return resp, nil
}

// decodeApplyBatch decodes the body of a batch call: its commands, each
// command's encoding (a slice of body, stamped rather than encoded again
// when proposed), the slab their byte lists were cut from (for
// putListSlab) and, if traced, each command's traceparent.
func decodeApplyBatch(body []byte, traced bool) (cmds []fsm.Command, encs, lists [][]byte, tps []string, err error) {
	d := fsm.NewDecoder(body)
	cnt := d.Uvarint()
	if d.Err() != nil || cnt == 0 || cnt > maxForwardBatch {
		return nil, nil, nil, nil, fmt.Errorf("%w: batch of %d commands", errBadRPC, cnt)
	}
	cmds = getCommandSlab(int(cnt))
	encs = getEncodingSlab(int(cnt))
	lists = getListSlab(int(cnt))
	if traced {
		tps = make([]string, cnt)
	}
	fail := func(err error) ([]fsm.Command, [][]byte, [][]byte, []string, error) {
		putCommandSlab(cmds)
		putEncodingSlab(encs)
		putListSlab(lists)
		return nil, nil, nil, nil, err
	}
	for i := range cmds {
		if traced {
			if tps[i] = d.Str(); len(tps[i]) > maxTraceparent {
				return fail(errBadRPC)
			}
		}
		b := d.Bytes()
		if d.Err() != nil {
			return fail(errBadRPC)
		}
		if err := fsm.DecodeCommandArena(&cmds[i], b, &lists); err != nil {
			return fail(fmt.Errorf("%w: %v", errBadRPC, err))
		}
		encs[i] = b
	}
	if d.Len() != 0 {
		return fail(errBadRPC)
	}
	return cmds, encs, lists, tps, nil
}

// commandSlabs holds the []fsm.Command of served batch calls: a
// follower's pipelined writes arrive as batches of up to maxForwardBatch
// commands, and a slab apiece was most of what serving them allocated on
// the leader (holding many locks: a forwarded renewal each; GC of a
// large table is paid per allocated byte).
var commandSlabs sync.Pool

// getCommandSlab returns n zero commands.
func getCommandSlab(n int) []fsm.Command {
	if p, _ := commandSlabs.Get().(*[]fsm.Command); p != nil && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([]fsm.Command, n, max(n, 16))
}

// putCommandSlab zeroes s (it aliases a call's body) and pools it. The
// caller keeps no pointer into it: propose encodes what it keeps.
func putCommandSlab(s []fsm.Command) {
	clear(s)
	s = s[:0]
	commandSlabs.Put(&s)
}

// encodingSlabs pools the [][]byte of served batch calls, as
// commandSlabs the commands.
var encodingSlabs sync.Pool

// getEncodingSlab returns n nil slices.
func getEncodingSlab(n int) [][]byte {
	if p, _ := encodingSlabs.Get().(*[][]byte); p != nil && cap(*p) >= n {
		return (*p)[:n]
	}
	return make([][]byte, n, max(n, 16))
}

// putEncodingSlab clears s (it aliases a call's body) and pools it.
func putEncodingSlab(s [][]byte) {
	clear(s)
	s = s[:0]
	encodingSlabs.Put(&s)
}

// listSlabs pools the byte-list arenas of served batch calls, as
// commandSlabs the commands: a pipelined renewal script's KEYS and ARGV
// were a list allocation apiece.
var listSlabs sync.Pool

// listsPerCommand is the arena room per command: a renewal has three
// items (a script's key and two arguments; PEXPIRE's three), and one
// spare; a command with more takes its lists from the heap.
const listsPerCommand = 4

// getListSlab returns an empty arena with room for the lists of n
// commands.
func getListSlab(n int) [][]byte {
	if p, _ := listSlabs.Get().(*[][]byte); p != nil && cap(*p) >= listsPerCommand*n {
		return (*p)[:0]
	}
	return make([][]byte, 0, listsPerCommand*max(n, 16))
}

// putListSlab clears s (it aliases a call's body) and pools it.
func putListSlab(s [][]byte) {
	clear(s)
	s = s[:0]
	listSlabs.Put(&s)
}

// servedBatch is a batch call the leader has proposed.
type servedBatch struct {
	futs     []raft.ApplyFuture
	spans    *batchSpans
	recv     int64   // when the call arrived, for the latency trace
	proposed []int64 // proposal times, for the latency trace
}

// answerBatch waits for each proposal of b and encodes the answer's
// items: stOK, the count, then each command's status and result. It
// returns the batch's last committed entry and how many proposals were
// refused as not leader.
func (n *forwarder) answerBatch(ctx context.Context, b *servedBatch) (resp []byte, last uint64, refused int) {
	resp = binary.AppendUvarint([]byte{stOK}, uint64(len(b.futs)))
	var item []byte
	for i, f := range b.futs {
		st := stOK
		item = item[:0]
		aerr := n.await(f)
		if err := aerr; err != nil {
			oc, err := classifyProposal(err)
			switch {
			case errors.Is(err, ErrClosed) || oc == outcomeUnknown:
				st = stLost
			case oc == outcomeNotReached:
				st = stNotLeader
				refused++
			default:
				st, item = stError, append(item, err.Error()...)
			}
		} else if res, err := proposalResult(f); err != nil {
			st, item = stError, append(item, err.Error()...)
		} else {
			item = fsm.AppendResult(item, &res)
			last = max(last, res.Index)
			n.auditPeerForced(ctx, &res)
			if traceOn {
				traceFwdServed(res.Index, b.recv, b.proposed[i])
			}
		}
		b.spans.end(n.Node, i, f, aerr)
		resp = append(resp, st)
		resp = binary.AppendUvarint(resp, uint64(len(item)))
		resp = append(resp, item...)
	}
	return resp, last, refused
}

// appendCommitHint appends the commit hint of an rpcApplyBatchHinted
// answer: uvarint index and uvarint term of the batch's last committed
// entry, the term read from this node's log after the commit (0, 0:
// none). The entry's own term, not this leader's current one: a follower
// may hold an uncommitted entry of another term at that index, and the
// term is what keeps it from committing that one (third_party/raft
// FORK.md).
func (n *forwarder) appendCommitHint(resp []byte, last uint64) []byte {
	var term uint64
	if last > 0 {
		var l raft.Log
		if err := n.logs.GetLog(last, &l); err == nil {
			term = l.Term
		}
	}
	if term == 0 {
		last = 0
	}
	resp = binary.AppendUvarint(resp, last)
	return binary.AppendUvarint(resp, term)
}

// commitHinter is the raft fork's way to tell a follower of a commit
// (third_party/raft FORK.md); upstream raft does not have it, and a node
// built against upstream waits for the leader's AppendEntries instead.
type commitHinter interface {
	LocknodeCommitted(index, term uint64)
}

// commitHint tells this node's raft, if it is the fork, that the entry at
// index, written in term, is committed.
func (n *forwarder) commitHint(index, term uint64) {
	if h, ok := any(n.raft).(commitHinter); ok && index > 0 && term > 0 {
		h.LocknodeCommitted(index, term)
	}
}
