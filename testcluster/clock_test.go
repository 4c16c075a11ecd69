package testcluster

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestWallShifted checks that a wall-clock step moves what UnixMilli
// reads and nothing that Sub, Before or Equal measure, with and without
// a monotonic reading in the input (inside a synctest bubble time.Now
// has none), and that it fails if time.Time's layout ever changes.
func TestWallShifted(t *testing.T) {
	check := func(t *testing.T) {
		for _, d := range []time.Duration{time.Second, -time.Second, 24 * time.Hour, -24 * time.Hour, 1500 * time.Millisecond} {
			a := time.Now()
			b := a.Add(250 * time.Millisecond)
			sa, ok := wallShifted(a, 0)
			if !ok {
				t.Fatalf("wallShifted(now, 0) refused")
			}
			sb, ok := wallShifted(b, d)
			if !ok {
				t.Fatalf("wallShifted(now, %v) refused", d)
			}
			if got := sb.UnixNano() - b.UnixNano(); got != int64(d) {
				t.Errorf("shift %v: the wall moved by %v", d, time.Duration(got))
			}
			if got := sb.Sub(sa); got != 250*time.Millisecond {
				t.Errorf("shift %v: Sub across it measured %v, want the monotonic 250ms", d, got)
			}
			if !sa.Before(sb) || sb.Before(sa) {
				t.Errorf("shift %v: order follows the wall, not the monotonic reading", d)
			}
			back, _ := wallShifted(sb, -d)
			if back.UnixNano() != b.UnixNano() || !back.Equal(sb) {
				t.Errorf("shift %v and back: wall %v (want %v), equal to the shifted reading %v", d, back.UnixNano(), b.UnixNano(), back.Equal(sb))
			}
		}
	}
	t.Run("real", check)
	t.Run("bubble", func(t *testing.T) { synctest.Test(t, check) })
}

// TestJumpWallClock checks a node clock's wall steps: the reading's wall
// part moves, its monotonic progress does not, and a step back undoes it.
func TestJumpWallClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newSkewClock()
		a := c.Now()
		if err := c.jumpWall(-time.Hour); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second)
		b := c.Now()
		if got := b.Sub(a); got != time.Second {
			t.Errorf("elapsed across a wall step back of an hour: %v, want 1s", got)
		}
		if got := b.UnixMilli() - a.UnixMilli(); got != (time.Second - time.Hour).Milliseconds() {
			t.Errorf("wall moved %d ms, want %d", got, (time.Second - time.Hour).Milliseconds())
		}
		if err := c.jumpWall(time.Hour); err != nil {
			t.Fatal(err)
		}
		if got := c.Now().UnixMilli() - a.UnixMilli(); got != time.Second.Milliseconds() {
			t.Errorf("after the step forward the wall is %d ms on, want 1000", got)
		}
	})
}

// TestScheduleClockJumps checks that naming FaultClockJump adds wall
// steps of a second to a day, both ways, and leaves the seed's other
// steps as they were.
func TestScheduleClockJumps(t *testing.T) {
	kinds := []FaultKind{FaultPartition, FaultCrash, FaultSkew, FaultDiskFull}
	for seed := uint64(1); seed <= 20; seed++ {
		without := NewSchedule(seed, 3, 20*time.Second, kinds...)
		with := NewSchedule(seed, 3, 20*time.Second, append(kinds, FaultClockJump)...)
		var others []Step
		for _, st := range with.Steps {
			if st.Kind != FaultClockJump {
				others = append(others, st)
				continue
			}
			if a := st.Offset.Abs(); a < time.Second || a > 24*time.Hour || len(st.Nodes) != 1 {
				t.Fatalf("seed %d: clock jump %v", seed, st)
			}
		}
		if len(others) == len(with.Steps) {
			continue
		}
		for i := range min(len(others), len(without.Steps)) {
			if others[i].String() != without.Steps[i].String() {
				t.Fatalf("seed %d: step %d is %v with clock jumps, %v without", seed, i, others[i], without.Steps[i])
			}
		}
	}
	n := 0
	for seed := uint64(1); seed <= 20; seed++ {
		for _, st := range NewSchedule(seed, 3, 20*time.Second, FaultPartition, FaultClockJump).Steps {
			if st.Kind == FaultClockJump {
				n++
			}
		}
	}
	if n == 0 {
		t.Fatal("no clock jump in 20 schedules")
	}
}
