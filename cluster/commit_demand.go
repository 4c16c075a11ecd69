package cluster

import (
	"sync"
	"sync/atomic"
)

// Commit push on demand. The raft fork can push each new commit index to
// the followers at once (third_party/raft FORK.md), and a follower tells
// the leader in every AppendEntries answer whether it wants that. A
// follower wants it while something on it waits for entries that other
// nodes' requests commit: a blocked acquire (the waiter registry), an
// Observe, or what an AddCommitDemand function reports (the Redis
// bridge's subscribers and tracking clients). What it forwards itself
// needs no push: the answer carries the commit hint. A follower that wants
// nothing still learns every commit, from the next AppendEntries (or
// CommitTimeout), only later; the leader saves two messages per follower
// per commit and the follower an apply wake-up.

// commitPushFilter is the raft fork's way to ask a follower whether it
// wants the push; upstream raft pushes nothing and has no such method.
type commitPushFilter interface {
	LocknodeWantCommits(fn func() bool)
}

// commitDemands holds the functions added with AddCommitDemand.
type commitDemands struct {
	mu   sync.Mutex
	list atomic.Pointer[[]*commitDemandFn] // copied on write: read per answer
}

type commitDemandFn struct{ fn func() bool }

// AddCommitDemand registers fn, asked while this node is a follower
// whether something outside the cluster package waits for this node's
// applies of what others commit (for example Redis pub/sub subscribers):
// while it reports true the leader pushes this node each commit at once
// rather than with its next AppendEntries. fn is called on raft's
// AppendEntries path, so it must be cheap and never block. The returned
// function removes it.
func (n *leaderTerm) AddCommitDemand(fn func() bool) (remove func()) {
	return n.demands.add(fn)
}

// add registers fn; the returned function removes it. The list also
// serves AddChangeDemand's functions (change_demand.go).
func (d *commitDemands) add(fn func() bool) (remove func()) {
	e := &commitDemandFn{fn: fn}
	d.update(func(cur []*commitDemandFn) []*commitDemandFn { return append(cur, e) })
	return func() {
		d.update(func(cur []*commitDemandFn) []*commitDemandFn {
			for i, x := range cur {
				if x == e {
					return append(cur[:i], cur[i+1:]...)
				}
			}
			return cur
		})
	}
}

// any reports whether one of the functions reports true.
func (d *commitDemands) any() bool {
	if p := d.list.Load(); p != nil {
		for _, e := range *p {
			if e.fn() {
				return true
			}
		}
	}
	return false
}

// update replaces the list with edit's result on a copy of it.
func (d *commitDemands) update(edit func([]*commitDemandFn) []*commitDemandFn) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var cur []*commitDemandFn
	if p := d.list.Load(); p != nil {
		cur = append(cur, *p...)
	}
	next := edit(cur)
	d.list.Store(&next)
}

// wantsCommits reports whether this node, as a follower, wants the leader
// to push each commit at once.
func (n *leaderTerm) wantsCommits() bool {
	return n.hub.WantsApplies() || n.demands.any()
}
