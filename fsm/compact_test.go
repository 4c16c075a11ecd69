package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"strconv"
	"testing"

	"github.com/locknode/locknode/fsm/reply"
)

// Tests of the compact representations (mem_bench_test.go measures them):
// the request-id queue, the per-lock due time, and the options kept
// behind pointers.

// TestReqIDForgottenThenReused: a timed-out waiter's id is forgotten at
// once while its slot stays queued; the id is reused for a new acquire,
// and that entry must survive the old slot being reclaimed, answer
// retries, survive a snapshot, and be evicted in its own turn.
func TestReqIDForgottenThenReused(t *testing.T) {
	h := &harness{t: t, tab: New(Config{MaxReqIDs: 3})}
	h.apply(Command{Op: OpAcquire, Key: "k", Owner: "a", TTL: 10_000, ReqID: "a1", Time: 1})
	if r := h.apply(Command{Op: OpAcquire, Key: "k", Owner: "b", TTL: 1000, Wait: 100, ReqID: "w", Time: 2}); !r.Queued {
		t.Fatalf("queue: %+v", r)
	}
	h.apply(Command{Op: OpTick, Time: 200}) // w times out: forgotten
	if h.tab.reqs.get("w") != nil {
		t.Fatal("timed-out waiter's id still remembered")
	}
	r := h.apply(Command{Op: OpAcquire, Key: "j", Owner: "b", TTL: 1000, ReqID: "w", Time: 201})
	if !r.Granted || r.Fence != 4 {
		t.Fatalf("reuse: %+v", r)
	}
	// Fill up to MaxReqIDs: a1 and the dead slot of the first w go first.
	h.apply(Command{Op: OpExtend, Key: "k", Owner: "a", TTL: 10_000, ReqID: "e1", Time: 202})
	h.apply(Command{Op: OpExtend, Key: "k", Owner: "a", TTL: 10_000, ReqID: "e2", Time: 203})
	if h.tab.reqs.get("a1") != nil || h.tab.Stats().ReqIDs != 3 {
		t.Fatalf("oldest not evicted: %d remembered", h.tab.Stats().ReqIDs)
	}
	retry := h.apply(Command{Op: OpAcquire, Key: "j", Owner: "b", TTL: 1000, ReqID: "w", Time: 204})
	if !retry.Granted || retry.Fence != 4 || len(retry.Events) != 0 {
		t.Fatalf("retry of w: %+v", retry)
	}
	if r := h.apply(Command{Op: OpRelease, Key: "j", Owner: "x", ReqID: "w", Time: 205}); !errors.Is(r.Err, ErrBadCommand) {
		t.Fatalf("w reused by another command: %+v", r)
	}
	if err := checkRoundTrip(h.tab); err != nil {
		t.Fatal(err)
	}
	n := New(h.tab.cfg)
	if err := n.Restore(bytes.NewReader(snap(t, h.tab))); err != nil {
		t.Fatal(err)
	}
	if e := n.reqs.get("w"); e == nil || e.fence != 4 {
		t.Fatalf("restored entry of w: %+v", e)
	}
	h.apply(Command{Op: OpExtend, Key: "k", Owner: "a", TTL: 10_000, ReqID: "e3", Time: 206})
	if h.tab.reqs.get("w") != nil || h.tab.reqs.get("e1") == nil {
		t.Fatal("w not evicted in its turn")
	}
}

// TestReqIDQueueReusesItsSlots: at the MaxReqIDs bound the queue stops
// growing, whatever the number of remembered commands.
func TestReqIDQueueReusesItsSlots(t *testing.T) {
	h := &harness{t: t, tab: New(Config{MaxReqIDs: 100})}
	h.apply(Command{Op: OpAcquire, Key: "k", Owner: "a", TTL: 10_000, Time: 1})
	for i := 0; i < 10_000; i++ {
		r := h.apply(Command{Op: OpExtend, Key: "k", Owner: "a", TTL: 10_000, ReqID: "e" + strconv.Itoa(i), Time: 2})
		if !r.Granted {
			t.Fatalf("extend %d: %+v", i, r)
		}
	}
	x := &h.tab.reqs
	if x.len() != 100 || cap(x.fifo) > 200 {
		t.Fatalf("%d remembered in a queue of capacity %d", x.len(), cap(x.fifo))
	}
	if x.get("e9999") == nil || x.get("e9899") != nil {
		t.Fatal("not the newest 100")
	}
}

// TestHoldDueOneItemPerKey: a lock taken and released in a loop, and a
// lease extended in a loop, keep one pending dueHold item, not one per
// grant; the item still ends the lease in time.
func TestHoldDueOneItemPerKey(t *testing.T) {
	h := newHarness(t)
	for i := 0; i < 1000; i++ {
		h.apply(Command{Op: OpAcquire, Key: "k", Owner: "o", TTL: 30_000, Time: int64(i)})
		h.apply(Command{Op: OpRelease, Key: "k", Owner: "o", Time: int64(i)})
	}
	h.apply(Command{Op: OpAcquire, Key: "k", Owner: "o", TTL: 30_000, Time: 1000})
	for i := 0; i < 1000; i++ {
		h.apply(Command{Op: OpExtend, Key: "k", Owner: "o", TTL: 30_000, Time: 1000 + int64(i)})
	}
	if n := len(h.tab.due[dueHold-1]); n != 1 {
		t.Fatalf("%d dueHold items", n)
	}
	r := h.apply(Command{Op: OpTick, Time: 1999 + 30_000})
	if ev := eventsOf(r, EvReleased); len(ev) != 1 || ev[0].Reason != ReasonExpired {
		t.Fatalf("expiry: %+v", r.Events)
	}
}

