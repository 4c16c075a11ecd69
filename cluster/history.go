package cluster

import (
	"context"
	"strings"
	"sync"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/fsm/reply"
)

// Lock history: each node keeps, in memory, the recent grants of the
// locks it applied and how each ended, for operators asking "who held
// this, and how did it end" (GET /v1/locks/{key}/history, the dashboard).
// It is node-local, not replicated state: it is fed from the same applied
// entries on every node, but starts empty after a restart or a snapshot
// install, so it never enters the FSM or its snapshots.
//
// Bounds: HistoryEntries grants per key (the oldest dropped first) and
// HistoryKeys keys (the key whose last grant is oldest dropped first);
// queued waiters are remembered, for their mode and wait time, up to
// 4×HistoryKeys at once (beyond it a waiter's grant is recorded without
// them).

// Defaults of Config.HistoryKeys and Config.HistoryEntries, and the largest
// HistoryEntries accepted.
const (
	DefaultHistoryKeys    = 4096
	DefaultHistoryEntries = 16
	MaxHistoryEntries     = 1000
)

// history is a node's lock history and activity samples. Its methods are
// safe for concurrent use; the apply path observes a batch of entries
// between begin and flush, under one lock.
type history struct {
	mu       sync.Mutex
	maxKeys  int // 0: no history kept
	maxEnts  int
	keys     map[string]*keyHistory
	head     *keyHistory // most recently granted
	tail     *keyHistory // least recently granted: dropped first
	pending  map[string]pendingWait
	activity *activity
	// batch gathers the activity counts of observed entries until flush:
	// the apply path reads the wall clock once per batch, not per entry.
	batch sample
}

// keyHistory is one key's ring of entries, in a list of keys ordered by
// their last grant.
type keyHistory struct {
	key        string
	ents       []histEntry // ring, oldest at start once full
	start      int
	prev, next *keyHistory
}

// histEntry is one grant in a key's ring. The owner is copied into a
// buffer of the entry's own, overwritten in place when the ring wraps or
// a forgotten key's ring is reused: a grant in the steady state
// allocates nothing, whatever the owner (a Redis client's token is new
// every time). get makes the strings.
type histEntry struct {
	owner              []byte
	mode               string
	fence              uint64
	grantedMs, endedMs int64
	end                string
	meta               map[string]string
}

// setOwner copies owner into e's buffer, reusing it unless it is far
// larger than owner (a once long owner does not pin its memory).
func (e *histEntry) setOwner(owner string) {
	if cap(e.owner) > max(2*len(owner), 64) {
		e.owner = nil
	}
	e.owner = append(e.owner[:0], owner...)
}

func (e *histEntry) entry() api.HistoryEntry {
	return api.HistoryEntry{Owner: string(e.owner), Mode: e.mode, Fence: e.fence, GrantedMs: e.grantedMs, EndedMs: e.endedMs, End: e.end, Meta: e.meta}
}

// pendingWait is a queued waiter: when it queued, in which mode.
type pendingWait struct {
	queuedMs int64
	mode     string
	meta     map[string]string
}

func newHistory(maxKeys, maxEntries int, act *activity) *history {
	if maxEntries < 1 {
		maxKeys = 0
	}
	return &history{
		maxKeys: max(maxKeys, 0), maxEnts: maxEntries,
		keys: make(map[string]*keyHistory), pending: make(map[string]pendingWait),
		activity: act,
	}
}

// begin locks the history for observing a batch of applied entries;
// flush ends it. One lock per batch, not per entry: the apply path runs
// this on every node for every entry.
func (h *history) begin() {
	h.mu.Lock()
}

