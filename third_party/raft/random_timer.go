package raft

import (
	"math/rand"
	"time"
)

// randomTimer is randomTimeout on one reused timer (locknode): a
// replicator waits for its next trigger with a CommitTimeout resend
// beside it, once per AppendEntries, and a new time.After each time
// allocated a timer and its channel per request and follower. Only the
// goroutine that owns it receives from its channel.
type randomTimer struct{ t *time.Timer }

func newRandomTimer() *randomTimer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &randomTimer{t: t}
}

// reset restarts the timer to fire once after between minVal and twice
// minVal, as randomTimeout, and returns its channel; nil (never fires)
// for a zero minVal. A firing of the previous period not yet received is
// dropped.
func (rt *randomTimer) reset(minVal time.Duration) <-chan time.Time {
	rt.stop()
	if minVal == 0 {
		return nil
	}
	extra := time.Duration(rand.Int63()) % minVal
	rt.t.Reset(minVal + extra)
	return rt.t.C
}

// stop stops the timer and drops a firing not yet received.
func (rt *randomTimer) stop() {
	if !rt.t.Stop() {
		select {
		case <-rt.t.C:
		default:
		}
	}
}
