package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/cluster/lockservice"
	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/internal/oteltrace"
	"github.com/locknode/locknode/transport"
)

// outcome says how one attempt at a leader operation ended.
type outcome int

const (
	outcomeDone       outcome = iota // answered (the error, if any, is final)
	outcomeNotReached                // no leader executed it: safe to retry
	outcomeUnknown                   // a leader may have executed it
)

// Apply proposes cmd through the leader and returns its result, normally
// once this node has applied it too (so local waiters and reads see it;
// if ctx ends or RetryTimeout passes while this node catches up, the
// committed result is returned anyway). The node stamps cmd.Time; cmd is not modified,
// and once Apply returned without an error nothing refers to it (a caller
// may reuse it; after an error a forward may still hold it).
//
// Failures are reported at once: when the leader is lost or the
// connection to it drops, a command without a ReqID fails with an error
// wrapping ErrUnknownOutcome and api.ErrNoLeader. Commands that carry a
// ReqID (exactly-once in the FSM) or that never reached a leader are
// retried when a new leader is known, until ctx ends (RetryTimeout when
// ctx has no deadline).
// FSM refusals are in Result.Err, not the error. On a leader,
// Result.Events are all the entry's events; a command forwarded from a
// follower gets only its forced releases (EvReleased with ReasonForced,
// from the follower's own apply of the entry), which its front end
// audits.
//
// Under a recording span of ctx (with Config.TracerProvider set) it is a
// span of its own, with the forward, the commit and the apply beneath it
// (otel.go).
func (n *Node) Apply(ctx context.Context, cmd *fsm.Command) (fsm.Result, error) {
	if n.traced(ctx) {
		return n.applyTraced(ctx, cmd)
	}
	return n.apply(ctx, cmd)
}

func (n *Node) apply(ctx context.Context, cmd *fsm.Command) (fsm.Result, error) {
	start := time.Now()
	var res fsm.Result
	var req []byte
	err := n.withLeader(ctx, cmd.ReqID != "", func(ctx context.Context) (outcome, error) {
		l := n.lead.Load()
		queued := n.fwd.busy()
		if l != nil && !queued {
			r, oc, err := n.applyAsLeader(ctx, l, cmd)
			res = r
			return oc, err
		}
		if batchable(cmd) || queued {
			// Shares a forwarding call with the commands queued with it,
			// and answers once this node has applied it too. Behind
			// queued commands (the caller's asynchronous ones among
			// them, even on a leader that queued them as a follower)
			// every command joins the queue, so none overtakes them; a
			// blocking acquire then forgoes the leader's hand-off wait.
			r, oc, err := n.forwardQueued(ctx, cmd)
			if oc == outcomeDone && err == nil {
				res = r
			}
			return oc, err
		}
		resp, oc, err := n.forwardApply(ctx, cmd, &req)
		if oc != outcomeDone || err != nil {
			return oc, err
		}
		r, err := decodeResult(resp)
		if err != nil {
			return outcomeDone, err
		}
		n.metrics.forwarded.Inc()
		// A follower answers once it applied the entry itself. No hint
		// comes with this answer: the leader's commit push does. Past
		// RetryTimeout the committed result is answered anyway, as the
		// batched forwards do (forward_batch.go): a node that cannot
		// apply (its log store fails) must not hold the request.
		done := n.hub.CommitDemand()
		wctx, cancel := context.WithTimeout(ctx, n.cfg.RetryTimeout)
		werr := n.waitApplied(wctx, r.Index)
		cancel()
		done()
		if errors.Is(werr, ErrClosed) {
			return outcomeDone, werr
		}
		// The leader's answer carries no events; the forced releases
		// this node's own apply of the entry produced are the same.
		r.Events = n.forced.lookup(r.Index)
		res = r
		return outcomeDone, nil
	})
	n.metrics.applyLatency.Observe(time.Since(start).Seconds())
	if err != nil {
		return fsm.Result{}, err
	}
	return res, nil
}

