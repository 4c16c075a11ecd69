package fsm

import "github.com/locknode/locknode/fsm/reply"

// Key-space memory accounting and Config.MaxMemory.
//
// The table keeps a running estimate of the heap its state takes: every
// key, value, hold, waiter, session, fence, tombstone and remembered
// request id adds a fixed overhead plus the lengths of its strings. The
// figure must be the same on every node, so it is computed from the
// logical state alone — never from Go's heap, which differs per node and
// per moment — with fixed per-object constants (not unsafe.Sizeof, which
// differs between 32- and 64-bit builds). It is updated in O(1) (or
// O(holders) where the code already visits them) at each change, and
// recounted from scratch on Restore, so a restored table counts what the
// original counted. The constants are the 64-bit sizes of the structs
// with their allocator size class and a map slot at average load; a fill
// of each kind measured against heap growth is in
// bench/results/README.md#key-space-memory.
//
// Not counted: the replicated script cache (bounded on its own), the due
// heaps' stale items and other derived indexes beyond the fixed
// overheads below, and the Lua VMs.
//
// The limit works like Redis' maxmemory with the noeviction policy:
// while the count is over MaxMemory, a command that would grow the key
// space is refused with ErrOutOfMemory (OOMText on RESP) and changes
// nothing; everything that frees or keeps the size (releases, DEL,
// expiry, extends, a SET to a value no longer than the old, session end,
// Tick) still runs. The check is on the count before the command, so one
// command may cross the limit by its own size; a script's write commands
// are checked one by one as they run (Redis checks once before the
// script), so a script cannot grow the key space far past the limit
// either.
const (
	memMapSlot   = 48 // a map slot (string key + word) at average load
	memValue     = 96 // Value
	memValueData = 112
	memDue       = 24 // a due-heap item

	// A Redis value: its key slot, Value, valueData and a due item.
	memRedisValue = memMapSlot + memValue + memValueData + memDue
	// A lock: its key slot, the Value less its inline first hold, and
	// its due item; every hold (the first included) is memHold.
	memLock     = memMapSlot + memValue - 72 + memDue
	memHold     = 80 // a hold and its slot in the holder list
	memHoldOpts = 48
	memMetaItem = 32 // a waiter's metadata entry (two string headers)
	memSessRef  = 64 // a session-bound hold's or waiter's session index entry

	memHashField  = 80 // map slot of a field (string + slice header), the value's rounding
	memSetMember  = 40
	memZSetMember = 40
	memListItem   = 32 // slice header in the list

	memWaiter    = 160 + memMapSlot + memDue // Waiter, its index slot, its due item
	memWaiterKey = 16 + 8                    // a key in Waiter.Keys and its queue slot
	memQueue     = 64                        // a key's queue in the queue map
	memSession   = 32 + memMapSlot + memDue
	memFence     = 40          // a map slot (string key + uint64)
	memTomb      = 72 + memDue // a key's tombstone slot
	memTombEntry = 24
	memReq       = 64 + memMapSlot // a request id's queue slot and index slot
)

// MemoryUsed returns the key space's accounted size in bytes, the figure
// Config.MaxMemory bounds.
func (t *keySpace) MemoryUsed() int64 { return t.mem + t.reqs.bytes }

// overMemory reports whether the key space is past MaxMemory, so that a
// command that would grow it must be refused.
func (t *keySpace) overMemory() bool {
	return t.cfg.MaxMemory > 0 && t.MemoryUsed() > t.cfg.MaxMemory
}

// errOOM is the native refusal while over MaxMemory.
func (t *keySpace) errOOM() error {
	return errf(ErrOutOfMemory, "%d bytes used, limit %d", t.MemoryUsed(), t.cfg.MaxMemory)
}

var oomReply = reply.NewError(OOMText)

// holdBytes is what one hold of key costs.
func holdBytes(h *hold) int64 {
	n := int64(memHold + len(h.Owner))
	if h.opt != nil {
		n += memHoldOpts + int64(len(h.opt.session)+len(h.opt.meta))
		if h.opt.session != "" {
			n += memSessRef
		}
	}
	return n
}

// metaBytes is what a waiter's metadata costs (a hold's is packed: its
// length counts, with the hold's options).
func metaBytes(m Meta) int64 {
	if len(m) == 0 {
		return 0
	}
	return int64(len(m)*memMetaItem + m.bytes())
}

// valueBytes is what the value v at key costs, holds included: O(1) for
// a Redis value, O(holders) for a lock.
func valueBytes(key string, v *Value) int64 {
	if v.Kind() != KindLock {
		return memRedisValue + int64(len(key)) + v.bodyBytes()
	}
	l := v.lock()
	n := int64(memLock + len(key))
	for i := 0; i < l.numHolders(); i++ {
		n += holdBytes(l.holder(i))
	}
	return n
}

// bodyBytes is a Redis value's content: a string's length, or the
// running count of a collection (valueData.mem).
func (v *Value) bodyBytes() int64 {
	if v.Kind() == KindString {
		return int64(len(v.Str))
	}
	return v.valueData.mem
}

// grow adds n bytes of content to the collection v (n < 0 shrinks it).
func (t *keySpace) grow(v *Value, n int64) {
	v.valueData.mem += n
	t.mem += n
}

// scanBody computes a collection's content from scratch (Restore, and
// tests that check the running counts).
func scanBody(v *Value) int64 {
	var n int64
	switch v.Kind() {
	case KindHash:
		for f, b := range v.Hash {
			n += memHashField + int64(len(f)+len(b))
		}
	case KindSet:
		for m := range v.Set {
			n += memSetMember + int64(len(m))
		}
	case KindZSet:
		for m := range v.ZSet {
			n += memZSetMember + int64(len(m))
		}
	case KindList:
		for _, e := range v.List {
			n += memListItem + int64(len(e))
		}
	}
	return n
}

func waiterBytes(w *Waiter) int64 {
	n := int64(memWaiter+len(w.ID)+len(w.Owner)+len(w.Session)) + metaBytes(w.Meta)
	for _, k := range w.Keys {
		n += memWaiterKey + int64(len(k))
	}
	if w.Session != "" {
		n += memSessRef
	}
	return n
}

func queueBytes(key string) int64 { return memQueue + int64(len(key)) }

func sessionBytes(s *Session) int64 { return memSession + int64(len(s.ID)) }

func fenceBytes(key string) int64 { return memFence + int64(len(key)) }

// tombBytes is what key's tombstone tb costs (0 when it has no entries:
// then it is not stored).
func tombBytes(key string, tb tombstone) int64 {
	if len(tb.recent) == 0 {
		return 0
	}
	n := int64(memTomb + len(key))
	for _, e := range tb.recent {
		n += memTombEntry + int64(len(e.owner))
	}
	return n
}

func reqBytes(e *reqEntry) int64 { return memReq + int64(len(e.id)) }

// recountMemory computes t.mem from the state alone, as Restore needs it
// and as tests compare it with the running count. Collections are taken
// at their running counts (scanBody checks those).
func (t *Table) recountMemory() int64 {
	var n int64
	for k, v := range t.keys {
		n += valueBytes(k, v)
	}
	for _, w := range t.waiters {
		n += waiterBytes(w)
	}
	for k := range t.queues {
		n += queueBytes(k)
	}
	for _, s := range t.sessions {
		n += sessionBytes(s)
	}
	for k := range t.fences {
		n += fenceBytes(k)
	}
	for k, tb := range t.tombs {
		n += tombBytes(k, tb)
	}
	return n
}
