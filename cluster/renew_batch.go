package cluster

import (
	"fmt"
	"sync/atomic"

	"github.com/hashicorp/raft"

	"github.com/locknode/locknode/fsm"
)

// Coalesced renewals. Holding a lock costs a renewal every TTL/3 or so;
// with one raft entry each, holding many locks costs as much log as
// taking them. Once the cluster runs fsm.VersionBatchRenew, the leader
// proposes a renewal (fsm.Renewal: a lock extend, a session keep-alive, a
// Redis PEXPIRE, a compare-and-pexpire script or, from
// fsm.VersionRedissonRenew, Redisson's watchdog script) at once unless
// maxRenewInflight renewal entries of its are in flight, and otherwise
// queues it; when one in flight is answered, everything queued goes into
// one OpBatchRenew entry. So a renewal never waits for a tick, at most for
// the renewal entries before it, and under load the renewals that arrive
// during a commit round share an entry.
//
// The lease rules are those of any entry: each renewal is answered once
// its entry is committed and applied, with its own result; its time is the
// entry's, stamped when the entry is proposed (never earlier than the
// renewal's arrival, so no lease ends earlier than the client reckons);
// a request id is remembered per renewal (fsm/batch_renew.go).
//
// Order: a proposal from the same goroutine after a queued renewal must
// get a later index, as it would without the queue. Any other proposal
// first proposes what is queued (flushRenewals), under the same lock as
// the queue, so a pipeline's release never overtakes its extend.

// maxRenewInflight is how many renewal entries of the leader may be in
// flight before the next renewals queue for an answer. One would coalesce
// the most, but a renewal that arrives while it is in flight then waits
// a whole commit round (its commit, and the leader's apply) before its
// own entry even leaves: on a loaded disk that wait is a large part of a
// renewal's latency. With two, a forwarded call's renewals (one entry:
// holdRenewals) go to raft at once unless two entries are in flight, and
// raft's own log write takes them with whatever it has queued; renewals
// still share entries when they arrive faster than entries commit.
const maxRenewInflight = 2

// maxRenewBatchBytes bounds the encoded renewals of one entry; a queue
// that reaches it (or fsm.MaxBatchRenew renewals) is proposed at once.
const maxRenewBatchBytes = 1 << 20

// renewBatcher is the leader's queue of renewals.
type renewBatcher struct {
	// version is the active cluster version: whether it runs
	// OpBatchRenew (on), and which script texts are renewals
	// (fsm.RenewalSHA).
	version atomic.Uint32
	// queued is len(queue), readable without mu: zero means every
	// renewal queued before was handed to raft already.
	queued atomic.Int64
	// awaited counts the batch entries proposed here whose results no
	// one has read yet: while it is zero the node's apply may leave out
	// each renewal's result (fsm.Table.SkipBatchResults). It rises before
	// the entry reaches raft, so the entry's apply sees it.
	awaited atomic.Int64

	// mu guards the rest. The holder stamps the entry's time and hands
	// it to raft inside, so a renewal waits here while another is
	// proposed; see chanMutex for why it is not a sync.Mutex.
	mu       chanMutex
	inflight int // renewal entries proposed and not answered yet
	// held counts callers proposing a group of commands that arrived
	// together (holdRenewals, BeginAsyncGroup): their renewals wait for
	// the group's end instead of the first going alone. groups counts
	// the async groups among them: those may end later than the caller
	// reckons (async_group.go), so their renewals leave anyway once
	// maxGroupHeld are queued or the hold is maxGroupHold old; a
	// forwarded batch is proposed in one go and keeps its renewals
	// together whatever their number.
	held   int
	groups int
	// hold proposes what groups hold once it is maxGroupHold old.
	hold  groupHold
	queue []*renewFuture
	bytes int         // encoded size of queue
	l     *leadership // the term the queue was proposed in
	// group is what the queued renewals are answered through (nil when
	// the queue is empty).
	group *renewGroup
	// spare is a chunk the next futures are cut from, and arena holds
	// the queued renewals' encodings until they are proposed (then it is
	// reused): holding many locks queues every renewal here, and an
	// allocation apiece for the future, its channel and its encoding was
	// most of what the leader allocated per renewal.
	spare []renewFuture
	arena []byte
}

