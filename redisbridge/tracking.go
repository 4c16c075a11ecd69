package redisbridge

import (
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/fsm/rediscmd"
)

// Client-side caching (CLIENT TRACKING), as Redis 7's tracking.c: each
// node remembers which of its connections read which keys (default mode)
// or which key prefixes they watch (BCAST), and sends them an invalidation
// when an applied entry (or an expiry, which is an entry too) changes such
// a key. Every node applies every entry, so a write taken by any node
// invalidates the caches of clients on all of them.

// trackingChannel is where RESP2 clients receive invalidations, through
// the connection they redirect to.
const trackingChannel = "__redis__:invalidate"

// trackState is one connection's tracking mode, guarded by tracker.mu
// (the apply path reads it).
type trackState struct {
	on, bcast, optin, optout, noloop bool
	brokenRedir                      bool
	redirect                         int64
	prefixes                         []string // BCAST, sorted
}

// tracker is a node's tracking table.
type tracker struct {
	mu sync.Mutex
	// keys: key -> ids of the connections that read it since its last
	// invalidation (default mode). At most maxKeys keys.
	keys    map[string]map[int64]struct{}
	maxKeys int
	// prefixes: BCAST prefix -> connections; nprefixes counts pairs.
	// plens: the lengths of the prefixes, with how many have each: a
	// changed key is looked up at those lengths only.
	prefixes  map[string]map[*conn]struct{}
	nprefixes int
	plens     map[int]int
	// clients: tracking connections by id.
	clients map[int64]*conn
	// conns: every connection by id (redirect targets).
	conns map[int64]*conn
	// pending: key -> registrations of writes in flight that read it
	// (scripts, MULTI blocks).
	pending map[string][]*pendingReg
	// active is len(clients): the apply path skips the lock when 0.
	active atomic.Int32
}

func newTracker(maxKeys int) *tracker {
	return &tracker{
		keys:     make(map[string]map[int64]struct{}),
		maxKeys:  maxKeys,
		prefixes: make(map[string]map[*conn]struct{}),
		clients:  make(map[int64]*conn),
		conns:    make(map[int64]*conn),
		pending:  make(map[string][]*pendingReg),
		plens:    make(map[int]int),
	}
}

func (tr *tracker) addConn(c *conn) {
	tr.mu.Lock()
	tr.conns[c.id] = c
	tr.mu.Unlock()
}

// removeConn forgets a closed connection. Its ids stay in keys until
// those keys are invalidated or evicted (Redis' lazy clean-up): a later
// lookup finds no client.
func (tr *tracker) removeConn(c *conn) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	delete(tr.conns, c.id)
	tr.disableLocked(c)
}

func (tr *tracker) disableLocked(c *conn) {
	for _, p := range c.track.st.prefixes {
		if set := tr.prefixes[p]; set != nil {
			delete(set, c)
			tr.nprefixes--
			if len(set) == 0 {
				delete(tr.prefixes, p)
				if tr.plens[len(p)]--; tr.plens[len(p)] == 0 {
					delete(tr.plens, len(p))
				}
			}
		}
	}
	if c.track.st.on {
		delete(tr.clients, c.id)
		tr.active.Store(int32(len(tr.clients)))
	}
	c.track.st = trackState{}
	c.track.loop = loopState{}
	c.track.noloop.Store(false)
}

func (tr *tracker) state(c *conn) trackState {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return c.track.st
}

// enable turns tracking on for c (Redis' enableTracking: BCAST prefixes
// add to those c had). It fails when the node's prefixes would pass the
// table's limit.
func (tr *tracker) enable(c *conn, o trackOptions) string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	add := o.prefixes
	if o.bcast && len(add) == 0 {
		add = []string{""}
	}
	var fresh []string
	for _, p := range add {
		if !slices.Contains(c.track.st.prefixes, p) && !slices.Contains(fresh, p) {
			fresh = append(fresh, p)
		}
	}
	if tr.nprefixes+len(fresh) > tr.maxKeys {
		return "ERR locknode: BCAST prefixes over the tracking table limit (" + strconv.Itoa(tr.maxKeys) + ")"
	}
	if !c.track.st.on {
		tr.clients[c.id] = c
		tr.active.Store(int32(len(tr.clients)))
	}
	prefixes := c.track.st.prefixes
	c.track.st = trackState{on: true, redirect: o.redirect, bcast: o.bcast, optin: o.optin, optout: o.optout, noloop: o.noloop}
	if o.bcast {
		for _, p := range fresh {
			set := tr.prefixes[p]
			if set == nil {
				set = make(map[*conn]struct{})
				tr.prefixes[p] = set
				tr.plens[len(p)]++
			}
			set[c] = struct{}{}
			tr.nprefixes++
			prefixes = append(prefixes, p)
		}
		slices.Sort(prefixes)
		c.track.st.prefixes = prefixes
	}
	c.track.noloop.Store(o.noloop)
	return ""
}

