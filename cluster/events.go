package cluster

import (
	"sync"
	"sync/atomic"

	"github.com/locknode/locknode/fsm"
)

// eventHub hands applied entries' events to the requests waiting on this
// replica: the waiter registry (a blocking acquire's channel, by waiter
// id) and the subscribers (Subscribe). Node and Local embed it; their
// apply paths call dispatch once per entry with events.
type eventHub struct {
	waitMu  sync.Mutex
	waiters map[string]chan waiterEvent
	// nwaiters is len(waiters), read without the lock (wantsApplies).
	nwaiters atomic.Int32

	subMu  sync.Mutex
	subs   map[uint64]func(uint64, []fsm.Event)
	subSeq uint64

	// demand counts the other requests waiting for this replica's
	// applies (commitDemand).
	demand atomic.Int32

	// watches holds the keys' change indexes and their watchers
	// (keywatch.go).
	watches *keyWatches
}

func newEventHub() eventHub {
	return eventHub{
		waiters: make(map[string]chan waiterEvent),
		subs:    make(map[uint64]func(uint64, []fsm.Event)),
		watches: newKeyWatches(),
	}
}

// waiterEvent is a local waiter's outcome (EvGranted or EvWaitEnded) and
// the index of the entry that produced it.
type waiterEvent struct {
	index uint64
	ev    fsm.Event
}

// dispatch completes local waiters and calls subscribers for one entry's
// events. It never blocks: waiter channels have room for their one
// outcome.
func (h *eventHub) dispatch(index uint64, events []fsm.Event) {
	h.watches.applied(index, events)
	h.waitMu.Lock()
	for _, e := range events {
		if e.Kind != fsm.EvGranted && e.Kind != fsm.EvWaitEnded {
			continue
		}
		if ch, ok := h.waiters[e.WaiterID]; ok {
			we := waiterEvent{index: index, ev: e}
			select {
			case ch <- we:
			default:
				// A later outcome replaces an unread earlier one: an id is
				// queued again after its first wait ended when a retried
				// acquire's first answer was lost (Acquire), and only the
				// last wait can be the one its request is blocked on.
				select {
				case <-ch:
				default:
				}
				select {
				case ch <- we:
				default:
				}
			}
		}
	}
	h.waitMu.Unlock()

	h.subMu.Lock()
	subs := make([]func(uint64, []fsm.Event), 0, len(h.subs))
	for _, fn := range h.subs {
		subs = append(subs, fn)
	}
	h.subMu.Unlock()
	for _, fn := range subs {
		fn(index, events)
	}
}

// subscribe is Subscribe (Node's and Local's).
func (h *eventHub) subscribe(fn func(index uint64, events []fsm.Event)) (cancel func()) {
	h.subMu.Lock()
	h.subSeq++
	id := h.subSeq
	h.subs[id] = fn
	h.subMu.Unlock()
	return func() {
		h.subMu.Lock()
		delete(h.subs, id)
		h.subMu.Unlock()
	}
}

// awaitWaiter returns the channel that receives waiter id's outcome
// (EvGranted or EvWaitEnded) until stopWaiter(id). Register before
// proposing the acquire, so an outcome applied before the proposer
// starts waiting is not lost.
func (h *eventHub) awaitWaiter(id string) <-chan waiterEvent {
	ch := make(chan waiterEvent, 1)
	h.waitMu.Lock()
	h.waiters[id] = ch
	h.nwaiters.Store(int32(len(h.waiters)))
	h.waitMu.Unlock()
	return ch
}

// stopWaiter ends what awaitWaiter(id) started.
func (h *eventHub) stopWaiter(id string) {
	h.waitMu.Lock()
	delete(h.waiters, id)
	h.nwaiters.Store(int32(len(h.waiters)))
	h.waitMu.Unlock()
}

// commitDemand marks a request that waits for entries other nodes commit
// to be applied here, and returns its end (call it once). While a local
// waiter or such a request waits, a follower asks the leader to push each
// commit at once (Node.wantsCommits).
func (h *eventHub) commitDemand() (done func()) {
	h.demand.Add(1)
	return func() { h.demand.Add(-1) }
}

// wantsApplies reports whether a local waiter, a commitDemand request or
// a key watcher waits for this replica's applies.
func (h *eventHub) wantsApplies() bool {
	return h.nwaiters.Load() > 0 || h.demand.Load() > 0 || h.watches.watchers() > 0
}

// keyWatches is the replica's change-index registry (replica).
func (h *eventHub) keyWatches() *keyWatches { return h.watches }
