package redisbridge

import (
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/locknode/locknode/fsm"
)

// SCAN snapshots. The first call of an iteration (cursor 0) walks the key
// space once, as KEYS does, and keeps the names sorted by SCAN position
// in a snapshot named in the cursor's top bits; the following calls read
// COUNT names from it and check only those against the table, so a step
// holds the table for COUNT lookups instead of a walk. A key present for
// the whole iteration was present when the snapshot was taken, so it is
// returned; keys deleted since are checked out; keys created since may be
// missed, as Redis allows.
//
// A cursor whose snapshot this node does not have (another node's, one
// dropped as idle or for room, or from before a restart) gets a new one
// taken now under the same name: still taken before the iteration ends,
// so the guarantee holds. A key space larger than scanSnapBudget is
// scanned without snapshots (fsm.Table.ScanKeys, a walk a step).

const (
	scanSnapMax    = 8         // snapshots kept
	scanSnapBudget = 4_000_000 // names over all snapshots (~100 MB)
	scanSnapIdle   = time.Minute
	scanPosMask    = 1<<fsm.ScanBits - 1
)

type scanSnap struct {
	id   uint64
	pos  []uint64 // sorted
	keys []string // keys[i] is at pos[i]
	used time.Time
}

type scanCache struct {
	budget int // scanSnapBudget; tests lower it
	mu     sync.Mutex
	snaps  map[uint64]*scanSnap
	total  int
}

func newScanCache() *scanCache {
	return &scanCache{budget: scanSnapBudget, snaps: map[uint64]*scanSnap{}}
}

// newSnapID returns a snapshot name for a cursor's top bits: random, so
// names from different nodes rarely meet (a node mistaking another's
// snapshot for its own could miss keys created before that iteration
// began; 1 in 2^24 per foreign cursor per kept snapshot).
func newSnapID() uint64 { return 1 + rand.Uint64N(1<<(64-fsm.ScanBits)-1) }

func (sc *scanCache) get(id uint64, now time.Time) *scanSnap {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.dropIdle(now)
	s := sc.snaps[id]
	if s != nil {
		s.used = now
	}
	return s
}

// put keeps s, dropping the least recently used snapshots to make room.
func (sc *scanCache) put(s *scanSnap, now time.Time) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.dropIdle(now)
	if old := sc.snaps[s.id]; old != nil {
		sc.total -= len(old.keys)
		delete(sc.snaps, s.id)
	}
	for len(sc.snaps) > 0 && (len(sc.snaps) >= scanSnapMax || sc.total+len(s.keys) > sc.budget) {
		var lru *scanSnap
		for _, x := range sc.snaps {
			if lru == nil || x.used.Before(lru.used) {
				lru = x
			}
		}
		sc.total -= len(lru.keys)
		delete(sc.snaps, lru.id)
	}
	s.used = now
	sc.snaps[s.id] = s
	sc.total += len(s.keys)
}

// dropIdle drops snapshots unused for scanSnapIdle. Call with mu held.
func (sc *scanCache) dropIdle(now time.Time) {
	for id, s := range sc.snaps {
		if now.Sub(s.used) > scanSnapIdle {
			sc.total -= len(s.keys)
			delete(sc.snaps, id)
		}
	}
}

// buildSnap sorts entries by SCAN position.
func buildSnap(id uint64, entries []fsm.KeyEntry) *scanSnap {
	type pk struct {
		pos uint64
		key string
	}
	all := make([]pk, len(entries))
	for i, e := range entries {
		all[i] = pk{fsm.ScanHash(e.Key), e.Key}
	}
	slices.SortFunc(all, func(a, b pk) int {
		switch {
		case a.pos < b.pos:
			return -1
		case a.pos > b.pos:
			return 1
		case a.key < b.key:
			return -1
		case a.key > b.key:
			return 1
		}
		return 0
	})
	s := &scanSnap{id: id, pos: make([]uint64, len(all)), keys: make([]string, len(all))}
	for i, x := range all {
		s.pos[i], s.keys[i] = x.pos, x.key
	}
	return s
}

// step returns the names of the step starting at position pos (count of
// them, and every other name at the last one's position) and the next
// cursor, 0 at the end.
func (s *scanSnap) step(pos uint64, count int) (keys []string, next uint64) {
	i := sort.Search(len(s.pos), func(i int) bool { return s.pos[i] >= pos })
	j := i + min(count, len(s.pos)-i)
	for j > i && j < len(s.pos) && s.pos[j] == s.pos[j-1] {
		j++
	}
	if j < len(s.pos) {
		next = s.id<<fsm.ScanBits | s.pos[j]
	}
	return s.keys[i:j], next
}

// scanStep serves one SCAN step: from a snapshot, or by a walk when the
// key space is over the budget. ok is false after writing the error.
func (c *conn) scanStep(cursor uint64, count int) (batch []fsm.KeyEntry, next uint64, ok bool) {
	id, pos := cursor>>fsm.ScanBits, cursor&scanPosMask
	if cursor != 0 && id == 0 {
		// An iteration without snapshots.
		ok = c.read(func(t *fsm.Table, now int64) { batch, next = t.ScanKeys(now, pos, count) })
		return batch, next, ok
	}
	now := time.Now()
	snap := c.s.scans.get(id, now)
	if snap == nil {
		var all []fsm.KeyEntry
		var over bool
		if !c.read(func(t *fsm.Table, now int64) {
			if over = t.Stats().Keys > c.s.scans.budget; over {
				batch, next = t.ScanKeys(now, pos, count)
				return
			}
			all = t.Keys(now)
		}) {
			return nil, 0, false
		}
		if over {
			return batch, next, true
		}
		if id == 0 {
			id = newSnapID()
		}
		snap = buildSnap(id, all)
		c.s.scans.put(snap, now)
	}
	names, next := snap.step(pos, count)
	if len(names) == 0 {
		return nil, next, true
	}
	ok = c.read(func(t *fsm.Table, now int64) { batch = t.LiveKeys(now, names) })
	return batch, next, ok
}
