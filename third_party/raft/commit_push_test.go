package raft

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// locknode fork: followers learn a commit from the AppendEntries the
// leader sends as soon as its commit index advances, not from the
// CommitTimeout resend. With CommitTimeout far longer than the test's
// deadline, every follower still applies each entry at once.
func TestCommitPush_FollowersApplyWithoutCommitTimeout(t *testing.T) {
	const commitTimeout = time.Hour
	c := makeGatedClusterConf(t, func(conf *Config) { conf.CommitTimeout = commitTimeout })
	l := c.leader(t)
	base := make([]int, len(c.fsms))
	for i, fsm := range c.fsms {
		base[i] = len(fsm.Logs())
	}
	for k := 1; k <= 5; k++ {
		if err := c.rafts[l].Apply([]byte(fmt.Sprintf("e%d", k)), 5*time.Second).Error(); err != nil {
			t.Fatal(err)
		}
		for i, fsm := range c.fsms {
			// waitFor's 10 s deadline is far below CommitTimeout: only
			// the push can make the follower apply in time.
			waitFor(t, fmt.Sprintf("fsm %d to apply entry %d", i, k), func() bool {
				return len(fsm.Logs()) >= base[i]+k
			})
		}
	}
}

// locknode fork: a follower that says it does not want the commit push
// (LocknodeWantCommits) is not sent it, and gets it again once it says it
// does. Heartbeats carry no commit index and CommitTimeout is an hour, so
// a follower learns of a commit within the test only from the push or
// from the next entries' AppendEntries.
func TestCommitPush_OnlyToFollowersThatWantIt(t *testing.T) {
	c := makeGatedClusterConf(t, func(conf *Config) { conf.CommitTimeout = time.Hour })
	l := c.leader(t)
	quiet, other := (l+1)%3, (l+2)%3
	var want atomic.Bool
	c.rafts[quiet].LocknodeWantCommits(want.Load)
	var repl *followerReplication
	waitFor(t, "the leader to hear that the follower wants no push", func() bool {
		c.rafts[l].leaderLock.Lock()
		defer c.rafts[l].leaderLock.Unlock()
		repl = c.rafts[l].leaderState.replState[c.rafts[quiet].localID]
		return repl != nil && repl.noCommitPush.Load()
	})

	f := c.rafts[l].Apply([]byte("unpushed"), 5*time.Second)
	if err := f.Error(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the follower that wants the push to apply the entry", func() bool {
		return c.rafts[other].AppliedIndex() >= f.Index()
	})
	// The entry reached the quiet follower with the commit index before
	// it; nothing has told it of the entry's own commit.
	if got := c.rafts[quiet].getCommitIndex(); got >= f.Index() {
		t.Fatalf("follower that wants no push knows commit index %d >= %d", got, f.Index())
	}

	want.Store(true)
	waitFor(t, "the leader to hear that the follower wants the push", func() bool {
		return !repl.noCommitPush.Load()
	})
	f = c.rafts[l].Apply([]byte("pushed"), 5*time.Second)
	if err := f.Error(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the follower that wants the push again to apply the entry", func() bool {
		return c.rafts[quiet].AppliedIndex() >= f.Index()
	})
}
