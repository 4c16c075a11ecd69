package cluster

import (
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
)

// skewClock is a node clock off by offset and running at rate.
type skewClock struct {
	base   time.Time
	offset time.Duration
	rate   float64
}

func (c skewClock) Now() time.Time {
	return c.base.Add(c.offset + time.Duration(float64(time.Since(c.base))*c.rate))
}

// Wall-clock offsets between nodes never shorten a lease across a leader
// change: the cluster clock continues from the FSM's time.
func TestClockOffsetsNeverShortenLeases(t *testing.T) {
	base := time.Now()
	offsets := []time.Duration{time.Hour, -time.Hour, 37 * time.Minute}
	i := 0
	tc := newTestCluster(t, 3, func(c *Config) {
		c.Clock = skewClock{base: base, offset: offsets[i], rate: 1}
		i++
	})
	ctx := ctxT(t, 30*time.Second)
	for round := 0; round < 2; round++ {
		l := tc.leader(10 * time.Second)
		var f *Node
		for _, n := range tc.nodes {
			if n != nil && n != l {
				f = n
				break
			}
		}
		key := []string{"a", "b"}[round]
		before := time.Now()
		held, err := f.TryAcquire(ctx, api.AcquireRequest{Key: key, Owner: "o", TTLMs: 1200})
		if err != nil {
			t.Fatal(err)
		}
		if round == 0 {
			// Crash the leader under the lease; a node with another
			// offset takes over.
			tc.kill(tc.index(l))
		}
		tc.waitState(f, 10*time.Second, "lease over", func(tb *fsm.Table, now int64) bool {
			_, ok := tb.HoldOf(key, "o", now)
			return !ok && tb.Now() >= held.Deadline
		})
		if d := time.Since(before); d < 1200*time.Millisecond {
			t.Fatalf("round %d: lease of 1200ms ended after %v", round, d)
		} else {
			t.Logf("round %d: lease of 1200ms ended after %v", round, d)
		}
	}
}
