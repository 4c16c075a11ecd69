package lockservice

import (
	"container/list"
	"context"
	"sync"
	"sync/atomic"

	"github.com/locknode/locknode/fsm"
)

// Key change indexes and their watchers: what blocking queries (GET
// /v1/locks/{key}?index=N&wait=D) and the Go client's Watch wait on.
//
// Every applied entry's events (Hub.Dispatch) pass through
// KeyWatches.applied, which raises the change index of each key they
// name: EvChanged, EvValueChanged, EvReleased (Key), EvGranted and
// EvWaitEnded (Keys); EvRestored raises every key's. The index is the
// raft index of the entry, the same on every node, so an index learned
// from one node can be sent to another.
//
// The index is exact for a key that has a record (a watcher waits on it,
// or one did lately); any other key answers the floor, the index of the
// last change of any key. That is never below the key's own last change,
// so a watcher that sends it back may wake early (once: its wait creates
// the record) but never misses a change. Records without watchers are
// kept, least recently used first out, up to maxIdleWatchRecs, so a
// watcher that re-asks at once finds its record.
//
// Waiting costs no goroutine and no timer of the registry's own: each
// record holds a channel that the change closes, so a change wakes
// exactly the callers waiting on that key (or a prefix of it).

// maxIdleWatchRecs bounds the records kept without watchers.
const maxIdleWatchRecs = 4096

// KeyWatches is the registry: change indexes and watchers by key and by
// key prefix.
type KeyWatches struct {
	mu    sync.Mutex
	floor uint64 // index of the last change of any key
	keys  map[string]*watchRec
	pfx   map[string]*watchRec
	// pfxLens counts the prefix records of each length: an event looks
	// up its key's prefix of each length present, not every record.
	pfxLens map[int]int
	idle    list.List // *watchRec without watchers, least recently left first

	// waiting counts the callers blocked in wait (Watchers), read without
	// the lock by WantsApplies.
	waiting atomic.Int32
	// nrecs is len(keys)+len(pfx), read without the lock by wantsChanges.
	nrecs atomic.Int32
}

// watchRec is one key's (or prefix's) change index and watchers.
type watchRec struct {
	key    string
	prefix bool
	last   uint64        // index of the last change seen
	ch     chan struct{} // closed on the next change; nil until a watcher needs it
	n      int           // callers waiting
	idleAt *list.Element // in KeyWatches.idle while n == 0
}

func newKeyWatches() *KeyWatches {
	return &KeyWatches{keys: make(map[string]*watchRec), pfx: make(map[string]*watchRec), pfxLens: make(map[int]int)}
}

// applied records one entry's events. It never blocks: closing a channel
// only marks its waiters runnable.
func (w *KeyWatches) applied(index uint64, events []fsm.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range events {
		e := &events[i]
		switch e.Kind {
		case fsm.EvChanged, fsm.EvValueChanged, fsm.EvReleased:
			w.changedLocked(index, e.Key)
		case fsm.EvGranted, fsm.EvWaitEnded:
			if e.Key != "" {
				w.changedLocked(index, e.Key)
			}
			for _, k := range e.Keys {
				w.changedLocked(index, k)
			}
		case fsm.EvRestored:
			// The table was replaced: any key may have changed.
			w.floor = max(w.floor, index)
			for _, r := range w.keys {
				r.changed(index)
			}
			for _, r := range w.pfx {
				r.changed(index)
			}
		}
	}
}

func (w *KeyWatches) changedLocked(index uint64, key string) {
	w.floor = max(w.floor, index)
	if r := w.keys[key]; r != nil {
		r.changed(index)
	}
	for n := range w.pfxLens {
		if n <= len(key) {
			if r := w.pfx[key[:n]]; r != nil {
				r.changed(index)
			}
		}
	}
}

// changed raises r's index to index and wakes its waiters.
func (r *watchRec) changed(index uint64) {
	if index <= r.last {
		return
	}
	r.last = index
	if r.ch != nil {
		close(r.ch)
		r.ch = nil
	}
}

// index returns the change index of key (prefix: of any key starting
// with it): exact when it has a record, the floor otherwise; 0 while
// this replica has applied no change at all.
func (w *KeyWatches) index(key string, prefix bool) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if r := w.recs(prefix)[key]; r != nil {
		return r.last
	}
	return w.floor
}

func (w *KeyWatches) recs(prefix bool) map[string]*watchRec {
	if prefix {
		return w.pfx
	}
	return w.keys
}

// wait blocks until the change index of key (prefix: of any key starting
// with it) is above index, ctx ends or stop closes, and returns the index
// then. It returns ctx's error (ErrClosed for stop) only when it ended
// before such a change.
func (w *KeyWatches) wait(ctx context.Context, stop <-chan struct{}, key string, prefix bool, index uint64) (uint64, error) {
	w.mu.Lock()
	r := w.recs(prefix)[key]
	if r == nil {
		// A change before the record existed counted only in the
		// floor: starting from it may wake early, never late.
		r = &watchRec{key: key, prefix: prefix, last: w.floor}
		w.nrecs.Add(1)
		w.recs(prefix)[key] = r
		if prefix {
			w.pfxLens[len(key)]++
		}
	} else if r.idleAt != nil {
		w.idle.Remove(r.idleAt)
		r.idleAt = nil
	}
	r.n++
	w.waiting.Add(1)
	var err error
	for r.last <= index {
		if err = ctx.Err(); err != nil {
			break
		}
		select {
		case <-stop:
			err = ErrClosed
		default:
		}
		if err != nil {
			break
		}
		if r.ch == nil {
			r.ch = make(chan struct{})
		}
		ch := r.ch
		w.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
		case <-stop:
		}
		w.mu.Lock()
	}
	last := r.last
	if last > index {
		err = nil
	}
	r.n--
	w.waiting.Add(-1)
	if r.n == 0 {
		r.idleAt = w.idle.PushBack(r)
		w.trimIdleLocked()
	}
	w.mu.Unlock()
	return last, err
}

// trimIdleLocked drops the records without watchers left longest ago
// past maxIdleWatchRecs. Their keys answer the floor again, which is at
// least their last change.
func (w *KeyWatches) trimIdleLocked() {
	for w.idle.Len() > maxIdleWatchRecs {
		r := w.idle.Remove(w.idle.Front()).(*watchRec)
		r.idleAt = nil
		delete(w.recs(r.prefix), r.key)
		w.nrecs.Add(-1)
		if r.prefix {
			if w.pfxLens[len(r.key)]--; w.pfxLens[len(r.key)] == 0 {
				delete(w.pfxLens, len(r.key))
			}
		}
	}
}

// wantsChanges reports whether the registry needs every entry's change
// events to stay exact: while it keeps a record, a record's index must
// count every change of its key. Without records only the floor counts,
// and changesSkipped keeps it up.
func (w *KeyWatches) wantsChanges() bool { return w.nrecs.Load() > 0 }

// changesSkipped records that the entry at index may have changed keys
// without saying which (applied with fsm.Table.SkipRenewalChanges because
// wantsChanges was false when it began): the floor and every record made
// since rise to index, so a watcher may wake early, never late.
func (w *KeyWatches) changesSkipped(index uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.floor = max(w.floor, index)
	for _, r := range w.keys {
		r.changed(index)
	}
	for _, r := range w.pfx {
		r.changed(index)
	}
}

// watchers returns the number of callers blocked in wait.
func (w *KeyWatches) watchers() int { return int(w.waiting.Load()) }