// renewChunk is how many renewal futures one allocation holds.
const renewChunk = 64

// renewGroup is the renewals proposed in one entry: answered together,
// through one channel.
type renewGroup struct {
	done chan struct{} // closed once every renewal of the group is answered
	// Guarded by the batcher's mu: what runs once the group is answered
	// (onAnswered), and whether it was.
	then     []func()
	answered bool
}

// chanMutex is a mutex whose waiters wait on a channel. In a synctest
// bubble (the simulator) a goroutine waiting on a sync.Mutex is not
// durably blocked, so virtual time cannot move while one waits; and the
// holder of this lock reads the node's clock, which a simulated process
// pause blocks until virtual time moves past it. A waiter on a channel
// lets time move, the pause end and the holder go on. Its zero value is
// an unlocked mutex.
type chanMutex struct{ p atomic.Pointer[chan struct{}] }

func (m *chanMutex) ch() chan struct{} {
	if c := m.p.Load(); c != nil {
		return *c
	}
	c := make(chan struct{}, 1)
	if m.p.CompareAndSwap(nil, &c) {
		return c
	}
	return *m.p.Load()
}

// Lock takes the mutex.
func (m *chanMutex) Lock() { m.ch() <- struct{}{} }

// Unlock releases it.
func (m *chanMutex) Unlock() { <-m.ch() }

// noteVersion records the active cluster version after an apply (the
// node's table lock held).
func (b *renewBatcher) noteVersion(v uint32) {
	if b.version.Load() != v {
		b.version.Store(v)
	}
}

// on reports whether the active cluster version runs OpBatchRenew.
func (b *renewBatcher) on() bool { return b.version.Load() >= fsm.VersionBatchRenew }

// renewFuture is one queued renewal, answered from its entry's result.
// It is a raft.ApplyFuture so the callers of propose treat it like any.
//
// It keeps the renewal's encoding only, and its result as a pointer into
// the entry's: holding many locks queues every renewal here, and a copy
// of the command and of the result apiece was most of what the leader
// allocated per renewal (GC of a large table is paid per allocated byte).
type renewFuture struct {
	// enc is the renewal's encoding (time 0) in the batcher's arena,
	// until the renewal is proposed (nil after).
	enc []byte
	g   *renewGroup
	// Written once, before g.done closes.
	err   error
	index uint64
	res   *fsm.Result
}

var _ raft.ApplyFuture = (*renewFuture)(nil)

// done is closed once the renewal is answered.
func (f *renewFuture) done() <-chan struct{} { return f.g.done }

func (f *renewFuture) Error() error  { <-f.g.done; return f.err }
func (f *renewFuture) Index() uint64 { <-f.g.done; return f.index }
func (f *renewFuture) Response() interface{} {
	<-f.g.done
	if f.res == nil {
		return &fsm.Result{}
	}
	return f.res
}

// batchableRenewal reports whether cmd may be coalesced (fsm.Renewal: for
// a script by SHA1, a known renewal text at the active cluster version, so
// no table lock is taken on the way to raft). The version only rises, so
// an entry proposed after it was seen is applied at it or above.
func (n *Node) batchableRenewal(cmd *fsm.Command) bool {
	return fsm.Renewal(cmd) && (cmd.Op != fsm.OpEvalSHA || fsm.RenewalSHA(cmd.Key, n.renew.version.Load()))
}

