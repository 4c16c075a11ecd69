package mirror

import (
	"sync"
	"time"
)

// mirrorQueue is the bounded hand-off between the apply path (push, which
// must never block) and the mirror loop. It holds the keys each applied
// entry changed, in log order, and two watermarks:
//
//   - seen: the highest index delivered by Subscribe. Every entry up to it
//     has been pushed, so a batch that empties the queue covers all of it.
//   - cover: every change in entries after cover is in items (or was
//     mirrored). A Redis index s lets the mirror resume iff cover <= s;
//     otherwise the changes between s and cover are lost and only a
//     resync can repair Redis.
//
// Overflow drops every item and moves cover to seen: memory stays bounded
// and the next writer sees the gap and resyncs.
type mirrorQueue struct {
	limit int           // keys held at most
	wake  chan struct{} // capacity 1: "items arrived"

	mu       sync.Mutex
	items    []mirrorItem
	nkeys    int
	seen     uint64
	cover    uint64
	overflow uint64 // overflows so far
}

type mirrorItem struct {
	index uint64
	keys  []string
	at    time.Time // when the entry was applied locally: the start of its lag
}

func newMirrorQueue(limit int) *mirrorQueue {
	return &mirrorQueue{limit: limit, wake: make(chan struct{}, 1)}
}

// push records entry index and the keys it changed. Called on the apply
// path: it takes one short lock and never blocks on the mirror.
func (q *mirrorQueue) push(index uint64, keys []string, at time.Time) {
	q.mu.Lock()
	if index > q.seen {
		q.seen = index
	}
	if len(keys) > 0 && index > q.cover {
		if q.nkeys+len(keys) > q.limit {
			q.items = nil
			q.nkeys = 0
			q.cover = q.seen
			q.overflow++
		} else {
			q.items = append(q.items, mirrorItem{index: index, keys: keys, at: at})
			q.nkeys += len(keys)
		}
	}
	q.mu.Unlock()
	if len(keys) > 0 {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
}

// start sets the coverage origin: Subscribe was registered before the
// table was read at index a0, so every entry after a0 will be pushed.
func (q *mirrorQueue) start(a0 uint64) {
	q.mu.Lock()
	if a0 > q.cover {
		q.cover = a0
	}
	if a0 > q.seen {
		q.seen = a0
	}
	q.mu.Unlock()
}

// trim forgets every item at or below index: Redis already reflects those
// entries (mirrored by us, by another writer, or by a resync snapshot).
func (q *mirrorQueue) trim(index uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := 0
	for n < len(q.items) && q.items[n].index <= index {
		q.nkeys -= len(q.items[n].keys)
		q.items[n] = mirrorItem{} // release the keys
		n++
	}
	// Re-slicing keeps trim O(dropped); append reuses or regrows the
	// backing array, so it stays bounded by the queue's limit.
	q.items = q.items[n:]
	if len(q.items) == 0 {
		q.items = nil
	}
	if index > q.cover {
		q.cover = index
	}
}

// mirrorBatch is the next slice of the stream: every change in entries
// (base, upto] is to the keys in keys.
type mirrorBatch struct {
	upto   uint64
	keys   []string    // distinct, in first-change order
	stamps []time.Time // apply time of each entry in the batch (lag samples)
}

// peek returns the next batch after base without removing it (it stays
// until trim, so a failed write is retried). It takes whole entries until
// at least max distinct keys are gathered; when it takes every item, upto
// is seen, so entries that changed no mirrored key advance the index too.
func (q *mirrorQueue) peek(base uint64, max int) mirrorBatch {
	q.mu.Lock()
	defer q.mu.Unlock()
	var b mirrorBatch
	set := make(map[string]struct{})
	i := 0
	for ; i < len(q.items) && len(b.keys) < max; i++ {
		it := q.items[i]
		if it.index <= base {
			continue
		}
		for _, k := range it.keys {
			if _, ok := set[k]; !ok {
				set[k] = struct{}{}
				b.keys = append(b.keys, k)
			}
		}
		b.stamps = append(b.stamps, it.at)
		b.upto = it.index
	}
	if i == len(q.items) && q.seen > b.upto {
		b.upto = q.seen
	}
	return b
}

// marks returns the watermarks and the queue length in keys.
func (q *mirrorQueue) marks() (seen, cover uint64, nkeys int, oldest time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.items) > 0 {
		oldest = q.items[0].at
	}
	return q.seen, q.cover, q.nkeys, oldest
}

// overflows returns how many times the queue overflowed.
func (q *mirrorQueue) overflows() uint64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.overflow
}
