package fsm

import (
	"bytes"
	"slices"
	"testing"
)

// The parts of a Table (docs/DESIGN.md "The parts of the table") meet
// each other only through these interfaces.
var (
	_ keyLocks   = (*lockSpace)(nil)
	_ redisLocks = (*lockSpace)(nil)
)

// fakeLocks stands for the lock ops behind the key-space core and the
// Redis commands: it records what they ask of it.
type fakeLocks struct {
	calls []string
	setNX bool // redisSetNX's answer
}

func (f *fakeLocks) lockDeleted(_ *applyCtx, key string, _ *Lock, _ Reason) {
	f.calls = append(f.calls, "lockDeleted "+key)
}
func (f *fakeLocks) keyFreed(_ *applyCtx, key string) { f.calls = append(f.calls, "keyFreed "+key) }
func (f *fakeLocks) holdDeadline(h *hold) int64       { return h.Deadline }
func (f *fakeLocks) redisSetNX(_ *applyCtx, key string, token []byte, _ int64) bool {
	f.calls = append(f.calls, "redisSetNX "+key+" "+string(token))
	return f.setNX
}
func (f *fakeLocks) redisLockExpire(_ *applyCtx, key string, _ int64) {
	f.calls = append(f.calls, "redisLockExpire "+key)
}
func (f *fakeLocks) redisLockExpireValue(_ *applyCtx, key string, _ *Value, _ int64) {
	f.calls = append(f.calls, "redisLockExpire "+key)
}
func (f *fakeLocks) redisReleaseByToken(_ *applyCtx, key, token string) bool {
	f.calls = append(f.calls, "redisReleaseByToken "+key+" "+token)
	return false
}
func (f *fakeLocks) redisTombstone(string, string, int64) bool { return false }
func (f *fakeLocks) saveKeyUndo(string) keyLockUndo            { return keyLockUndo{} }
func (f *fakeLocks) restoreKeyUndo(string, keyLockUndo)        {}
func (f *fakeLocks) fenceMark() uint64                         { return 0 }
func (f *fakeLocks) restoreFenceMark(uint64)                   {}
func (f *fakeLocks) revertSessHold(undoSess)                   {}
func (f *fakeLocks) pump(_ *applyCtx, key string)              { f.calls = append(f.calls, "pump "+key) }

// TestKeySpaceCore runs the core alone: values, deadlines and memory are
// its own; of the locks it only tells the lock ops that a key went.
func TestKeySpaceCore(t *testing.T) {
	f := &fakeLocks{}
	ks := newKeySpace(DefaultConfig(), f)
	ctx := &applyCtx{index: 1, now: 100}

	v := newValue(KindString)
	v.Str = []byte("v")
	v.valueData.expireAt = 500
	ks.put(ctx, "s", v)
	if ks.get("s") != v || v.Version != 1 || ks.MemoryUsed() <= 0 {
		t.Fatalf("put: value %v version %d memory %d", ks.get("s"), v.Version, ks.MemoryUsed())
	}
	if at, ok := ks.NextDeadline(); !ok || at != 500 {
		t.Fatalf("NextDeadline = %d, %v; want 500", at, ok)
	}
	if ks.getAt("s", 500) != nil {
		t.Fatal("a value is gone for reads at its deadline")
	}

	l := &Value{}
	l.lock().addHolder().Owner = "tok"
	ks.putLock(ctx, "l", l)
	if ks.nLocks != 1 || ks.nHolds != 1 {
		t.Fatalf("putLock counts %d locks, %d holds", ks.nLocks, ks.nHolds)
	}

	if !ks.del(ctx, "s", ReasonForced) || !ks.del(ctx, "l", ReasonForced) || ks.del(ctx, "l", ReasonForced) {
		t.Fatal("del reports a value only where there was one")
	}
	want := []string{"keyFreed s", "lockDeleted l", "keyFreed l"}
	if !slices.Equal(f.calls, want) {
		t.Fatalf("lock ops told %q, want %q", f.calls, want)
	}
	if ks.MemoryUsed() != 0 || ks.nLocks != 0 || ks.nHolds != 0 || len(ks.keys) != 0 {
		t.Fatalf("after del: memory %d, %d locks, %d holds, %d keys", ks.MemoryUsed(), ks.nLocks, ks.nHolds, len(ks.keys))
	}
}

