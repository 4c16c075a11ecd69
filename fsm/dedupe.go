package fsm

// Exactly-once. A command of a remembered op that carries a ReqID is
// applied once; a later command with the same ReqID (a client retry, or a
// leader re-proposing after a failover) gets the first result, without
// events, and changes nothing. A repeat must name the same op and owner,
// else it is refused (ErrBadCommand). Refusals are not remembered: they
// changed nothing, so a retry is simply evaluated again.
//
// Remembered ops: Acquire, Release, Extend, SessionOpen,
// SessionKeepAlive, SessionClose, FenceCheck. Not remembered: Tick (no
// effect), CancelWait (its ReqID names the waiter, and it is answered from
// state, so a retry is harmless), Redis, Eval, Exec and ScriptLoad (RESP
// clients have no request ids; their replies can be large).
//
// An acquire's entry follows its waiter: a retry is answered Queued while
// the waiter waits, with the grant once it was granted, and ErrCancelled
// after a cancel. A waiter that timed out forgets its entry, so the client
// may re-issue the same request id for a new wait (api.MaxWait).
//
// Entries are forgotten ReqIDWindow ms of FSM time after they were
// applied, or earlier when more than MaxReqIDs are remembered (oldest
// first). Both are functions of the log alone, so every node forgets the
// same ids at the same index.

// reqEntry is what a retry needs: the op and owner it must match, when
// the entry is forgotten, and the first result. A remembered result never
// carries an error of its own (refusals are not remembered); only a
// waiter's end gives an acquire entry one, always a sentinel.
type reqEntry struct {
	id       string
	owner    string // a retry must come from the same owner
	expires  int64
	fence    uint64
	deadline int64
	count    int32 // a hold's count fits (maxHoldCount)
	op       Op
	flags    uint8 // reqGranted | reqQueued | reqReleased | reqDead
	err      uint8 // 1 + index in errCodes; 0 = none
}

const (
	reqGranted uint8 = 1 << iota
	reqQueued
	reqReleased
	// reqDead marks a queue slot whose id was forgotten early (a timed
	// out waiter): no longer indexed, reclaimed at the head. Never in a
	// snapshot.
	reqDead
)

// reqTable holds the remembered entries by value, oldest first, in a
// queue (fifo[head:]), and indexes them by id: an entry costs its slot,
// its map slot and its id, no allocation of its own. An entry's number
// (seq) is its position counted from the first entry ever remembered;
// first is the number of fifo[0].
type reqTable struct {
	ids   map[string]uint64 // id -> seq of its live entry
	fifo  []reqEntry
	head  int
	first uint64
	due   int64 // time of the pending dueReqID item; 0 = none
	bytes int64 // accounted size of the live entries (memory.go)
}

func (x *reqTable) init(n int) {
	x.ids = make(map[string]uint64, n)
	x.fifo = make([]reqEntry, 0, n)
}

func (x *reqTable) len() int { return len(x.ids) }

// get returns id's live entry, or nil. The pointer is valid until the
// next add.
func (x *reqTable) get(id string) *reqEntry {
	seq, ok := x.ids[id]
	if !ok {
		return nil
	}
	return &x.fifo[seq-x.first]
}

// forget drops id's entry from the index; its slot is reclaimed when it
// reaches the head of the queue.
func (x *reqTable) forget(id string) {
	if e := x.get(id); e != nil {
		e.flags |= reqDead
		delete(x.ids, id)
		x.bytes -= reqBytes(e)
	}
}

// add appends e; its expiry is >= every remembered one.
func (x *reqTable) add(e reqEntry) {
	if len(x.fifo) == cap(x.fifo) && x.head > 0 && x.head >= len(x.fifo)/8 {
		// Reuse the popped slots instead of growing: at the MaxReqIDs
		// bound every add pops one, so the queue stays within about
		// 1.25x of the bound (append's growth) while each entry is
		// copied at most about 7 times over its life.
		n := copy(x.fifo, x.fifo[x.head:])
		clear(x.fifo[n:])
		x.fifo = x.fifo[:n]
		x.first += uint64(x.head)
		x.head = 0
	}
	x.ids[e.id] = x.first + uint64(len(x.fifo))
	x.fifo = append(x.fifo, e)
	x.bytes += reqBytes(&e)
}

// oldest returns the entry at the head of the queue (live or not).
func (x *reqTable) oldest() *reqEntry {
	if x.head == len(x.fifo) {
		return nil
	}
	return &x.fifo[x.head]
}

// pop removes the head of the queue, and its id unless it was forgotten
// (the id may be remembered again since).
func (x *reqTable) pop() {
	e := &x.fifo[x.head]
	if e.flags&reqDead == 0 {
		delete(x.ids, e.id)
		x.bytes -= reqBytes(e)
	}
	*e = reqEntry{}
	x.head++
	if x.head == len(x.fifo) {
		x.first += uint64(len(x.fifo))
		x.fifo, x.head = x.fifo[:0], 0
	}
}