// applyAsLeader stamps and proposes cmd on this node as leader of term l.
func (n *leaderTerm) applyAsLeader(ctx context.Context, l *leadership, cmd *fsm.Command) (fsm.Result, outcome, error) {
	select {
	case <-l.ready: // the usual case, checked alone: asking ctx for Done allocates
	default:
		select {
		case <-l.ready:
		case <-l.done:
			return fsm.Result{}, outcomeNotReached, errNotLeader
		case <-ctx.Done():
			return fsm.Result{}, outcomeDone, ctx.Err()
		case <-n.closed:
			return fsm.Result{}, outcomeDone, ErrClosed
		}
	}
	t0 := traceStart()
	ct := n.beginCommit(ctx)
	f := n.propose(l, cmd)
	if _, ok := f.(*renewFuture); ok {
		n.unholdRenewals()
	}
	err := n.await(f)
	ct.end(n.Node, f, err)
	if err != nil {
		oc, err := classifyProposal(err)
		return fsm.Result{}, oc, err
	}
	traceProposed(f.Index(), t0)
	res, err := proposalResult(f)
	return res, outcomeDone, err
}

// propose stamps cmd with the term's clock and hands it to raft without
// waiting. Proposals made one after another from one goroutine get log
// indexes in that order (raft queues them on one channel); renewals may
// share an entry, in that order too (renew_batch.go).
func (n *leaderTerm) propose(l *leadership, cmd *fsm.Command) raft.ApplyFuture {
	return n.proposeEncoded(l, cmd, nil)
}

// proposeEncoded is propose for cmd as it arrived encoded, enc (nil:
// not at hand): an entry of its own is enc stamped in place of an
// encoding of cmd (a forwarded batch's commands).
func (n *leaderTerm) proposeEncoded(l *leadership, cmd *fsm.Command, enc []byte) raft.ApplyFuture {
	if n.renew.on() && n.batchableRenewal(cmd) {
		return n.queueRenewal(l, cmd, enc)
	}
	// Renewals queued before cmd go first, so that order holds.
	n.flushRenewals()
	if enc != nil {
		b, err := fsm.AppendStamped(make([]byte, 0, len(enc)+binary.MaxVarintLen64), enc, l.now(n.clock))
		if err == nil {
			n.metrics.proposed(cmd.Op)
			return n.raft.Apply(b, 0)
		}
		// Not reached: enc decoded into cmd.
	}
	return n.proposeOne(l, cmd)
}

// proposeOne stamps cmd and hands it to raft as an entry of its own.
func (n *leaderTerm) proposeOne(l *leadership, cmd *fsm.Command) raft.ApplyFuture {
	c := *cmd
	c.Time = l.now(n.clock)
	n.metrics.proposed(c.Op)
	return n.raft.Apply(c.AppendBinary(make([]byte, 0, lockservice.EncodedSizeHint(&c))), 0)
}

// classifyProposal says what a failed raft apply future means.
func classifyProposal(err error) (outcome, error) {
	switch {
	case isRaftNotLeader(err):
		return outcomeNotReached, fmt.Errorf("%w: %w", errNotLeader, err)
	case errors.Is(err, ErrClosed):
		return outcomeDone, err
	case errors.Is(err, raft.ErrRaftShutdown):
		return outcomeDone, fmt.Errorf("%w: %w", ErrClosed, err)
	default:
		return outcomeUnknown, fmt.Errorf("%w: %w", errLeaderLost, err)
	}
}

// proposalResult is a committed proposal's FSM result: the one place the
// FSM's response is type-asserted.
func proposalResult(f raft.ApplyFuture) (fsm.Result, error) {
	res, ok := f.Response().(*fsm.Result)
	if !ok || res == nil {
		return fsm.Result{}, fmt.Errorf("cluster: unexpected fsm response %T", f.Response())
	}
	return *res, nil
}

// forward sends req to the leader this node knows of. A stOK body is
// returned with outcomeDone; everything else is classified.
func (n *forwarder) forward(ctx context.Context, req []byte) ([]byte, outcome, error) {
	addr, id := n.raft.LeaderWithID()
	if addr == "" {
		return nil, outcomeNotReached, errLeaderUnknown
	}
	if string(id) == n.id {
		// Raft says we lead but the term's state is not set up (or just
		// ended): try again shortly.
		return nil, outcomeNotReached, errNotLeader
	}
	n.metrics.forwardCall(req[0])
	resp, err := n.tr.Call(ctx, string(addr), req)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return nil, outcomeDone, ctx.Err()
		case errors.Is(err, transport.ErrConnLost):
			return nil, outcomeUnknown, fmt.Errorf("%w: %w", errLeaderLost, err)
		case errors.Is(err, transport.ErrClosed):
			return nil, outcomeDone, fmt.Errorf("%w: %w", ErrClosed, err)
		case errors.Is(err, transport.ErrRemote):
			return nil, outcomeDone, err
		default:
			// Dial failures: the request never left this node.
			return nil, outcomeNotReached, err
		}
	}
	st, body, err := decodeStatus(resp)
	if err != nil {
		return nil, outcomeDone, err
	}
	switch st {
	case stNotLeader:
		return nil, outcomeNotReached, errNotLeader
	case stLost:
		return nil, outcomeUnknown, errLeaderLost
	}
	return body, outcomeDone, nil
}

