package cluster

import "time"

// Groups of asynchronous proposals. A front end that reads a pipeline
// proposes its commands one by one with ApplyAsync as it parses them;
// without a hint, the first renewal of a pipeline on the leader goes to
// raft alone (no renewal entry in flight) and the rest a commit round
// later, and a follower forwards the first command alone and the rest in
// the next call, once the first call is answered: each pipeline pays two
// rounds and the cluster an entry or a call more than it needs, and
// holding many locks renews them in pipelines (see bench/results/README.md,
// "Holding 100k locks: a pipeline's renewals as one entry").
//
// BeginAsyncGroup and EndAsyncGroup bracket commands the caller has
// already received and proposes from one goroutine without waiting in
// between: meanwhile renewals queue on the leader for one entry (as a
// forwarded call's do, holdRenewals) and a follower starts no forwarding
// call, so the group leaves as one entry or one call when it ends.
//
// The caller must end its group before it waits for anything (a reply, a
// read from its client): a group holds back every other proposal of the
// node too, and its own queued commands hold slots of the async window.
// So a group is meant to be no longer than the caller's parsing of input
// it has already buffered; and since a caller may still wait inside it
// (for a slot of the window, in a synchronous fallback) or be descheduled,
// what a group holds leaves anyway once maxGroupHeld are queued (the held
// commands never fill the window, whose wait would otherwise never end)
// or once it has been held for maxGroupHold (another connection's write
// waits behind a stalled group no longer than that).

// maxGroupHeld is how many queued renewals (leader) or commands
// (follower) a group holds back before they leave anyway: half the async
// window, so a caller waiting in ApplyAsync for a slot always waits for
// proposals on their way.
const maxGroupHeld = maxAsyncInFlight / 2

// maxGroupHold bounds how long open groups hold back what is queued: far
// longer than parsing a buffered pipeline takes, far shorter than a
// commit round, so a stalled group costs others little.
const maxGroupHold = time.Millisecond

// BeginAsyncGroup starts a group of asynchronous proposals (see above).
// Every call must be followed by one EndAsyncGroup from the same caller.
func (n *forwarder) BeginAsyncGroup() {
	b := &n.renew
	b.mu.Lock()
	b.held++
	b.groups++
	b.mu.Unlock()
	q := &n.fwd
	q.mu.Lock()
	q.held++
	q.mu.Unlock()
}

// EndAsyncGroup ends the group: what it queued leaves now, unless
// maxRenewInflight renewal entries are in flight (the first answer then
// proposes it) or, on a follower, a call is in flight (its sender takes
// it next) or another group is open.
func (n *forwarder) EndAsyncGroup() {
	b := &n.renew
	b.mu.Lock()
	b.held--
	b.groups--
	if b.inflight < maxRenewInflight && len(b.queue) > 0 {
		n.proposeRenewalsLocked()
	}
	b.mu.Unlock()
	q := &n.fwd
	q.mu.Lock()
	q.held--
	start := !q.sending && len(q.items) > 0 && !q.holding()
	if start {
		q.sending = true
	}
	q.mu.Unlock()
	if start {
		// Ends as enqueueForward's sender does.
		go n.sendForwarded()
	}
}

// unholdRenewals proposes the queued renewals now if a group holds them
// and fewer than maxRenewInflight renewal entries are in flight: a
// caller about to wait for its renewal's answer (Apply) may be the one
// whose group is open.
func (n *Node) unholdRenewals() {
	b := &n.renew
	if b.queued.Load() == 0 {
		return
	}
	b.mu.Lock()
	if b.groups > 0 && b.inflight < maxRenewInflight && len(b.queue) > 0 {
		n.proposeRenewalsLocked()
	}
	b.mu.Unlock()
}

// groupHold bounds how long open groups hold a queue: armed, its timer
// runs expired within maxGroupHold. The queue's mutex guards it.
type groupHold struct {
	timer *time.Timer
	armed bool
}

// arm makes sure expired runs within maxGroupHold, unless it is armed
// already. Each time the timer fires, expired runs on a goroutine of its
// own, which ends once it has handed the held work on (proposed the
// renewals, started the sender) or found none.
func (h *groupHold) arm(expired func()) {
	if h.armed {
		return
	}
	h.armed = true
	if h.timer == nil {
		h.timer = time.AfterFunc(maxGroupHold, expired)
		return
	}
	h.timer.Reset(maxGroupHold)
}

// disarm stops the timer: the held work left anyway. A timer that fired
// already finds the queue empty or fresh.
func (h *groupHold) disarm() {
	if h.armed && h.timer.Stop() {
		h.armed = false
	}
}

// renewHoldExpired proposes the renewals held by a group for
// maxGroupHold, unless maxRenewInflight renewal entries are in flight
// (the first answer then proposes them) or no group is open any more (a
// forwarded batch's hold, which ends without waiting, keeps its entry
// whole).
func (n *Node) renewHoldExpired() {
	b := &n.renew
	b.mu.Lock()
	b.hold.armed = false
	if b.groups > 0 && b.inflight < maxRenewInflight && len(b.queue) > 0 {
		n.proposeRenewalsLocked()
	}
	b.mu.Unlock()
}

// armForwardHoldLocked makes sure the commands an async group holds in
// the forwarding queue leave within maxGroupHold (q.mu held).
func (n *forwarder) armForwardHoldLocked() {
	n.fwd.hold.arm(n.forwardHoldExpired)
}

// forwardHoldExpired starts the sender on commands held by a group for
// maxGroupHold; the next batch it takes ignores the groups (expired).
func (n *forwarder) forwardHoldExpired() {
	q := &n.fwd
	q.mu.Lock()
	q.hold.armed = false
	start := !q.sending && len(q.items) > 0
	if start {
		q.expired = true
		q.sending = true
	}
	q.mu.Unlock()
	if start {
		// Ends as enqueueForward's sender does.
		go n.sendForwarded()
	}
}