// live calls f for each live entry, oldest first.
func (x *reqTable) live(f func(e *reqEntry)) {
	for i := x.head; i < len(x.fifo); i++ {
		if e := &x.fifo[i]; e.flags&reqDead == 0 {
			f(e)
		}
	}
}

func rememberedOp(op Op) bool {
	switch op {
	case OpAcquire, OpRelease, OpExtend, OpSessionOpen, OpSessionKeepAlive, OpSessionClose, OpFenceCheck, OpReown:
		return true
	}
	return false
}

func (e *reqEntry) result() Result {
	r := Result{Granted: e.flags&reqGranted != 0, Queued: e.flags&reqQueued != 0,
		Released: e.flags&reqReleased != 0, Fence: e.fence, Deadline: e.deadline, Count: int(e.count)}
	if e.err != 0 {
		r.Err = errCodes[e.err-1]
	}
	return r
}

// errCode returns err's code for a reqEntry (ErrorCode). Waiters end
// with sentinels only (ErrCancelled, ErrSessionUnknown), so the first
// result is kept exactly; anything else is remembered as ErrCancelled.
func errCode(err error) uint8 {
	if c := ErrorCode(err); c != CodeUnknown {
		return c
	}
	return ErrorCode(ErrCancelled)
}

// dedupe answers a command whose ReqID was already applied.
func (t *keySpace) dedupe(ctx *applyCtx, cmd *Command) (Result, bool) {
	if cmd.ReqID == "" || !rememberedOp(cmd.Op) {
		return Result{}, false
	}
	if len(cmd.ReqID) > t.cfg.MaxOwnerBytes {
		return Result{Index: ctx.index, Err: errf(ErrLimit, "request id longer than %d bytes", t.cfg.MaxOwnerBytes)}, true
	}
	e := t.reqs.get(cmd.ReqID)
	if e == nil {
		return Result{}, false
	}
	if e.op != cmd.Op || e.owner != cmd.Owner {
		return Result{Index: ctx.index, Err: errf(ErrBadCommand, "request id %q was used by another command", cmd.ReqID)}, true
	}
	r := e.result()
	r.Index = ctx.index
	return r, true
}

// remember records the result of a command with a ReqID.
func (t *keySpace) remember(ctx *applyCtx, cmd *Command, r Result) {
	if cmd.ReqID == "" || !rememberedOp(cmd.Op) || len(cmd.ReqID) > t.cfg.MaxOwnerBytes || r.Err != nil {
		return
	}
	if t.reqs.get(cmd.ReqID) != nil {
		return
	}
	var flags uint8
	if r.Granted {
		flags |= reqGranted
	}
	if r.Queued {
		flags |= reqQueued
	}
	if r.Released {
		flags |= reqReleased
	}
	t.addReq(reqEntry{id: cmd.ReqID, op: cmd.Op, owner: cmd.Owner, expires: ctx.now + t.cfg.ReqIDWindow,
		flags: flags, fence: r.Fence, deadline: r.Deadline, count: int32(r.Count)})
}

// addReq appends e (whose expiry is >= every remembered one) and forgets
// the oldest entries over MaxReqIDs.
func (t *keySpace) addReq(e reqEntry) {
	x := &t.reqs
	x.add(e)
	for x.len() > t.cfg.MaxReqIDs {
		x.pop()
	}
	if x.due == 0 {
		x.due = x.oldest().expires
		t.schedule(x.due, dueReqID, "")
	}
}

// expireReqIDs forgets the entries that expired by ctx.at. From
// VersionBoundedExpiry on, only the item matching x.due acts: a command
// may have run it early (settleReqID), and the item left in the heap
// must not start a second chain of items.
func (t *keySpace) expireReqIDs(ctx *applyCtx) {
	x := &t.reqs
	if t.gate(VersionBoundedExpiry) && x.due != ctx.at {
		return
	}
	x.due = 0
	for e := x.oldest(); e != nil && e.expires <= ctx.at; e = x.oldest() {
		x.pop()
	}
	if e := x.oldest(); e != nil {
		x.due = e.expires
		t.schedule(x.due, dueReqID, "")
	}
}

// reqWaiterGranted updates the acquire entry of waiter id with its grant.
func (t *keySpace) reqWaiterGranted(id string, r Result) {
	if e := t.reqs.get(id); e != nil && e.op == OpAcquire {
		e.flags = e.flags&^reqQueued | reqGranted
		e.fence, e.deadline, e.count = r.Fence, r.Deadline, int32(r.Count)
	}
}

// reqWaiterEnded updates the acquire entry of waiter id that left the
// queue without the lock; a timed-out one is forgotten (see above).
func (t *keySpace) reqWaiterEnded(id string, err error) {
	e := t.reqs.get(id)
	if e == nil || e.op != OpAcquire {
		return
	}
	if err == ErrWaitTimeout {
		t.reqs.forget(id)
		return
	}
	e.flags &^= reqQueued
	e.err, e.deadline = errCode(err), 0
}
