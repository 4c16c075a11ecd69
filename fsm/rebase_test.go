package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

const cadScript = `if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`

// rebaseSetup builds a table with every kind of timed state at base:
// holds with a TTL, a session, a max hold and a lock-delay, a semaphore,
// a queued waiter, a lock-delay running, Redis values with deadlines, a remembered request id
// and a release tombstone.
func rebaseSetup(t *testing.T, base int64) *Table {
	t.Helper()
	tb := New(Config{})
	b := func(s ...string) [][]byte {
		out := make([][]byte, len(s))
		for i, x := range s {
			out[i] = []byte(x)
		}
		return out
	}
	cmds := []*Command{
		{Op: OpAcquire, Key: "dl", Owner: "o0", TTL: 100, LockDelay: 5_000},
		{Op: OpSessionOpen, Session: "s1", TTL: 30_000},
		{Op: OpAcquire, Key: "a", Owner: "o1", TTL: 10_000, ReqID: "r1", MaxHold: 20_000, LockDelay: 500},
		{Op: OpAcquire, Key: "a", Owner: "o2", TTL: 5_000, Wait: 8_000, ReqID: "w1", Meta: Meta{{Name: "host", Value: "h2"}}},
		{Op: OpAcquire, Key: "b", Owner: "o3", TTL: 15_000, Session: "s1"},
		{Op: OpAcquire, Key: "sem", Owner: "o4", TTL: 12_000, Mode: Semaphore, Permits: 2},
		{Op: OpRedis, Args: b("SET", "v", "x", "PX", "7000")},
		{Op: OpRedis, Args: b("SET", "rl", "tok", "NX", "PX", "9000")},
		{Op: OpEval, Script: []byte(cadScript), KeysB: b("rl"), Args: b("tok")},
		{Op: OpRedis, Args: b("HSET", "h", "f", "1")},
		{Op: OpRedis, Args: b("PEXPIRE", "h", "11000")},
		{Op: OpExtend, Key: "a", Owner: "o1", TTL: 10_000},
	}
	for i, c := range cmds {
		c.Time = base + int64(i)*100
		r := tb.Apply(uint64(i+1), c)
		if r.Err != nil || r.Reply.IsError() {
			t.Fatalf("setup %d (%v): %v %+v", i, c.Op, r.Err, r.Reply)
		}
	}
	return tb
}

// TestRebaseIsAShiftedHistory: a table re-based by d is byte for byte the
// table the same commands build d ms later (so no timed field is left
// behind), and from then on it decides every command as the original
// decides it d ms earlier, through every expiry, hand-off and lock-delay.
func TestRebaseIsAShiftedHistory(t *testing.T) {
	const base, d = int64(1_700_000_000_000), int64(3_600_000)
	orig := rebaseSetup(t, base)
	re := New(Config{})
	if err := re.Restore(bytes.NewReader(snapBytes(t, orig))); err != nil {
		t.Fatal(err)
	}
	if err := re.Rebase(d); err != nil {
		t.Fatal(err)
	}
	if want := snapBytes(t, rebaseSetup(t, base+d)); !bytes.Equal(snapBytes(t, re), want) {
		t.Fatal("the re-based snapshot differs from the history shifted by d")
	}
	if re.Now() != orig.Now()+d {
		t.Fatalf("now %d, want %d", re.Now(), orig.Now()+d)
	}

	// The same steps, d later on the re-based table, for 30 s: every
	// lease, wait, session and value ends on the way.
	idx := orig.AppliedIndex()
	desc := func(r Result, shift int64) string {
		dl := r.Deadline
		if dl != 0 {
			dl -= shift
		}
		var evs []string
		for _, e := range r.Events {
			evs = append(evs, fmt.Sprintf("%v/%s/%s/%v", e.Kind, e.Key, e.Owner, e.Reason))
		}
		return fmt.Sprintf("err=%v granted=%v queued=%v fence=%d deadline=%d count=%d released=%v reply=%+v events=%v",
			r.Err, r.Granted, r.Queued, r.Fence, dl, r.Count, r.Released, r.Reply, evs)
	}
	for k := int64(1); k <= 60; k++ {
		var cmd Command
		switch k % 5 {
		case 0:
			cmd = Command{Op: OpAcquire, Key: "a", Owner: fmt.Sprintf("n%d", k), TTL: 2_000}
		case 1:
			cmd = Command{Op: OpRedis, Args: [][]byte{[]byte("PTTL"), []byte("h")}}
		case 2:
			cmd = Command{Op: OpAcquire, Key: "rl", Owner: "tok", TTL: 1_000, ReqID: "r1"}
		case 3:
			cmd = Command{Op: OpSessionKeepAlive, Session: "s1"}
		default:
			cmd = Command{Op: OpTick}
		}
		idx++
		c1, c2 := cmd, cmd
		c1.Time = base + 2_000 + k*500
		c2.Time = c1.Time + d
		r1, r2 := orig.Apply(idx, &c1), re.Apply(idx, &c2)
		if a, b := desc(r1, 0), desc(r2, d); a != b {
			t.Fatalf("step %d (%v):\n original %s\n rebased  %s", k, cmd.Op, a, b)
		}
	}
	if err := orig.Rebase(d); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapBytes(t, orig), snapBytes(t, re)) {
		t.Fatal("after the same steps the tables differ by more than d")
	}
}

// TestRebaseRefuses: the clock never moves back, and a shift that would
// overflow FSM times changes nothing.
func TestRebaseRefuses(t *testing.T) {
	tb := rebaseSetup(t, 1_000_000)
	before := snapBytes(t, tb)
	for _, d := range []int64{-1, 1 << 62} {
		if err := tb.Rebase(d); !errors.Is(err, ErrBadRebase) {
			t.Fatalf("Rebase(%d) = %v", d, err)
		}
	}
	if err := tb.Rebase(0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, snapBytes(t, tb)) {
		t.Fatal("a refused or empty rebase changed the table")
	}
}