func (tr *tracker) disable(c *conn) {
	tr.mu.Lock()
	tr.disableLocked(c)
	tr.mu.Unlock()
}

// remember records that c read keys (default mode), evicting other keys
// with an invalidation past maxKeys as Redis does. Call before the read:
// a change applied between this call and the read is then invalidated
// (perhaps needlessly), never missed.
func (tr *tracker) remember(c *conn, keys [][]byte) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, kb := range keys {
		ids := tr.keys[string(kb)]
		if ids == nil {
			for len(tr.keys) >= tr.maxKeys {
				tr.evictLocked()
			}
			ids = make(map[int64]struct{}, 1)
			tr.keys[string(kb)] = ids
		}
		ids[c.id] = struct{}{}
	}
}

// evictLocked drops one key (any: Redis picks at random) and
// invalidates it for its readers.
func (tr *tracker) evictLocked() {
	for k := range tr.keys {
		tr.invalidateKeyLocked(k, 0)
		return
	}
}

// invalidateKeyLocked sends k's invalidation to every connection that
// read it, except a NOLOOP one whose own write (index) changed it, and
// forgets k.
func (tr *tracker) invalidateKeyLocked(k string, index uint64) {
	ids := tr.keys[k]
	if ids == nil {
		return
	}
	delete(tr.keys, k)
	for id := range ids {
		c := tr.clients[id]
		if c == nil || c.track.st.bcast {
			continue
		}
		tr.sendLocked(c, []string{k}, false, index)
	}
}

// sendLocked queues an invalidation of keys (null: everything) for c,
// at its redirect target if it has one.
func (tr *tracker) sendLocked(c *conn, keys []string, null bool, index uint64) {
	if index != 0 && c.track.st.noloop && c.track.parkOwn(index, keys, null) {
		return
	}
	tr.deliverLocked(c, keys, null)
}

func (tr *tracker) deliverLocked(c *conn, keys []string, null bool) {
	to, redirected := c, false
	if c.track.st.redirect != 0 {
		to = tr.conns[c.track.st.redirect]
		if to == nil {
			c.track.st.brokenRedir = true
			if c.proto() >= 3 {
				c.out.enqueue(push{kind: pushRedirBroken, id: c.track.st.redirect})
			}
			return
		}
		redirected = true
	}
	switch {
	case to.proto() >= 3:
		to.out.enqueue(push{kind: pushInvalidate, keys: keys, null: null})
	case redirected && to.s.hub.isSubscribed(to):
		to.out.enqueue(push{kind: pushInvalidateMsg, keys: keys, null: null})
	}
	// RESP2 without a subscribed redirect target: nothing can carry it.
}

