package fsm

import "container/heap"

// Key-space enumeration for Redis' SCAN, KEYS, DBSIZE and INFO keyspace.
// Read-only: nothing here changes the table or what Apply decides. A key
// is listed as a Redis client sees it (lookup): values past their
// deadline and locks nobody holds any more are absent.

// KeyEntry is one live key of the key space.
type KeyEntry struct {
	Key  string
	Type string // TYPE's answer: "string" (locks too), "hash", "set", "zset", "list"
	// Expires: the key has a deadline (a value's TTL, a lock hold's lease).
	Expires bool
}

// ScanSpread bounds how many calls a whole SCAN iteration takes: a call
// returns at least 1/ScanSpread of the key space (or COUNT keys, if more).
// The table keeps its keys in a hash map, so each call walks all of them;
// returning more than COUNT keeps a whole iteration at about ScanSpread
// walks instead of keys/COUNT walks. Redis documents COUNT as a hint and
// returns more than it asks for too.
const ScanSpread = 64

// ScanBits is the width of a SCAN position: a bridge may put other
// things (a snapshot's name) in a cursor's bits above it.
const ScanBits = 40

// ScanHash is the order SCAN walks keys in, and what its cursor counts:
// the top ScanBits bits of FNV-1a 64. Fixed and seedless, so a cursor one
// node returned continues on any other node and after a restart.
func ScanHash(key string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= 1099511628211
	}
	return h >> (64 - ScanBits)
}

// LiveKeys returns the entries of those of keys that are live at now, in
// the order given.
func (t *redisTable) LiveKeys(now int64, keys []string) []KeyEntry {
	now = t.readNow(now)
	out := make([]KeyEntry, 0, len(keys))
	for _, k := range keys {
		if v := t.keys[k]; v != nil {
			if e, ok := t.liveKey(now, k, v); ok {
				out = append(out, e)
			}
		}
	}
	return out
}

// liveKey returns the entry of key, holding v, as seen at now, or false
// when a Redis client would not see the key (lookup's rule, without
// looking key up again).
func (t *redisTable) liveKey(now int64, key string, v *Value) (KeyEntry, bool) {
	d := v.deadline()
	if d != 0 && d <= now {
		return KeyEntry{}, false
	}
	e := KeyEntry{Key: key, Type: kindName(v.Kind()), Expires: d != 0}
	if v.Kind() == KindLock {
		l := v.lock()
		if !t.lockLive(l, now) {
			return KeyEntry{}, false
		}
		for i := 0; i < l.numHolders(); i++ {
			if t.locks.holdDeadline(l.holder(i)) != 0 {
				e.Expires = true
				break
			}
		}
	}
	return e, true
}

// Keys returns every live key at now, in no order (KEYS, DBSIZE, INFO
// keyspace). It walks the whole key space; the caller filters (patterns,
// permissions) after releasing the table.
func (t *redisTable) Keys(now int64) []KeyEntry {
	now = t.readNow(now)
	out := make([]KeyEntry, 0, len(t.keys))
	for k, v := range t.keys {
		if e, ok := t.liveKey(now, k, v); ok {
			out = append(out, e)
		}
	}
	return out
}

// KeyCount counts the live keys at now and those of them with a deadline
// (DBSIZE and INFO keyspace of a user of every key), without copying.
func (t *redisTable) KeyCount(now int64) (keys, expires int) {
	now = t.readNow(now)
	for k, v := range t.keys {
		if e, ok := t.liveKey(now, k, v); ok {
			keys++
			if e.Expires {
				expires++
			}
		}
	}
	return keys, expires
}

// ScanKeys is one SCAN step: the live keys at now whose ScanHash is >=
// cursor (< 1<<ScanBits), in ScanHash order, at least max(count, keys/ScanSpread) of them
// when that many remain; next is the cursor to continue from, 0 when the
// walk is done. Every key with a given hash is returned by the same step,
// so a key present for a whole iteration is returned exactly once
// (Redis' guarantee is at least once), whichever nodes serve the steps.
func (t *redisTable) ScanKeys(now int64, cursor uint64, count int) (keys []KeyEntry, next uint64) {
	now = t.readNow(now)
	limit := max(count, len(t.keys)/ScanSpread, 1)
	// The limit smallest hashes >= cursor, in a max-heap. minOut is the
	// smallest hash left out: every left-out hash is >= the heap's final
	// maximum, so minOut equal to it means keys of that hash were left
	// out and need a second walk.
	var h scanHeap
	var minOut uint64
	out := false
	leaveOut := func(x uint64) {
		if !out || x < minOut {
			minOut, out = x, true
		}
	}
	for k, v := range t.keys {
		x := ScanHash(k)
		if x < cursor {
			continue
		}
		if len(h) == limit && x >= h[0].hash {
			leaveOut(x)
			continue
		}
		e, ok := t.liveKey(now, k, v)
		if !ok {
			continue
		}
		heap.Push(&h, scanItem{x, e})
		if len(h) > limit {
			leaveOut(heap.Pop(&h).(scanItem).hash)
		}
	}
	if len(h) == 0 {
		return nil, 0
	}
	top := h[0].hash
	keys = make([]KeyEntry, len(h))
	for i := len(keys) - 1; i >= 0; i-- {
		keys[i] = heap.Pop(&h).(scanItem).e
	}
	if out && minOut == top {
		// Keys sharing the last hash: all of them now, or the next step
		// (which starts past top) would miss them.
		for k, v := range t.keys {
			if ScanHash(k) != top {
				continue
			}
			if e, ok := t.liveKey(now, k, v); ok && !containsKey(keys, k) {
				keys = append(keys, e)
			}
		}
	}
	if !out || top == 1<<ScanBits-1 {
		return keys, 0
	}
	return keys, top + 1
}

func containsKey(es []KeyEntry, k string) bool {
	for i := len(es) - 1; i >= 0; i-- {
		if es[i].Key == k {
			return true
		}
	}
	return false
}

type scanItem struct {
	hash uint64
	e    KeyEntry
}

// scanHeap is a max-heap by (hash, key).
type scanHeap []scanItem

func (h scanHeap) Len() int { return len(h) }
func (h scanHeap) Less(i, j int) bool {
	if h[i].hash != h[j].hash {
		return h[i].hash > h[j].hash
	}
	return h[i].e.Key > h[j].e.Key
}
func (h scanHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *scanHeap) Push(x any)   { *h = append(*h, x.(scanItem)) }
func (h *scanHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
