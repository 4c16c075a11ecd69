package lockservice

import (
	"context"
	"io"
	"time"

	"github.com/locknode/locknode/fsm"
)

// The replica helpers a cluster.Node and a Local share.

// Clock is what stamps commands: the node's monotonic and wall time
// (cluster.Clock has the same method, so either one serves).
type Clock interface {
	Now() time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// SystemClock is the default Clock (time.Now).
var SystemClock Clock = systemClock{}

// ReadTime is the cluster time a linearizable read of t is evaluated at,
// given the leader's clock: the leader's clock, but never at or past a
// deadline the log has not reached yet.
//
// The leader's clock runs ahead of the log between commands, and nothing
// commits it: a new leader continues from a lower bound of it (the last
// committed time plus the time the new leader saw pass since it applied
// that entry: the time rule), not from what the old one's clock showed. A read at the
// old leader's clock could therefore call a hold expired that every
// later write, stamped by the new leader, still finds alive: the owner's
// extend succeeds, or the lock is granted to another only after the
// owner released it (DESIGN.md properties 4 and 6 would conflict).
//
// Every later entry carries a time >= t.Now() (the FSM's clock only moves
// forward, and a new leader starts from it). Every deadline that decides
// what a read sees (leases, waits, sessions, value TTLs, lock-delays) is
// in the due schedule, so no deadline lies in (t.Now(), NextDeadline):
// any time in that range gives the same answers as t.Now() itself, an
// instant every later write comes after. Past it, the read waits for the
// leader's Tick like every write does. Remaining TTLs are reported at the
// later time, so they are never longer than the leader's clock implies
// by more than the Tick that is due.
func ReadTime(t *fsm.Table, leaderNow int64) int64 {
	applied := t.Now()
	if leaderNow <= applied {
		return applied
	}
	if at, ok := t.NextDeadline(); ok && at <= leaderNow {
		return max(applied, at-1)
	}
	return leaderNow
}

// EncodedSizeHint is a little more than cmd's encoded size (fixed fields
// and varint lengths are guessed high), so the proposal is encoded into
// one allocation.
func EncodedSizeHint(c *fsm.Command) int {
	n := 64 + len(c.ReqID) + len(c.Key) + len(c.Owner) + len(c.Session) + len(c.Script)
	for _, k := range c.Keys {
		n += len(k) + 5
	}
	for _, a := range c.Args {
		n += len(a) + 5
	}
	for _, a := range c.KeysB {
		n += len(a) + 5
	}
	for _, m := range c.Multi {
		for _, a := range m {
			n += len(a) + 5
		}
		n += 5
	}
	for _, w := range c.Watch {
		n += len(w.Key) + 15
	}
	return n
}

// WaitIndex blocks until current reports idx reached, ctx ends
// (ctx.Err()) or closed is closed (ErrClosed). current returns the index
// and a channel closed when it grows: the wait needs no polling.
func WaitIndex(ctx context.Context, idx uint64, current func() (uint64, <-chan struct{}), closed <-chan struct{}) error {
	for {
		a, ch := current()
		if a >= idx {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-closed:
			return ErrClosed
		}
	}
}

// ContextWriter stops a long write to W once Ctx ends.
type ContextWriter struct {
	Ctx context.Context
	W   io.Writer
}

func (c ContextWriter) Write(p []byte) (int, error) {
	if err := c.Ctx.Err(); err != nil {
		return 0, err
	}
	return c.W.Write(p)
}