// observe records what one applied command did; its activity counts
// reach the samples at flush. The caller is between begin and flush. t is
// the table after the command (the caller holds the node's lock), for
// Redis lock acquires whose holder only the table knows.
func (h *history) observe(t *fsm.Table, cmd *fsm.Command, r *fsm.Result) {
	c := &h.batch
	switch {
	case cmd.Op == fsm.OpAcquire && r.Err == nil && r.Queued:
		c.contended++
		if len(h.pending) < 4*h.maxKeys {
			h.pending[strings.Clone(cmd.ReqID)] = pendingWait{queuedMs: r.Now, mode: cmd.Mode.String(), meta: metaCopy(cmd.Meta)}
		}
	case cmd.Op == fsm.OpAcquire && r.Err == nil && r.Granted && r.Count <= 1:
		keys := cmd.Keys
		if len(keys) == 0 {
			keys = []string{cmd.Key}
		}
		for _, k := range keys {
			if h.grant(k, cmd.Owner, cmd.Mode.String(), r.Fence, r.Now, metaCopy(cmd.Meta)) {
				c.grants++
			}
		}
	case cmd.Op == fsm.OpReown && r.Err == nil && len(cmd.Args) == 1:
		h.reown(cmd.Key, cmd.Owner, cmd.Args[0])
	case cmd.Op == fsm.OpRedis && r.Reply.Kind == reply.Status && isSetNX(cmd.Args):
		// A Redis client's lock: its value is the owner token. HoldOf
		// reads the one hold without building a LockInfo (this runs on
		// every SET NX applied).
		key, owner := string(cmd.Args[1]), string(cmd.Args[2])
		if ho, ok := t.HoldOf(key, owner, r.Now); ok {
			if h.grant(key, ho.Owner, ho.Mode.String(), ho.Fence, r.Now, nil) {
				c.grants++
			}
		}
	}
	for i := range r.Events {
		e := &r.Events[i]
		switch e.Kind {
		case fsm.EvGranted:
			pw, ok := h.pending[e.WaiterID]
			delete(h.pending, e.WaiterID)
			if ok {
				c.wait(e.Now - pw.queuedMs)
			}
			for _, k := range e.Keys {
				if h.grant(k, e.Owner, pw.mode, e.Fence, e.Now, pw.meta) {
					c.grants++
				}
			}
		case fsm.EvWaitEnded:
			delete(h.pending, e.WaiterID)
		case fsm.EvReleased:
			end := endOf(e.Reason)
			switch end {
			case api.EndRelease:
				c.releases++
			case api.EndForced:
				c.forced++
			default:
				c.expiries++
			}
			h.end(e.Key, e.Owner, e.Fence, end, r.Now)
		}
	}
}

// flush ends the batch begun by begin: it unlocks the history and adds
// the batch's activity counts to the current second's sample.
func (h *history) flush() {
	c := h.batch
	h.batch = sample{}
	h.mu.Unlock()
	h.activity.add(&c)
}

// endOf names a hold's end.
func endOf(r fsm.Reason) string {
	switch r {
	case fsm.ReasonRelease:
		return api.EndRelease
	case fsm.ReasonExpired:
		return api.EndExpiry
	case fsm.ReasonSession, fsm.ReasonSessionClosed:
		return api.EndSession
	default:
		return api.EndForced
	}
}

// grant records a new hold of key, unless the newest entries already
// show it held (a repeated request answered from the exactly-once
// cache). It reports whether it recorded one. Called with h.mu held.
func (h *history) grant(key, owner, mode string, fence uint64, now int64, meta map[string]string) bool {
	if h.maxKeys == 0 {
		// Nothing kept, so nothing to find a repeat in: counted only.
		return true
	}
	kh := h.keys[key]
	if kh != nil {
		for i := range kh.ents {
			if e := &kh.ents[i]; e.end == api.EndHeld && e.fence == fence && string(e.owner) == owner {
				return false
			}
		}
	}
	if kh == nil {
		if len(h.keys) >= h.maxKeys {
			// The forgotten key's ring is reused: eviction, the steady
			// state with many keys, allocates nothing for it.
			// Entries past the new length keep old strings alive only
			// until overwritten: the ring's memory stays bounded.
			kh = h.tail
			h.drop(kh)
			kh.ents, kh.start = kh.ents[:0], 0
		} else {
			kh = &keyHistory{}
		}
		// Keys and owners may alias the log entry's buffer.
		kh.key = strings.Clone(key)
		h.keys[kh.key] = kh
	} else {
		h.unlink(kh)
	}
	h.pushFront(kh)
	var e *histEntry
	switch n := len(kh.ents); {
	case n == h.maxEnts:
		e = &kh.ents[kh.start]
		kh.start = (kh.start + 1) % n
	case n < cap(kh.ents):
		// A reused ring's slot: its owner buffer is reused too.
		kh.ents = kh.ents[:n+1]
		e = &kh.ents[n]
	default:
		kh.ents = append(kh.ents, histEntry{})
		e = &kh.ents[n]
	}
	e.setOwner(owner)
	e.mode, e.fence, e.grantedMs, e.endedMs, e.end, e.meta = mode, fence, now, 0, api.EndHeld, meta
	return true
}