// TestRedisCommandsReachLocksThroughInterface runs the Redis commands on a
// core with fake lock ops: plain values never reach the lock ops, and SET
// NX, which creates a lock, is theirs to decide.
func TestRedisCommandsReachLocksThroughInterface(t *testing.T) {
	f := &fakeLocks{}
	ks := newKeySpace(DefaultConfig(), f)
	r := &redisTable{keySpace: ks, locks: f}
	ctx := &applyCtx{index: 1, now: 100}
	do := func(args ...string) string { return fmtReply(r.redis(ctx, bargs(args...))) }

	for _, st := range []struct {
		want string
		args []string
	}{
		{"+OK", []string{"SET", "k", "v", "PX", "1000"}},
		{`"v"`, []string{"GET", "k"}},
		{":1000", []string{"PTTL", "k"}},
		{":1", []string{"HSET", "h", "f", "x"}},
		{":2", []string{"DEL", "k", "h"}},
	} {
		if got := do(st.args...); got != st.want {
			t.Fatalf("%v = %s, want %s", st.args, got, st.want)
		}
	}
	if want := []string{"keyFreed k", "keyFreed h"}; !slices.Equal(f.calls, want) {
		t.Fatalf("plain values reached the lock ops: %q", f.calls)
	}

	f.calls = nil
	if got := do("SET", "l", "tok", "NX", "PX", "1000"); got != "nil" {
		t.Fatalf("SET NX refused by the lock ops = %s, want nil", got)
	}
	f.setNX = true
	if got := do("SET", "l", "tok", "NX", "PX", "1000"); got != "+OK" {
		t.Fatalf("SET NX granted by the lock ops = %s, want +OK", got)
	}
	if want := []string{"redisSetNX l tok", "redisSetNX l tok"}; !slices.Equal(f.calls, want) {
		t.Fatalf("SET NX asked the lock ops %q, want %q", f.calls, want)
	}
}

// TestTablePartsShareOneCore checks the wiring of New, and that Restore
// adopts the snapshot's state into the table's own parts: every part
// keeps pointing at the same core and at the same lock ops.
func TestTablePartsShareOneCore(t *testing.T) {
	tab := New(DefaultConfig())
	check := func(when string) {
		t.Helper()
		ks, lt := tab.keySpace, tab.lockTable
		switch {
		case lt.keySpace != ks, tab.sessionTable.keySpace != ks, tab.waitQueue.keySpace != ks,
			tab.scripts.redisTable.keySpace != ks:
			t.Fatalf("%s: a part is not on the table's key space", when)
		case tab.sessionTable.locks != lt, tab.waitQueue.locks != lt, lt.sessionTable != tab.sessionTable,
			tab.waitQueue.sessionTable != tab.sessionTable:
			t.Fatalf("%s: the lock parts are not wired to each other", when)
		case ks.keyLocks != keyLocks(tab.lockSpace), tab.scripts.locks != redisLocks(tab.lockSpace):
			t.Fatalf("%s: the core or the Redis commands do not reach the table's lock ops", when)
		}
	}
	check("New")

	src := New(DefaultConfig())
	src.Apply(1, &Command{Op: OpSessionOpen, Session: "s", TTL: 5000, Time: 10})
	src.Apply(2, &Command{Op: OpAcquire, Key: "a", Owner: "o", TTL: 1000, Session: "s", Time: 10})
	src.Apply(3, &Command{Op: OpAcquire, Key: "a", Owner: "w", TTL: 1000, Wait: 2000, ReqID: "r", Time: 10})
	src.Apply(4, &Command{Op: OpRedis, Args: bargs("SET", "k", "v"), Time: 10})
	var snap bytes.Buffer
	if err := src.Snapshot(&snap); err != nil {
		t.Fatal(err)
	}
	if err := tab.Restore(&snap); err != nil {
		t.Fatal(err)
	}
	check("Restore")
	if st := tab.Stats(); st.Keys != 2 || st.Holds != 1 || st.Waiters != 1 || st.Sessions != 1 {
		t.Fatalf("restored stats %+v", st)
	}
	// The restored parts act together: the session's end hands the lock
	// to the waiter.
	r := tab.Apply(5, &Command{Op: OpSessionClose, Session: "s", Time: 20})
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	if h, ok := tab.HoldOf("a", "w", 20); !ok || h.Fence != 5 {
		t.Fatalf("waiter's hold after the session closed: %+v, %v", h, ok)
	}
}
