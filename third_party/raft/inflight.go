package raft

// inflightQueue holds the leader's logFutures not yet committed, in log
// index order (locknode: a slice used as a FIFO, where upstream kept a
// container/list, an allocation per entry, and gathered each commit's
// futures into a new map and slice). Entries are added at the back and
// taken, committed, from the front. Only the leader's main loop uses it.
type inflightQueue struct {
	q    []*logFuture
	head int // q[head:] are queued
}

// pushBack queues f after the others.
func (q *inflightQueue) pushBack(f *logFuture) {
	if q.head > 0 && len(q.q) == cap(q.q) && q.head >= len(q.q)/2 {
		// Move the queued ones to the front rather than grow: the slice
		// stays the size of what is in flight at once.
		n := copy(q.q, q.q[q.head:])
		clearFutures(q.q[n:])
		q.q = q.q[:n]
		q.head = 0
	}
	q.q = append(q.q, f)
}

// all returns the queued futures, oldest first, valid until the next
// pushBack or popFront.
func (q *inflightQueue) all() []*logFuture { return q.q[q.head:] }

// popFront drops the n oldest futures.
func (q *inflightQueue) popFront(n int) {
	clearFutures(q.q[q.head : q.head+n])
	q.head += n
	if q.head == len(q.q) {
		q.head = 0
		q.q = q.q[:0]
		if cap(q.q) > maxKeptInflight {
			q.q = nil // a burst's slice is not kept
		}
	}
}

// maxKeptInflight is the capacity an empty queue keeps.
const maxKeptInflight = 4096

// clearFutures drops the references in fs, so answered futures can be
// collected (the Go of this module predates the clear builtin).
func clearFutures(fs []*logFuture) {
	for i := range fs {
		fs[i] = nil
	}
}