// end marks owner's hold of key ended: the newest held entry of that
// owner with that fence, else (a fence the history did not see) the
// newest held entry of that owner. Called with h.mu held.
func (h *history) end(key, owner string, fence uint64, how string, now int64) {
	kh := h.keys[key]
	if kh == nil {
		return
	}
	var byOwner *histEntry
	for i := len(kh.ents) - 1; i >= 0; i-- {
		e := &kh.ents[(kh.start+i)%len(kh.ents)]
		if e.end != api.EndHeld || string(e.owner) != owner {
			continue
		}
		if e.fence == fence {
			byOwner = e
			break
		}
		if byOwner == nil {
			byOwner = e
		}
	}
	if byOwner != nil {
		byOwner.end, byOwner.endedMs = how, now
	}
}

// reown renames the owner of from's held entries of key to to, so its
// end is found under the new owner. Called with h.mu held.
func (h *history) reown(key, from string, to []byte) {
	kh := h.keys[key]
	if kh == nil {
		return
	}
	for i := range kh.ents {
		if e := &kh.ents[i]; e.end == api.EndHeld && string(e.owner) == from {
			e.setOwner(string(to))
		}
	}
}

func (h *history) drop(kh *keyHistory) {
	if kh == nil {
		return
	}
	h.unlink(kh)
	delete(h.keys, kh.key)
}

func (h *history) unlink(kh *keyHistory) {
	if kh.prev != nil {
		kh.prev.next = kh.next
	} else {
		h.head = kh.next
	}
	if kh.next != nil {
		kh.next.prev = kh.prev
	} else {
		h.tail = kh.prev
	}
	kh.prev, kh.next = nil, nil
}

func (h *history) pushFront(kh *keyHistory) {
	kh.next = h.head
	if h.head != nil {
		h.head.prev = kh
	}
	h.head = kh
	if h.tail == nil {
		h.tail = kh
	}
}

// get returns key's entries, newest first.
func (h *history) get(key string) []api.HistoryEntry {
	h.mu.Lock()
	defer h.mu.Unlock()
	kh := h.keys[key]
	if kh == nil {
		return []api.HistoryEntry{}
	}
	out := make([]api.HistoryEntry, len(kh.ents))
	for i := range kh.ents {
		out[len(out)-1-i] = kh.ents[(kh.start+i)%len(kh.ents)].entry()
	}
	return out
}

// reset forgets everything but the activity samples: after a snapshot
// install the holds it knew may have ended unseen.
func (h *history) reset() {
	h.mu.Lock()
	defer h.mu.Unlock()
	clear(h.keys)
	clear(h.pending)
	h.head, h.tail = nil, nil
}

// History returns key's recent grants as this node applied them, newest
// first (see api.History). It waits at most for the batch of entries
// being applied (the observer holds its lock across a batch); ctx only
// cancels it before that.
func (n *Node) History(ctx context.Context, key string) (api.History, error) {
	if err := ctx.Err(); err != nil {
		return api.History{}, err
	}
	return api.History{Key: key, Entries: n.history.get(key)}, nil
}

// metaCopy returns m as a map whose strings do not alias the log entry's
// buffer (the history outlives it); nil when m is empty.
func metaCopy(m fsm.Meta) map[string]string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]string, len(m))
	for _, e := range m {
		out[strings.Clone(e.Name)] = strings.Clone(e.Value)
	}
	return out
}