// queueRenewal queues cmd, proposing the queue at once if fewer than
// maxRenewInflight renewal entries are in flight (or the queue is full).
// enc is cmd's encoding when at hand (a forwarded renewal), else nil:
// copied with its time cleared rather than encoded again.
func (n *Node) queueRenewal(l *leadership, cmd *fsm.Command, enc []byte) raft.ApplyFuture {
	b := &n.renew
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.group == nil {
		b.group = &renewGroup{done: make(chan struct{})}
	}
	if len(b.spare) == cap(b.spare) {
		b.spare = make([]renewFuture, 0, renewChunk)
	}
	b.spare = b.spare[:len(b.spare)+1]
	f := &b.spare[len(b.spare)-1]
	f.g = b.group
	// An append that outgrows the arena moves it: the encodings before
	// stay where they were, unchanged, until proposed.
	start := len(b.arena)
	var err error
	if enc != nil {
		// The entry's time is the renewal's.
		b.arena, err = fsm.AppendStamped(b.arena, enc, 0)
	}
	if enc == nil || err != nil {
		// err: not reached (enc decoded into cmd); encoded as it is.
		b.arena = b.arena[:start]
		c := *cmd
		c.Time = 0
		b.arena = c.AppendBinary(b.arena)
	}
	f.enc = b.arena[start:len(b.arena):len(b.arena)]
	b.queue = append(b.queue, f)
	b.bytes += len(f.enc)
	b.queued.Store(int64(len(b.queue)))
	b.l = l
	switch {
	case len(b.queue) >= fsm.MaxBatchRenew || b.bytes >= maxRenewBatchBytes:
		n.proposeRenewalsLocked()
	case b.inflight >= maxRenewInflight:
		// The first answer proposes the queue.
	case b.held == 0 || b.groups > 0 && len(b.queue) >= maxGroupHeld:
		n.proposeRenewalsLocked()
	case b.groups > 0 && !b.hold.armed:
		b.hold.arm(n.renewHoldExpired)
	}
	return f
}

// holdRenewals is called before proposing commands that arrived together
// (a forwarded batch): their renewals share an entry rather than the
// first going alone and the rest after its commit. The returned function
// ends the group, proposing what it queued unless maxRenewInflight
// renewal entries are in flight (the first answer then does).
func (n *Node) holdRenewals() func() {
	b := &n.renew
	if !b.on() {
		return func() {}
	}
	b.mu.Lock()
	b.held++
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		b.held--
		if b.inflight < maxRenewInflight && len(b.queue) > 0 {
			n.proposeRenewalsLocked()
		}
		b.mu.Unlock()
	}
}

// flushRenewals proposes the queued renewals now, whatever is in flight:
// a proposal that follows them must follow them in the log.
func (n *Node) flushRenewals() {
	b := &n.renew
	if b.queued.Load() == 0 {
		return
	}
	b.mu.Lock()
	if len(b.queue) > 0 {
		n.proposeRenewalsLocked()
	}
	b.mu.Unlock()
}

// maxKeptRenewArena is the largest arena the batcher keeps between entries.
const maxKeptRenewArena = 64 << 10