// withLeader runs try until it is answered. Attempts that reached no
// leader are retried, and so are those with an unknown outcome when
// retryUnknown (the operation is idempotent); each retry waits for a
// leader change or a short back-off. A ctx with a deadline is retried
// until it ends, so a request rides out an election as the remote client
// does; without one, RetryTimeout bounds the retries.
func (n *forwarder) withLeader(ctx context.Context, retryUnknown bool, try func(context.Context) (outcome, error)) error {
	var budget <-chan time.Time // nil: ctx alone bounds the retries
	budgetSet := false
	backoff := 5 * time.Millisecond
	for {
		changed := n.leaderChanged()
		oc, err := try(ctx)
		switch {
		case oc == outcomeDone:
			return err
		case oc == outcomeUnknown && !retryUnknown:
			return fmt.Errorf("%w: %w: %v", ErrUnknownOutcome, api.ErrNoLeader, err)
		}
		if n.unjoined.Load() {
			// No leader will answer before this node is added: refuse
			// now, so that clients go to a member.
			return fmt.Errorf("%w: %w", api.ErrNoLeader, ErrNotJoined)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w: %w (%v)", api.ErrNoLeader, ctx.Err(), err)
		}
		if lerr := n.leaderless(); lerr != nil {
			// No election succeeds here: say so rather than retry to
			// the caller's deadline.
			return lerr
		}
		if !budgetSet {
			budgetSet = true
			if _, ok := ctx.Deadline(); !ok {
				t := time.NewTimer(n.cfg.RetryTimeout)
				defer t.Stop()
				budget = t.C
			}
		}
		oteltrace.Logger(ctx, n.log).Debug("retrying at the leader", "error", err)
		select {
		case <-changed:
		case <-time.After(backoff):
			backoff = min(2*backoff, 100*time.Millisecond)
		case <-budget:
			return fmt.Errorf("%w: %v", api.ErrNoLeader, err)
		case <-ctx.Done():
			return fmt.Errorf("%w: %w (%v)", api.ErrNoLeader, ctx.Err(), err)
		case <-n.closed:
			return ErrClosed
		}
	}
}

