package lockservice

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/locknode/locknode/fsm"
)

// Hub hands applied entries' events to the requests waiting on this
// replica: the waiter registry (a blocking acquire's channel, by waiter
// id) and the subscribers (Subscribe). A cluster.Node and a Local each
// hold one; their apply paths call Dispatch once per entry with events.
type Hub struct {
	waitMu  sync.Mutex
	waiters map[string]chan WaiterEvent
	// nwaiters is len(waiters), read without the lock (WantsApplies).
	nwaiters atomic.Int32

	subMu  sync.Mutex
	subs   map[uint64]func(uint64, []fsm.Event)
	subSeq uint64
	// subList is subs' functions, rebuilt under subMu at every change
	// and never modified after: Dispatch, once per applied entry, reads
	// it without the lock or a copy of its own.
	subList atomic.Pointer[[]func(uint64, []fsm.Event)]

	// demand counts the other requests waiting for this replica's
	// applies (CommitDemand).
	demand atomic.Int32

	// watches holds the keys' change indexes and their watchers
	// (keywatch.go).
	watches *KeyWatches
}

// NewHub returns an empty Hub.
func NewHub() *Hub {
	return &Hub{
		waiters: make(map[string]chan WaiterEvent),
		subs:    make(map[uint64]func(uint64, []fsm.Event)),
		watches: newKeyWatches(),
	}
}

// WaiterEvent is a local waiter's outcome (EvGranted or EvWaitEnded) and
// the index of the entry that produced it.
type WaiterEvent struct {
	index uint64
	ev    fsm.Event
}

// Dispatch completes local waiters and calls subscribers for one entry's
// events. It never blocks: waiter channels have room for their one
// outcome.
func (h *Hub) Dispatch(index uint64, events []fsm.Event) {
	h.watches.applied(index, events)
	if h.nwaiters.Load() > 0 {
		// A waiter registers before its acquire is proposed, so one that
		// this entry's events can complete is counted by now.
		h.dispatchWaiters(index, events)
	}
	if subs := h.subList.Load(); subs != nil {
		for _, fn := range *subs {
			fn(index, events)
		}
	}
}

// dispatchWaiters completes the local waiters of one entry's events.
func (h *Hub) dispatchWaiters(index uint64, events []fsm.Event) {
	h.waitMu.Lock()
	for _, e := range events {
		if e.Kind != fsm.EvGranted && e.Kind != fsm.EvWaitEnded {
			continue
		}
		if ch, ok := h.waiters[e.WaiterID]; ok {
			we := WaiterEvent{index: index, ev: e}
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
}

// Subscribe is the replica's Subscribe (cluster.Node's and Local's).
func (h *Hub) Subscribe(fn func(index uint64, events []fsm.Event)) (cancel func()) {
	h.subMu.Lock()
	h.subSeq++
	id := h.subSeq
	h.subs[id] = fn
	h.publishSubsLocked()
	h.subMu.Unlock()
	return func() {
		h.subMu.Lock()
		delete(h.subs, id)
		h.publishSubsLocked()
		h.subMu.Unlock()
	}
}

// publishSubsLocked rebuilds subList from subs, in subscription order.
// Call with subMu held.
func (h *Hub) publishSubsLocked() {
	ids := make([]uint64, 0, len(h.subs))
	for id := range h.subs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	list := make([]func(uint64, []fsm.Event), len(ids))
	for i, id := range ids {
		list[i] = h.subs[id]
	}
	h.subList.Store(&list)
}

// AwaitWaiter returns the channel that receives waiter id's outcome
// (EvGranted or EvWaitEnded) until StopWaiter(id). Register before
// proposing the acquire, so an outcome applied before the proposer
// starts waiting is not lost.
func (h *Hub) AwaitWaiter(id string) <-chan WaiterEvent {
	ch := make(chan WaiterEvent, 1)
	h.waitMu.Lock()
	h.waiters[id] = ch
	h.nwaiters.Store(int32(len(h.waiters)))
	h.waitMu.Unlock()
	return ch
}

// StopWaiter ends what AwaitWaiter(id) started.
func (h *Hub) StopWaiter(id string) {
	h.waitMu.Lock()
	delete(h.waiters, id)
	h.nwaiters.Store(int32(len(h.waiters)))
	h.waitMu.Unlock()
}

// CommitDemand marks a request that waits for entries other nodes commit
// to be applied here, and returns its end (call it once). While a local
// waiter or such a request waits, a follower asks the leader to push each
// commit at once (Node.wantsCommits).
func (h *Hub) CommitDemand() (done func()) {
	h.demand.Add(1)
	return func() { h.demand.Add(-1) }
}

// WantsApplies reports whether a local waiter, a CommitDemand request or
// a key watcher waits for this replica's applies.
func (h *Hub) WantsApplies() bool {
	return h.nwaiters.Load() > 0 || h.demand.Load() > 0 || h.watches.watchers() > 0
}

// WantsChanges reports whether the key watches need the change events
// (fsm.EvChanged, fsm.EvValueChanged) of every entry applied from now on
// (KeyWatches.wantsChanges). A replica that applied an entry without them
// reports it with ChangesSkipped.
func (h *Hub) WantsChanges() bool { return h.watches.wantsChanges() }

// ChangesSkipped tells the key watches that the entry at index was applied
// without its renewals' change events, in log order with Dispatch: call it
// before the replica publishes index as applied.
func (h *Hub) ChangesSkipped(index uint64) { h.watches.changesSkipped(index) }

// KeyWatches is the replica's change-index registry (Replica).
func (h *Hub) KeyWatches() *KeyWatches { return h.watches }

// WaiterIDs are the waiters this replica's requests are blocked on.
func (h *Hub) WaiterIDs() []string {
	h.waitMu.Lock()
	defer h.waitMu.Unlock()
	ids := make([]string, 0, len(h.waiters))
	for id := range h.waiters {
		ids = append(ids, id)
	}
	return ids
}
