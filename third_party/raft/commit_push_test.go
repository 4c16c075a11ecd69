package raft

import (
	"fmt"
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
