package cluster

import "sync/atomic"

// Keyspace events on demand. The table emits Redis keyspace
// notifications (fsm.EvKeyspace) only while a front end wants them (the
// Redis bridge with notify-keyspace-events on): they are output of each
// entry, several per command, and cost an apply nothing when off. The
// setting is this node's alone; every replica changes its table alike
// either way.

// keyspaceDemand counts the front ends that want keyspace events.
type keyspaceDemand struct{ n atomic.Int32 }

// want registers one more; the returned function (call it once) ends it.
func (d *keyspaceDemand) want() (done func()) {
	d.n.Add(1)
	var once atomic.Bool
	return func() {
		if once.CompareAndSwap(false, true) {
			d.n.Add(-1)
		}
	}
}

// on reports whether any front end wants keyspace events.
func (d *keyspaceDemand) on() bool { return d.n.Load() > 0 }

// WantKeyspaceEvents makes the entries this node applies from the next
// batch on carry fsm.EvKeyspace events to Subscribe's functions, until
// done is called (once); several callers may want them at once.
func (n *Node) WantKeyspaceEvents() (done func()) { return n.keyspace.want() }

// WantKeyspaceEvents is Node.WantKeyspaceEvents.
func (l *Local) WantKeyspaceEvents() (done func()) { return l.keyspace.want() }
