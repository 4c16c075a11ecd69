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

// armHoldLocked makes sure the renewals an async group holds are
// proposed within maxGroupHold: expired (Node.renewHoldExpired) runs
// then unless the queue is proposed first (b.mu held, not armed yet).
func (b *renewBatcher) armHoldLocked(expired func()) {
	b.holdArmed = true
	if b.holdTimer == nil {
		// Each time it fires, its function runs on a goroutine of its
		// own, which ends once the queue is proposed or found empty.
		b.holdTimer = time.AfterFunc(maxGroupHold, expired)
		return
	}
	b.holdTimer.Reset(maxGroupHold)
}

// renewHoldExpired proposes the renewals held by a group for
// maxGroupHold, unless maxRenewInflight renewal entries are in flight
// (the first answer then proposes them) or no group is open any more (a
// forwarded batch's hold, which ends without waiting, keeps its entry
// whole).
func (n *Node) renewHoldExpired() {
	b := &n.renew
	b.mu.Lock()
	b.holdArmed = false
	if b.groups > 0 && b.inflight < maxRenewInflight && len(b.queue) > 0 {
		n.proposeRenewalsLocked()
	}
	b.mu.Unlock()
}

// disarmHoldLocked stops the hold's timer: the queue is proposed (b.mu
// held). A timer that fired already finds it empty or fresh.
func (b *renewBatcher) disarmHoldLocked() {
	if b.holdArmed && b.holdTimer.Stop() {
		b.holdArmed = false
	}
}

// armForwardHoldLocked makes sure the commands an async group holds in
// the forwarding queue leave within maxGroupHold (q.mu held).
func (n *forwarder) armForwardHoldLocked() {
	q := &n.fwd
	if q.holdArmed {
		return
	}
	q.holdArmed = true
	if q.holdTimer == nil {
		// Each time it fires, its function runs on a goroutine of its
		// own, which ends once it has started the sender (or found it
		// running or nothing queued).
		q.holdTimer = time.AfterFunc(maxGroupHold, n.forwardHoldExpired)
		return
	}
	q.holdTimer.Reset(maxGroupHold)
}

// forwardHoldExpired starts the sender on commands held by a group for
// maxGroupHold; the next batch it takes ignores the groups (expired).
func (n *forwarder) forwardHoldExpired() {
	q := &n.fwd
	q.mu.Lock()
	q.holdArmed = false
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