// proposeRenewalsLocked hands the queue to raft as one entry (the
// renewal's own when it is alone) and starts the goroutine that answers
// it. b.mu is held, so entries leave in queue order.
func (n *Node) proposeRenewalsLocked() {
	b := &n.renew
	q, l, g := b.queue, b.l, b.group
	b.queue, b.bytes, b.group = nil, 0, nil
	b.hold.disarm()
	defer func() {
		// Raft has the entry's own copy: the arena is free again.
		for _, f := range q {
			f.enc = nil
		}
		if cap(b.arena) > maxKeptRenewArena {
			// A burst's arena (up to maxRenewBatchBytes) is not kept for
			// the node's lifetime.
			b.arena = nil
		} else {
			b.arena = b.arena[:0]
		}
		b.queued.Store(0) // after raft has the entry: see flushRenewals
	}()
	select {
	case <-l.done:
		// The term ended while they waited: not proposed, so the callers
		// may try again with the next leader.
		for _, f := range q {
			f.err = fmt.Errorf("cluster: renewal queued in an ended term: %w", raft.ErrNotLeader)
		}
		n.answeredEarly(g)
		return
	default:
	}
	var rf raft.ApplyFuture
	if len(q) == 1 {
		// Alone: its own entry, as before the batching. Decoding the
		// encoding back is cheaper than keeping a copy of every command.
		c, err := fsm.DecodeCommand(q[0].enc)
		if err != nil {
			// Not reached: enc is this node's own encoding.
			q[0].err = fmt.Errorf("cluster: queued renewal: %w", err)
			n.answeredEarly(g)
			return
		}
		rf = n.proposeOne(l, c)
	} else {
		c := fsm.Command{Op: fsm.OpBatchRenew, Args: make([][]byte, len(q))}
		for i, f := range q {
			c.Args[i] = f.enc
		}
		b.awaited.Add(1) // before raft has it: answerRenewals reads its results
		rf = n.proposeOne(l, &c)
		n.metrics.renewalsBatched.Add(float64(len(q)))
	}
	b.inflight++
	// Ends when raft answers rf (see proposeAsync: a proposal still
	// queued at shutdown is never answered, and this goroutine then stays
	// blocked as the callers' awaits, which end on n.closed).
	go n.answerRenewals(rf, q, g)
}

// answeredEarly answers g, whose renewals were not proposed, with the
// errors set on them; b.mu is held, which the hooks neither take nor
// wait for (onAnswered).
func (n *Node) answeredEarly(g *renewGroup) {
	close(g.done)
	for _, fn := range g.answeredLocked() {
		fn()
	}
}

// answerRenewals waits for the entry of q, answers each renewal, and
// proposes what queued meanwhile.
func (n *Node) answerRenewals(rf raft.ApplyFuture, q []*renewFuture, g *renewGroup) {
	err := rf.Error()
	var res fsm.Result
	if err == nil {
		res, err = proposalResult(rf)
	}
	for i, f := range q {
		switch {
		case err != nil:
			f.err = err
		case len(q) == 1:
			f.index, f.res = rf.Index(), &res
		case res.Err != nil:
			// The entry was refused whole (a bug: the proposer sends only
			// renewals): each renewal is refused with it.
			f.index, f.res = rf.Index(), &fsm.Result{Err: res.Err, Index: res.Index, Now: res.Now}
		case len(res.Batch) != len(q):
			f.err = fmt.Errorf("cluster: batched renewals answered %d results for %d", len(res.Batch), len(q))
		default:
			f.index, f.res = rf.Index(), &res.Batch[i]
		}
	}
	b := &n.renew
	if len(q) > 1 {
		b.awaited.Add(-1)
	}
	close(g.done)
	b.mu.Lock()
	b.inflight--
	if b.inflight < maxRenewInflight && len(b.queue) > 0 {
		n.proposeRenewalsLocked()
	}
	then := g.answeredLocked()
	b.mu.Unlock()
	for _, fn := range then {
		fn()
	}
}

// answeredLocked marks g answered (its done closed) and returns the hooks
// to run; the batcher's mu is held.
func (g *renewGroup) answeredLocked() []func() {
	then := g.then
	g.then, g.answered = nil, true
	return then
}

// onAnswered runs fn once f is answered: from the goroutine that answers
// f's entry, or at once if it was answered already. fn must not block
// nor take the batcher's lock.
// A leader's own pipelined renewal (proposeAsync) completes this way
// rather than with a goroutine of its own per renewal.
func (n *Node) onAnswered(f *renewFuture, fn func()) {
	b := &n.renew
	b.mu.Lock()
	if g := f.g; !g.answered {
		g.then = append(g.then, fn)
		b.mu.Unlock()
		return
	}
	b.mu.Unlock()
	fn()
}