// Read runs fn against the local table once it is linearizable to read:
// this node has applied everything the leader had committed when the
// read began (the leader confirms it still leads first, a ReadIndex). now
// is the cluster time to evaluate deadlines at: see lockservice.ReadTime for why it
// is not simply the leader's clock. stale=true skips the leader and runs
// at once with this node's estimate of the clock. fn runs under the
// table's read lock: it must not block, keep t, or mutate it.
func (n *forwarder) Read(ctx context.Context, stale bool, fn func(t *fsm.Table, now int64)) error {
	var now int64
	if stale {
		if n.unjoined.Load() {
			// Its table is no cluster's, not even a stale copy.
			return fmt.Errorf("%w: %w", api.ErrNoLeader, ErrNotJoined)
		}
		now = n.staleNow()
	} else {
		var idx uint64
		err := n.withLeader(ctx, true, func(ctx context.Context) (outcome, error) {
			var oc outcome
			var err error
			idx, now, oc, err = n.readIndex(ctx)
			return oc, err
		})
		if err != nil {
			return err
		}
		if err := n.waitReadIndex(ctx, idx); err != nil {
			return err
		}
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	if stale {
		now = max(now, n.table.Now())
	} else {
		now = lockservice.ReadTime(n.table, now)
	}
	fn(n.table, now)
	return nil
}

// waitReadIndex waits until this node applied idx, a read index, for at
// most RetryTimeout (less if ctx ends first: then ctx's error). A node
// that cannot apply what the leader committed (its log store fails, it
// is far behind) would otherwise hold the read for as long as the
// caller waits, which is forever for a client without a deadline; the
// error wraps ErrNotReady and api.ErrNoLeader: retry on another node.
func (n *forwarder) waitReadIndex(ctx context.Context, idx uint64) error {
	if n.AppliedIndex() >= idx {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, n.cfg.RetryTimeout)
	defer cancel()
	err := n.waitApplied(wctx, idx)
	if err == nil || ctx.Err() != nil || errors.Is(err, ErrClosed) {
		return err
	}
	return fmt.Errorf("%w: applied %d of read index %d within %v; retry on another node (%w)",
		ErrNotReady, n.AppliedIndex(), idx, n.cfg.RetryTimeout, api.ErrNoLeader)
}

// readIndex asks the leader (this node, when it leads) once for a read
// index: an index that covers every write committed before the call,
// and the term's clock.
func (n *forwarder) readIndex(ctx context.Context) (idx uint64, now int64, oc outcome, err error) {
	if l := n.lead.Load(); l != nil {
		return n.readIndexAsLeader(ctx, l)
	}
	body, oc, err := n.forward(ctx, []byte{rpcReadIndex})
	if oc != outcomeDone || err != nil {
		return 0, 0, oc, err
	}
	d := fsm.NewDecoder(body)
	idx, now = d.Uvarint(), d.Varint()
	var hint, term uint64
	if d.Len() > 0 {
		hint, term = d.Uvarint(), d.Uvarint()
	}
	if err := d.Err(); err != nil {
		return 0, 0, outcomeDone, fmt.Errorf("%w: read index: %w", errBadRPC, err)
	}
	if hint > idx {
		return 0, 0, outcomeDone, fmt.Errorf("%w: read index %d with a commit hint past it (%d)", errBadRPC, idx, hint)
	}
	// The index is committed: apply up to it without waiting for the
	// AppendEntries that says so (this node may not want commit pushes).
	n.commitHint(hint, term)
	return idx, now, outcomeDone, nil
}

// readIndexAsLeader returns an index that covers every write committed
// before the call, after confirming leadership with a quorum, and the
// term's clock.
func (n *leaderTerm) readIndexAsLeader(ctx context.Context, l *leadership) (uint64, int64, outcome, error) {
	select {
	case <-l.ready:
	case <-l.done:
		return 0, 0, outcomeNotReached, errNotLeader
	case <-ctx.Done():
		return 0, 0, outcomeDone, ctx.Err()
	}
	commit := n.raft.CommitIndex()
	if err := n.await(n.raft.VerifyLeader()); err != nil {
		if errors.Is(err, ErrClosed) {
			return 0, 0, outcomeDone, err
		}
		return 0, 0, outcomeNotReached, fmt.Errorf("%w: %w", errNotLeader, err)
	}
	return n.lastCommandAtOrBefore(commit), l.now(n.clock), outcomeDone, nil
}

// lastCommandAtOrBefore returns the index of the last command entry at or
// before idx. No-op and barrier entries never reach the FSM, so a node
// waiting for a no-op's index would wait for the next command; waiting
// for the last command before it is equivalent and always completes.
func (n *raftReplica) lastCommandAtOrBefore(idx uint64) uint64 {
	var l raft.Log
	for i := idx; i > 0; i-- {
		if err := n.logs.GetLog(i, &l); err != nil {
			// Compacted into a snapshot: every command up to here is in
			// the table already.
			return min(i, n.AppliedIndex())
		}
		if l.Type == raft.LogCommand {
			return i
		}
	}
	return 0
}

// staleNow estimates the cluster clock without asking the leader.
func (n *raftReplica) staleNow() int64 {
	if l := n.lead.Load(); l != nil {
		select {
		case <-l.ready:
			return l.now(n.clock)
		default:
		}
	}
	m := n.clock.Now() // before the lock, as in setApplied
	n.appliedMu.Lock()
	defer n.appliedMu.Unlock()
	return n.lastApplyTime + max(m.Sub(n.lastApplyMono), 0).Milliseconds()
}

func opName(op fsm.Op) string {
	switch op {
	case fsm.OpTick:
		return "tick"
	case fsm.OpAcquire:
		return "acquire"
	case fsm.OpRelease:
		return "release"
	case fsm.OpExtend:
		return "extend"
	case fsm.OpCancelWait:
		return "cancel_wait"
	case fsm.OpSessionOpen:
		return "session_open"
	case fsm.OpSessionKeepAlive:
		return "session_keepalive"
	case fsm.OpSessionClose:
		return "session_close"
	case fsm.OpFenceCheck:
		return "fence_check"
	case fsm.OpRedis:
		return "redis"
	case fsm.OpEval:
		return "eval"
	case fsm.OpExec:
		return "exec"
	case fsm.OpScriptLoad:
		return "script_load"
	case fsm.OpEvalSHA:
		return "evalsha"
	case fsm.OpScriptFlush:
		return "script_flush"
	case fsm.OpReown:
		return "reown"
	case fsm.OpBatchRenew:
		return "batch_renew"
	}
	return "other"
}
