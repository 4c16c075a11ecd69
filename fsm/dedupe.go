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

type reqEntry struct {
	id      string
	op      Op
	owner   string // a retry must come from the same owner
	expires int64

	err      error
	granted  bool
	queued   bool
	released bool
	fence    uint64
	deadline int64
	count    int
}

func rememberedOp(op Op) bool {
	switch op {
	case OpAcquire, OpRelease, OpExtend, OpSessionOpen, OpSessionKeepAlive, OpSessionClose, OpFenceCheck:
		return true
	}
	return false
}

func (e *reqEntry) result() Result {
	return Result{Err: e.err, Granted: e.granted, Queued: e.queued, Released: e.released,
		Fence: e.fence, Deadline: e.deadline, Count: e.count}
}

// dedupe answers a command whose ReqID was already applied.
func (t *Table) dedupe(ctx *applyCtx, cmd *Command) (Result, bool) {
	if cmd.ReqID == "" || !rememberedOp(cmd.Op) {
		return Result{}, false
	}
	if len(cmd.ReqID) > t.cfg.MaxOwnerBytes {
		return Result{Index: ctx.index, Err: errf(ErrLimit, "request id longer than %d bytes", t.cfg.MaxOwnerBytes)}, true
	}
	e := t.ext.reqs[cmd.ReqID]
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
func (t *Table) remember(ctx *applyCtx, cmd *Command, r Result) {
	if cmd.ReqID == "" || !rememberedOp(cmd.Op) || len(cmd.ReqID) > t.cfg.MaxOwnerBytes || r.Err != nil {
		return
	}
	if t.ext.reqs[cmd.ReqID] != nil {
		return
	}
	e := &reqEntry{id: cmd.ReqID, op: cmd.Op, owner: cmd.Owner, expires: ctx.now + t.cfg.ReqIDWindow,
		err: r.Err, granted: r.Granted, queued: r.Queued, released: r.Released,
		fence: r.Fence, deadline: r.Deadline, count: r.Count}
	t.addReq(e)
}

// addReq appends e (whose expiry is >= every remembered one) and forgets
// the oldest entries over MaxReqIDs.
func (t *Table) addReq(e *reqEntry) {
	x := &t.ext
	x.reqs[e.id] = e
	x.reqFIFO = append(x.reqFIFO, e)
	for len(x.reqs) > t.cfg.MaxReqIDs {
		t.popReq()
	}
	if x.reqDue == 0 {
		x.reqDue = x.reqFIFO[0].expires
		t.schedule(x.reqDue, dueReqID, "")
	}
}

func (t *Table) popReq() {
	x := &t.ext
	e := x.reqFIFO[0]
	x.reqFIFO[0] = nil
	x.reqFIFO = x.reqFIFO[1:]
	if x.reqs[e.id] == e {
		delete(x.reqs, e.id)
	}
}

// expireReqIDs forgets the entries that expired by ctx.at.
func (t *Table) expireReqIDs(ctx *applyCtx) {
	x := &t.ext
	x.reqDue = 0
	for len(x.reqFIFO) > 0 && x.reqFIFO[0].expires <= ctx.at {
		t.popReq()
	}
	if len(x.reqFIFO) > 0 {
		x.reqDue = x.reqFIFO[0].expires
		t.schedule(x.reqDue, dueReqID, "")
	}
}

// reqWaiterGranted updates the acquire entry of waiter id with its grant.
func (t *Table) reqWaiterGranted(id string, r Result) {
	if e := t.ext.reqs[id]; e != nil && e.op == OpAcquire {
		e.queued, e.granted = false, true
		e.fence, e.deadline, e.count = r.Fence, r.Deadline, r.Count
	}
}

// reqWaiterEnded updates the acquire entry of waiter id that left the
// queue without the lock; a timed-out one is forgotten (see above).
func (t *Table) reqWaiterEnded(id string, err error) {
	e := t.ext.reqs[id]
	if e == nil || e.op != OpAcquire {
		return
	}
	if err == ErrWaitTimeout {
		delete(t.ext.reqs, id)
		return
	}
	e.queued, e.err, e.deadline = false, err, 0
}
