package mirror

import (
	"github.com/locknode/locknode/fsm"
)

// Reading what to mirror from the lock table. Both functions run inside
// Source.Read, on a table that must not be kept or changed.

// tableNow is the time queries evaluate deadlines at (fsm queries use the
// later of the reader's clock and the table's).
func tableNow(t *fsm.Table, now int64) int64 {
	if tn := t.Now(); tn > now {
		return tn
	}
	return now
}

// stateOf turns one key's LockInfo into what the mirror writes. A key
// with no live holder (free, waiters only, in lock-delay, or a value of
// another Redis type) is mirrored as absent.
func stateOf(li fsm.LockInfo, now int64, index uint64) lockState {
	s := lockState{key: li.Key, index: index}
	if li.Kind != fsm.KindLock || len(li.Holders) == 0 {
		return s
	}
	s.fence = li.Fence
	s.permits = li.Permits
	s.waiters = len(li.Waiters)
	s.mode = li.Holders[0].Mode.String()
	s.granted, s.meta = li.Holders[0].Granted, li.Holders[0].Meta
	s.holders = make([]string, len(li.Holders))
	for i, h := range li.Holders {
		s.holders[i] = h.Owner
		if h.Deadline > s.deadline {
			s.deadline = h.Deadline
		}
	}
	if s.deadline == 0 {
		// A hold with no deadline cannot happen today (every lease has a
		// TTL); mirror it without expiry rather than not at all.
		s.px = maxMirrorPX
	} else {
		s.px = s.deadline - now
	}
	s.held = s.px > 0
	return s
}

// maxMirrorPX caps a mirrored key's PX when the lock reports no deadline.
const maxMirrorPX = 24 * 60 * 60 * 1000

// readStates returns the current state of keys and the index it was read
// at.
func readStates(t *fsm.Table, now int64, keys []string) ([]lockState, uint64) {
	now = tableNow(t, now)
	idx := t.AppliedIndex()
	out := make([]lockState, 0, len(keys))
	for _, k := range keys {
		li, err := t.Inspect(k, now)
		if err != nil {
			// Only ErrNoSuchKey: nothing there, so the key is deleted.
			out = append(out, lockState{key: k, index: idx})
			continue
		}
		out = append(out, stateOf(li, now, idx))
	}
	return out, idx
}

// readAll returns every held lock whose name passes filter, in key order,
// and the index of that snapshot.
func readAll(t *fsm.Table, now int64, filter string) ([]lockState, uint64) {
	now = tableNow(t, now)
	idx := t.AppliedIndex()
	limit := t.Stats().Locks + 1 // every lock in one page
	infos, _ := t.List(filter, "", limit, now)
	out := make([]lockState, 0, len(infos))
	for _, li := range infos {
		if !mirrorable(filter, li.Key) {
			continue
		}
		if s := stateOf(li, now, idx); s.held {
			out = append(out, s)
		}
	}
	return out, idx
}