// TestOptionsBehindPointers: holds and locks that use the rarely used
// fields read them back through queries and snapshots unchanged.
func TestOptionsBehindPointers(t *testing.T) {
	h := newHarness(t)
	h.apply(Command{Op: OpSessionOpen, Session: "s", TTL: 5000, Time: 1})
	h.apply(Command{Op: OpAcquire, Key: "a", Owner: "o", Session: "s", LockDelay: 50, MaxHold: 3000, Time: 1,
		Meta: Meta{{"host", "h1"}, {"pid", "7"}}})
	h.apply(Command{Op: OpAcquire, Key: "sem", Owner: "o", Mode: Semaphore, Permits: 3, TTL: 100, LockDelay: 20, Time: 1})
	got, ok := h.tab.HoldOf("a", "o", 1)
	want := Hold{Owner: "o", Count: 1, Fence: 2, Deadline: 3001, Session: "s", LockDelay: 50, HardLimit: 3001,
		Meta: Meta{{"host", "h1"}, {"pid", "7"}}, Granted: 1}
	if !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("hold: %+v, want %+v", got, want)
	}
	h.apply(Command{Op: OpTick, Time: 101}) // sem expires into its lock-delay
	li, err := h.tab.Inspect("sem", 101)
	if err != nil || li.Kind != KindLock || li.Permits != 3 || len(li.Holders) != 0 || li.DelayUntil != 121 {
		t.Fatalf("lock-delay: %+v %v", li, err)
	}
	if err := checkRoundTrip(h.tab); err != nil {
		t.Fatal(err)
	}
	if r := h.apply(Command{Op: OpAcquire, Key: "sem", Owner: "p", Mode: Semaphore, Permits: 3, TTL: 100, Time: 110}); !errors.Is(r.Err, ErrLockDelay) {
		t.Fatalf("during lock-delay: %+v", r)
	}
	if r := h.apply(Command{Op: OpAcquire, Key: "sem", Owner: "p", Mode: Semaphore, Permits: 2, TTL: 100, Time: 121}); !r.Granted {
		t.Fatalf("after lock-delay (a new lock, any size): %+v", r)
	}
}

// TestReentrantCountLimit: the count is stored in 32 bits; one more
// reentrant acquire at the limit is refused and changes nothing, and a
// snapshot holding a count beyond it does not restore.
func TestReentrantCountLimit(t *testing.T) {
	h := newHarness(t)
	acq := Command{Op: OpAcquire, Key: "k", Owner: "o", TTL: 100, Reentrant: true, Time: 1}
	if r := h.apply(acq); !r.Granted {
		t.Fatalf("acquire: %+v", r)
	}
	h.tab.keys["k"].h0.Count = maxHoldCount
	before := *h.tab.keys["k"]
	if r := h.apply(acq); !errors.Is(r.Err, ErrLimit) {
		t.Fatalf("acquire at the limit: %+v", r)
	}
	if *h.tab.keys["k"] != before {
		t.Fatal("refused acquire changed the lock")
	}
	if r := h.apply(Command{Op: OpRelease, Key: "k", Owner: "o", Reentrant: true, Time: 2}); r.Released || r.Count != maxHoldCount-1 {
		t.Fatalf("release: %+v", r)
	}
	h.tab.keys["k"].h0.Count = maxHoldCount
	var buf bytes.Buffer
	if err := h.tab.Snapshot(&buf); err != nil {
		t.Fatal(err)
	}
	// The count is the only varint equal to maxHoldCount: bump it by one.
	b := buf.Bytes()
	enc := binary.AppendVarint(nil, maxHoldCount)
	over := binary.AppendVarint(nil, maxHoldCount+1)
	i := bytes.Index(b, enc)
	if i < 0 || len(enc) != len(over) {
		t.Fatal("count not found in the snapshot")
	}
	bad := append(append(append([]byte(nil), b[:i]...), over...), b[i+len(enc):]...)
	if err := New(Config{}).Restore(bytes.NewReader(bad)); err == nil {
		t.Fatal("a count over the limit restored")
	}
}

// TestStatsWhenRedisReplacesKeptLock: a lock kept only by its lock-delay
// is invisible to Redis; a value written there replaces it, and the lock
// counts follow.
func TestStatsWhenRedisReplacesKeptLock(t *testing.T) {
	h := newHarness(t)
	h.apply(Command{Op: OpAcquire, Key: "k", Owner: "o", TTL: 10, LockDelay: 1000, Time: 1})
	h.apply(Command{Op: OpTick, Time: 20})
	if s := h.tab.Stats(); s.Locks != 1 || s.Holds != 0 {
		t.Fatalf("kept by its lock-delay: %+v", s)
	}
	c := rcmd("HSET", "k", "f", "v")
	c.Time = 30
	if r := h.apply(c); r.Reply.Kind != reply.Int {
		t.Fatalf("HSET: %+v", r.Reply)
	}
	if s := h.tab.Stats(); s.Locks != 0 || s.Holds != 0 || s.Keys != 1 {
		t.Fatalf("after HSET: %+v", s)
	}
	if err := checkInvariants(h.tab); err != nil {
		t.Fatal(err)
	}
}
