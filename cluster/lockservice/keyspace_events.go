package lockservice

import "sync/atomic"

// Keyspace events on demand. The table emits Redis keyspace
// notifications (fsm.EvKeyspace) only while a front end wants them (the
// Redis bridge with notify-keyspace-events on): they are output of each
// entry, several per command, and cost an apply nothing when off. The
// setting is this node's alone; every replica changes its table alike
// either way.

// KeyspaceDemand counts the front ends that want keyspace events.
type KeyspaceDemand struct{ n atomic.Int32 }

// Want registers one more; the returned function (call it once) ends it.
func (d *KeyspaceDemand) Want() (done func()) {
	d.n.Add(1)
	var once atomic.Bool
	return func() {
		if once.CompareAndSwap(false, true) {
			d.n.Add(-1)
		}
	}
}

// On reports whether any front end wants keyspace events.
func (d *KeyspaceDemand) On() bool { return d.n.Load() > 0 }

// WantKeyspaceEvents makes the entries applied from the next one on
// carry fsm.EvKeyspace events to Subscribe's functions, until done is
// called (once), as cluster.Node.WantKeyspaceEvents does.
func (l *Local) WantKeyspaceEvents() (done func()) { return l.keyspace.Want() }
