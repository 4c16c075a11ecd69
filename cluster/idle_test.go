package cluster

import (
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// loopClock is the system clock, counting the readings the leader's tick
// loop takes: one or more each time the loop wakes.
type loopClock struct{ reads atomic.Int64 }

func (c *loopClock) Now() time.Time {
	pc := make([]uintptr, 8)
	frames := runtime.CallersFrames(pc[:runtime.Callers(2, pc)])
	for {
		f, more := frames.Next()
		if strings.HasSuffix(f.Function, ".tickLoop") {
			c.reads.Add(1)
			break
		}
		if !more {
			break
		}
	}
	return time.Now()
}

func tickCount(t *testing.T, n *Node) float64 {
	t.Helper()
	var m dto.Metric
	if err := n.metrics.ticks.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// An idle leader whose table holds nothing with a deadline sleeps until
// the clock sync is due (or an applied batch kicks it) instead of waking
// every TickInterval; the clock sync's Ticks still come. (A table
// deadline keeps the TickInterval bound: the expiry tests cover it.)
func TestIdleLeaderTickLoopSleepsUntilClockSync(t *testing.T) {
	const (
		tickInterval = 5 * time.Millisecond
		syncInterval = 300 * time.Millisecond
		window       = time.Second
	)
	clocks := map[string]*loopClock{}
	tc := newTestCluster(t, 3, func(c *Config) {
		lc := &loopClock{}
		clocks[c.ID] = lc
		c.Clock = lc
		c.TickInterval = tickInterval
		c.ClockSyncInterval = syncInterval
	})
	l := tc.leader(10 * time.Second)
	// Let the term's first Ticks settle.
	tc.eventually(10*time.Second, "the leader's first tick", func() bool { return tickCount(t, l) >= 1 })
	lc := clocks[l.id]
	ticks0, reads0 := tickCount(t, l), lc.reads.Load()
	start := time.Now()
	time.Sleep(window) // the measured interval itself, not a synchronisation
	el := time.Since(start)
	ticks, reads := tickCount(t, l)-ticks0, lc.reads.Load()-reads0
	t.Logf("in %v: %v clock-sync ticks, %d tick-loop clock readings", el, ticks, reads)
	// A sync Tick every 300 ms: at least two in a second even with the
	// machine busy (a Tick can come late, never early).
	if ticks < 2 {
		t.Fatalf("%v Ticks in %v with ClockSyncInterval %v: the clock sync stopped", ticks, el, syncInterval)
	}
	// Polling every TickInterval reads the clock at least el/5ms = 200
	// times; each sync Tick costs a few readings (the timer, the apply's
	// kick, the next wait).
	if limit := int64(10 * (ticks + 2)); reads > limit {
		t.Fatalf("the tick loop read the clock %d times in %v (%v Ticks): it still polls every TickInterval (want <= %d)", reads, el, ticks, limit)
	}

}