// onApplied invalidates what one applied entry changed. It runs on the
// apply path: it only queues messages.
func (tr *tracker) onApplied(index uint64, events []fsm.Event) {
	if tr.active.Load() == 0 {
		if len(events) > 0 && events[0].Kind == fsm.EvRestored {
			tr.mu.Lock()
			clear(tr.keys)
			tr.mu.Unlock()
		}
		return
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var bcast map[*conn]map[string][]string // client -> prefix -> keys
	var lens []int
	if len(tr.plens) > 0 {
		lens = make([]int, 0, len(tr.plens))
		for n := range tr.plens {
			lens = append(lens, n)
		}
	}
	for i := range events {
		e := &events[i]
		switch e.Kind {
		case fsm.EvRestored:
			// The table was replaced wholesale: every cache is stale, as
			// after FLUSHALL.
			clear(tr.keys)
			for _, c := range tr.sortedClients() {
				tr.sendLocked(c, nil, true, 0)
			}
			continue
		case fsm.EvChanged, fsm.EvValueChanged:
		default:
			continue
		}
		tr.invalidateKeyLocked(e.Key, index)
		for _, p := range tr.pending[e.Key] {
			p.changed[e.Key] = index
		}
		if len(tr.prefixes) == 0 {
			continue
		}
		for _, n := range lens {
			if n > len(e.Key) {
				continue
			}
			p := e.Key[:n]
			for c := range tr.prefixes[p] {
				if !c.acl.mayKey(e.Key) {
					continue // a key name outside the user's patterns is not told
				}
				if bcast == nil {
					bcast = make(map[*conn]map[string][]string)
				}
				m := bcast[c]
				if m == nil {
					m = make(map[string][]string)
					bcast[c] = m
				}
				m[p] = append(m[p], e.Key)
			}
		}
	}
	// One message per client and prefix with the entry's keys, as Redis
	// sends BCAST invalidations once per event-loop turn.
	for c, m := range bcast {
		ps := make([]string, 0, len(m))
		for p := range m {
			ps = append(ps, p)
		}
		slices.Sort(ps)
		for _, p := range ps {
			keys := m[p]
			slices.Sort(keys) // Redis keeps them in a radix tree, once each
			tr.sendLocked(c, slices.Compact(keys), false, index)
		}
	}
}

func (tr *tracker) sortedClients() []*conn {
	out := make([]*conn, 0, len(tr.clients))
	for _, c := range tr.clients {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b *conn) int { return int(a.id - b.id) })
	return out
}

// connTracking is one connection's part of client-side caching. It is
// one part of a conn: c is the connection it tracks for. st and loop are
// guarded by the server's tracker.mu; noloop mirrors st.noloop for the
// write path; caching (CLIENT CACHING yes/no for the next command) is
// serve's.
type connTracking struct {
	c       *conn
	st      trackState
	loop    loopState
	noloop  atomic.Bool
	caching bool
}

// reads reports whether c's read of keys is to be remembered: tracking
// on in default mode, and OPTIN with CACHING yes or OPTOUT without
// CACHING no. Call from serve.
func (t *connTracking) reads() bool {
	c := t.c
	if c.s.trk.active.Load() == 0 {
		return false
	}
	st := c.s.trk.state(c)
	if !st.on || st.bcast {
		return false
	}
	return !(st.optin && !t.caching) && !(st.optout && t.caching)
}

// proto is the connection's protocol as other goroutines may read it.
func (c *conn) proto() int {
	if l := c.listed.Load(); l != nil {
		return l.proto
	}
	return 2
}

// NOLOOP: an invalidation is not sent to the client whose own write
// caused it. The apply path cannot tell which connection proposed an
// entry, so while a NOLOOP connection has writes in flight its
// invalidations are parked, and released once the writes have answered
// with their indexes (those of its own entries are dropped). A write
// whose outcome is unknown (no index) lets its parked invalidations
// through: one too many is harmless, one too few is a stale cache.

type parked struct {
	index uint64
	keys  []string
	null  bool
}

// loopState is a NOLOOP connection's writes in flight, guarded by
// tracker.mu.
type loopState struct {
	writes int
	own    []uint64
	parked []parked
}

// parkOwn parks an invalidation caused by entry index while c has writes
// in flight; it reports whether it did. Call with tracker.mu held.
func (t *connTracking) parkOwn(index uint64, keys []string, null bool) bool {
	if slices.Contains(t.loop.own, index) {
		return true // c's own write: dropped
	}
	if t.loop.writes == 0 {
		return false
	}
	t.loop.parked = append(t.loop.parked, parked{index: index, keys: keys, null: null})
	return true
}

// writeStarted notes a write c proposes, if c is NOLOOP; it reports
// whether it did (then call writeDone with the answer). Other
// connections' writes never take the tracker's lock.
func (t *connTracking) writeStarted() bool {
	c := t.c
	if !t.noloop.Load() {
		return false
	}
	c.s.trk.mu.Lock()
	t.loop.writes++
	c.s.trk.mu.Unlock()
	return true
}

