package redisbridge

import (
	"github.com/locknode/locknode/auth"
	"sort"
	"sync"
)

// hub holds this node's subscriptions. Messages reach it from
// Server.onApplied (the apply path): publish only queues them on each
// subscriber, never blocks.
type hub struct {
	mu       sync.RWMutex
	channels map[string]map[*conn]struct{}
	patterns map[string]map[*conn]struct{}
	subs     map[*conn]*connSubs
}

// connSubs is one connection's subscriptions, in subscription order.
type connSubs struct {
	channels []string
	patterns []string
}

func (cs *connSubs) count() int { return len(cs.channels) + len(cs.patterns) }

func newHub() *hub {
	return &hub{
		channels: make(map[string]map[*conn]struct{}),
		patterns: make(map[string]map[*conn]struct{}),
		subs:     make(map[*conn]*connSubs),
	}
}

// push is one queued pub/sub message, or a client-side caching
// invalidation (tracking.go).
type push struct {
	kind    pushKind
	pattern string // "" for a channel message
	channel string
	message string
	keys    []string // invalidated keys
	null    bool     // invalidate everything
	id      int64    // pushRedirBroken: the missing redirect target
}

// pushKind says how a push is written.
type pushKind uint8

const (
	pushMessage       pushKind = iota // message / pmessage
	pushInvalidate                    // RESP3 >2 invalidate [keys] (or null)
	pushInvalidateMsg                 // RESP2: a message on __redis__:invalidate carrying [keys]
	pushRedirBroken                   // RESP3 >2 tracking-redir-broken id
)

// isSubscribed reports whether c has any subscription (RESP2 subscribe
// mode).
// active reports whether any connection is subscribed.
func (h *hub) active() bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.subs) > 0
}

func (h *hub) isSubscribed(c *conn) bool {
	h.mu.RLock()
	defer h.mu.RUnlock()
	cs := h.subs[c]
	return cs != nil && cs.count() > 0
}

// subscribe adds name (a channel, or a pattern when pattern is set) and
// returns c's subscription count after it.
func (h *hub) subscribe(c *conn, name string, pattern bool) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	cs := h.subs[c]
	if cs == nil {
		cs = &connSubs{}
		h.subs[c] = cs
	}
	idx, list := h.channels, &cs.channels
	if pattern {
		idx, list = h.patterns, &cs.patterns
	}
	set := idx[name]
	if set == nil {
		set = make(map[*conn]struct{})
		idx[name] = set
	}
	if _, ok := set[c]; !ok {
		set[c] = struct{}{}
		*list = append(*list, name)
	}
	return cs.count()
}

// unsubscribe removes name; it returns c's count after it.
func (h *hub) unsubscribe(c *conn, name string, pattern bool) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	cs := h.subs[c]
	if cs == nil {
		return 0
	}
	idx, list := h.channels, &cs.channels
	if pattern {
		idx, list = h.patterns, &cs.patterns
	}
	if set := idx[name]; set != nil {
		delete(set, c)
		if len(set) == 0 {
			delete(idx, name)
		}
	}
	for i, n := range *list {
		if n == name {
			*list = append((*list)[:i], (*list)[i+1:]...)
			break
		}
	}
	n := cs.count()
	if n == 0 {
		delete(h.subs, c)
	}
	return n
}

// names returns c's channels (or patterns), in subscription order.
func (h *hub) names(c *conn, pattern bool) []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	cs := h.subs[c]
	if cs == nil {
		return nil
	}
	if pattern {
		return append([]string(nil), cs.patterns...)
	}
	return append([]string(nil), cs.channels...)
}

func (h *hub) unsubscribeAll(c *conn) {
	for _, n := range h.names(c, false) {
		h.unsubscribe(c, n, false)
	}
	for _, n := range h.names(c, true) {
		h.unsubscribe(c, n, true)
	}
}

// publish queues message for every local subscriber of channel and every
// matching pattern; it returns how many deliveries it queued.
func (h *hub) publish(channel, message string) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	n := 0
	for c := range h.channels[channel] {
		if !c.acl.mayReceive(channel, "") {
			c.nc.Close() // as Redis, which disconnects such a subscriber
			continue
		}
		c.out.enqueue(push{channel: channel, message: message})
		n++
	}
	if len(h.patterns) == 0 {
		return n
	}
	pats := make([]string, 0, len(h.patterns))
	for p := range h.patterns {
		pats = append(pats, p)
	}
	sort.Strings(pats) // stable delivery order across patterns
	for _, p := range pats {
		if !globMatch(p, channel) {
			continue
		}
		for c := range h.patterns[p] {
			if !c.acl.mayReceive(channel, p) {
				c.nc.Close()
				continue
			}
			c.out.enqueue(push{pattern: p, channel: channel, message: message})
			n++
		}
	}
	return n
}

// receivers counts the local subscriptions that a message on channel
// reaches (PUBLISH's reply).
func (h *hub) receivers(channel string) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	n := len(h.channels[channel])
	for p, set := range h.patterns {
		if globMatch(p, channel) {
			n += len(set)
		}
	}
	return n
}

// globMatch is Redis' stringmatch (auth.Match, shared with the users'
// key and channel patterns).
func globMatch(pattern, s string) bool { return auth.Match(pattern, s) }

// pushOverhead is what one queued message costs besides its strings
// (the push struct and its RESP framing), counted towards the limits.
const pushOverhead = 64

func (m *push) size() int64 {
	n := int64(len(m.pattern)+len(m.channel)+len(m.message)) + pushOverhead
	for _, k := range m.keys {
		n += int64(len(k)) + 16
	}
	return n
}
