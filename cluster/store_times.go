package cluster

import (
	"sync"
	"time"
)

// storeTimes remembers when this node stored each recent log entry (its
// monotonic reading as raft handed the entry to the log store). An entry
// was stamped by its leader before any node stored it, so the store time
// bounds how long ago the entry's time was read more tightly than the
// apply time does: entries still in flight when a leader dies are
// applied only after the next election, but were stored before it
// (clockFloor). Entries stored before this process started (a restart
// replaying its log) have no record; the apply time stands in.
type storeTimes struct {
	mu    sync.Mutex
	spans []storeSpan // in store order; a later span wins for an index
}

// storeSpan is one StoreLogs call: entries first..last stored at at.
type storeSpan struct {
	first, last uint64
	at          time.Time
}

// maxStoreSpans bounds the record: spans are dropped once applied, so
// only a follower far behind in applying (or a leader whose followers
// hold back its commit) reaches it, and then the oldest half goes (their
// entries fall back to the apply time, which is safe).
const maxStoreSpans = 4096

// stored records entries first..last stored at at.
func (s *storeTimes) stored(first, last uint64, at time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.spans) >= maxStoreSpans {
		s.spans = append(s.spans[:0], s.spans[len(s.spans)/2:]...)
	}
	s.spans = append(s.spans, storeSpan{first, last, at})
}

// applied returns when entry idx was stored, if this process stored it,
// and forgets every span wholly at or below idx: entries are applied in
// order, so none of them is asked for again.
func (s *storeTimes) applied(idx uint64) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var at time.Time
	found := false
	// The newest span holding idx: an entry stored again after a log
	// conflict was received again then.
	for i := len(s.spans) - 1; i >= 0; i-- {
		if sp := s.spans[i]; sp.first <= idx && idx <= sp.last {
			at, found = sp.at, true
			break
		}
	}
	drop := 0
	for drop < len(s.spans) && s.spans[drop].last <= idx {
		drop++
	}
	if drop > 0 {
		s.spans = append(s.spans[:0], s.spans[drop:]...)
	}
	return at, found
}