// writeDone notes the answer to a write writeStarted counted: index is
// its entry (0 when unknown).
func (t *connTracking) writeDone(index uint64) {
	c := t.c
	tr := c.s.trk
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if t.loop.writes == 0 {
		return // NOLOOP was turned on while the write was in flight
	}
	t.loop.writes--
	if index != 0 {
		t.loop.own = append(t.loop.own, index)
	}
	if t.loop.writes > 0 {
		return
	}
	ps := t.loop.parked
	own := t.loop.own
	t.loop = loopState{}
	for _, p := range ps {
		if !slices.Contains(own, p.index) && t.st.on {
			tr.deliverLocked(c, p.keys, p.null)
		}
	}
}

// afterCommand ends a CLIENT CACHING yes/no, which applies to the next
// command only (or to the whole MULTI block that follows), as Redis'
// resetClient. Call from serve.
func (t *connTracking) afterCommand(name string) {
	c := t.c
	if t.caching && !c.tx.active && name != "client" {
		t.caching = false
	}
}

// Keys read by a write entry (a script's KEYS, the reads of a MULTI
// block) are tracked as of that entry: changes the entry itself made do
// not invalidate them (Redis tracks a script's GET after its own SET),
// changes after it do. The registration is pending while the entry is in
// flight; end then tracks each key, or invalidates it at once if a later
// entry already changed it.

// pendingReg is one write's keys to track, in flight.
type pendingReg struct {
	c       *conn
	keys    []string
	changed map[string]uint64 // key -> index of the last entry seen changing it
}

// trackedFuture carries a pipelined write's registration to the replier.
type trackedFuture struct {
	fsm.Future
	reg     *pendingReg
	counted bool // writeStarted counted it (NOLOOP)
}

// begin returns the pending registration of cmd's read keys, or nil
// when c does not track them. Call from serve before proposing cmd.
func (t *connTracking) begin(cmd *fsm.Command) *pendingReg {
	c := t.c
	if !t.reads() {
		return nil
	}
	var keys []string
	switch cmd.Op {
	case fsm.OpEval, fsm.OpEvalSHA:
		// Every declared key: a superset of what the script reads.
		for _, k := range cmd.KeysB {
			keys = append(keys, string(k))
		}
	case fsm.OpExec:
		for _, args := range cmd.Multi {
			// The reads of the key space: the queued commands the
			// FSM runs (a script's keys are not tracked inside EXEC).
			if s := rediscmd.LookupBytes(args[0]); s != nil && s.Flags&rediscmd.KeySpace != 0 && !s.Writes() {
				for _, k := range s.KeyArgs(args) {
					keys = append(keys, string(k))
				}
			}
		}
	}
	if len(keys) == 0 {
		return nil
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	p := &pendingReg{c: c, keys: keys, changed: make(map[string]uint64)}
	tr := c.s.trk
	tr.mu.Lock()
	for _, k := range keys {
		tr.pending[k] = append(tr.pending[k], p)
	}
	tr.mu.Unlock()
	return p
}

// end tracks p's keys as of entry index (0: outcome unknown, so any
// change seen counts as later).
func (tr *tracker) end(p *pendingReg, index uint64) {
	if p == nil {
		return
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for _, k := range p.keys {
		regs := tr.pending[k]
		if i := slices.Index(regs, p); i >= 0 {
			regs = slices.Delete(regs, i, i+1)
		}
		if len(regs) == 0 {
			delete(tr.pending, k)
		} else {
			tr.pending[k] = regs
		}
	}
	c := p.c
	if !c.track.st.on || c.track.st.bcast {
		return
	}
	for _, k := range p.keys {
		if j, ok := p.changed[k]; ok && (index == 0 || j > index) {
			tr.sendLocked(c, []string{k}, false, j)
			continue
		}
		ids := tr.keys[k]
		if ids == nil {
			for len(tr.keys) >= tr.maxKeys {
				tr.evictLocked()
			}
			ids = make(map[int64]struct{}, 1)
			tr.keys[k] = ids
		}
		ids[c.id] = struct{}{}
	}
}
