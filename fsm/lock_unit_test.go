package fsm

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
)

func rcmd(args ...string) Command {
	c := Command{Op: OpRedis}
	for _, a := range args {
		c.Args = append(c.Args, []byte(a))
	}
	return c
}

func snap(t testing.TB, tab *Table) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := tab.Snapshot(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestRefusalsChangeNothing: every refusal leaves the table exactly as a
// Tick at the same index and time would.
func TestRefusalsChangeNothing(t *testing.T) {
	cfg := Config{MaxKeyBytes: 8, MaxOwnerBytes: 8, MaxTTL: 10_000, MaxWaitersPerKey: 1, MaxKeys: 4}
	setup := []Command{
		{Op: OpAcquire, Key: "held", Owner: "o1", TTL: 1000, MaxHold: 1000},
		{Op: OpAcquire, Key: "held", Owner: "o2", TTL: 1000, Wait: 5000, ReqID: "q"},
		{Op: OpAcquire, Key: "sem", Owner: "o1", Mode: Semaphore, Permits: 2, TTL: 1000},
		{Op: OpSessionOpen, Session: "s", TTL: 1000},
		{Op: OpRelease, Key: "held", Owner: "o1", ReqID: "rel"},
		{Op: OpAcquire, Key: "held", Owner: "o1", TTL: 100, Wait: 100, ReqID: "q2"},
		rcmd("SET", "str", "v"),
		{Op: OpFenceCheck, Key: "res", Token: 5}, // the grant of q at index 5: the highest fence
	}
	long := strings.Repeat("x", 9)
	many := make([]string, MaxLockKeys+1)
	for i := range many {
		many[i] = string(rune('a'+i%26)) + strings.Repeat("k", i/26%7)
	}
	tests := []struct {
		name string
		cmd  Command
		want error
	}{
		{"empty owner", Command{Op: OpAcquire, Key: "k", TTL: 10}, ErrBadCommand},
		{"long owner", Command{Op: OpAcquire, Key: "k", Owner: long, TTL: 10}, ErrLimit},
		{"empty key", Command{Op: OpAcquire, Owner: "o", TTL: 10}, ErrBadCommand},
		{"long key", Command{Op: OpAcquire, Key: long, Owner: "o", TTL: 10}, ErrLimit},
		{"zero ttl", Command{Op: OpAcquire, Key: "k", Owner: "o"}, ErrBadTTL},
		{"ttl over max", Command{Op: OpAcquire, Key: "k", Owner: "o", TTL: 10_001}, ErrBadTTL},
		{"wait without id", Command{Op: OpAcquire, Key: "k", Owner: "o", TTL: 10, Wait: 5}, ErrBadCommand},
		{"negative wait", Command{Op: OpAcquire, Key: "k", Owner: "o", TTL: 10, Wait: -1, ReqID: "w"}, ErrBadTTL},
		{"negative lock-delay", Command{Op: OpAcquire, Key: "k", Owner: "o", TTL: 10, LockDelay: -1}, ErrBadTTL},
		{"negative max hold", Command{Op: OpAcquire, Key: "k", Owner: "o", TTL: 10, MaxHold: -1}, ErrBadTTL},
		{"max hold over max", Command{Op: OpAcquire, Key: "k", Owner: "o", TTL: 10, MaxHold: 10_001}, ErrBadTTL},
		{"max hold overflow", Command{Op: OpAcquire, Key: "k", Owner: "o", TTL: 10, MaxHold: math.MaxInt64}, ErrBadTTL},
		{"wait over max", Command{Op: OpAcquire, Key: "held", Owner: "o3", TTL: 10, Wait: 10_001, ReqID: "w5"}, ErrBadTTL},
		{"lock-delay over max", Command{Op: OpAcquire, Key: "k", Owner: "o", TTL: 10, LockDelay: 10_001}, ErrBadTTL},
		{"permits over max", Command{Op: OpAcquire, Key: "k", Owner: "o", TTL: 10, Mode: Semaphore, Permits: 1 << 40}, ErrLimit},
		{"bad mode", Command{Op: OpAcquire, Key: "k", Owner: "o", TTL: 10, Mode: 9}, ErrBadCommand},
		{"semaphore without permits", Command{Op: OpAcquire, Key: "k", Owner: "o", TTL: 10, Mode: Semaphore}, ErrBadCommand},
		{"duplicate keys", Command{Op: OpAcquire, Keys: []string{"k", "k"}, Owner: "o", TTL: 10}, ErrBadCommand},
		{"too many keys", Command{Op: OpAcquire, Keys: many, Owner: "o", TTL: 10}, ErrLimit},
		{"unknown session", Command{Op: OpAcquire, Key: "k", Owner: "o", Session: "nope"}, ErrSessionUnknown},
		{"held", Command{Op: OpAcquire, Key: "held", Owner: "o3", TTL: 10}, ErrLocked},
		{"waiters ahead", Command{Op: OpAcquire, Keys: []string{"k", "held"}, Owner: "o3", TTL: 10}, ErrLocked},
		{"queue full", Command{Op: OpAcquire, Key: "held", Owner: "o3", TTL: 10, Wait: 10, ReqID: "w3"}, ErrLimit},
		{"key space full", Command{Op: OpAcquire, Keys: []string{"n1", "n2"}, Owner: "o", TTL: 10}, ErrLimit},
		{"other permits", Command{Op: OpAcquire, Key: "sem", Owner: "o2", Mode: Semaphore, Permits: 3, TTL: 10, Wait: 10, ReqID: "w4"}, ErrPermits},
		{"mutex on semaphore", Command{Op: OpAcquire, Key: "sem", Owner: "o2", TTL: 10}, ErrPermits},
		{"other mode than own hold", Command{Op: OpAcquire, Key: "held", Owner: "o2", Mode: Shared, TTL: 10}, ErrLocked},
		{"own semaphore, other size", Command{Op: OpAcquire, Key: "sem", Owner: "o1", Mode: Semaphore, Permits: 5, TTL: 10}, ErrPermits},
		{"redis value", Command{Op: OpAcquire, Key: "str", Owner: "o", TTL: 10}, ErrLocked},
		{"waiter id in use", Command{Op: OpAcquire, Key: "held", Owner: "zz", TTL: 10, Wait: 10, ReqID: "q2"}, ErrBadCommand},
		{"release free key", Command{Op: OpRelease, Key: "free", Owner: "o"}, ErrNotHeld},
		{"release stranger", Command{Op: OpRelease, Key: "held", Owner: "o1"}, ErrNotOwner},
		{"release redis value", Command{Op: OpRelease, Key: "str", Owner: "o"}, ErrWrongType},
		{"release one of two not owned", Command{Op: OpRelease, Keys: []string{"held", "sem"}, Owner: "o2"}, ErrNotOwner},
		{"release without owner", Command{Op: OpRelease, Key: "held"}, ErrBadCommand},
		{"extend stranger", Command{Op: OpExtend, Key: "held", Owner: "o1", TTL: 10}, ErrNotOwner},
		{"extend bad ttl", Command{Op: OpExtend, Key: "held", Owner: "o2", TTL: 10_001}, ErrBadTTL},
		{"extend free key", Command{Op: OpExtend, Key: "free", Owner: "o2", TTL: 10}, ErrNotHeld},
		{"session exists", Command{Op: OpSessionOpen, Session: "s", TTL: 10}, ErrSessionExists},
		{"session bad ttl", Command{Op: OpSessionOpen, Session: "s2"}, ErrBadTTL},
		{"session empty id", Command{Op: OpSessionOpen, TTL: 10}, ErrBadCommand},
		{"keepalive unknown", Command{Op: OpSessionKeepAlive, Session: "nope"}, ErrSessionUnknown},
		{"close unknown", Command{Op: OpSessionClose, Session: "nope"}, ErrSessionUnknown},
		{"stale fence", Command{Op: OpFenceCheck, Key: "res", Token: 4}, ErrStaleFence},
		{"fence never issued", Command{Op: OpFenceCheck, Key: "res", Token: 6}, ErrBadCommand},
		{"fence max uint64", Command{Op: OpFenceCheck, Key: "r3", Token: math.MaxUint64}, ErrBadCommand},
		{"fence registry full", Command{Op: OpFenceCheck, Key: "r2", Token: 1}, nil},
		{"cancel without id", Command{Op: OpCancelWait}, ErrBadCommand},
		{"cancel by stranger", Command{Op: OpCancelWait, ReqID: "q2", Owner: "zz"}, ErrNotOwner},
		{"request id too long", Command{Op: OpRelease, Key: "held", Owner: "o2", ReqID: long}, ErrLimit},
		{"request id of another op", Command{Op: OpExtend, Key: "held", Owner: "o2", ReqID: "rel"}, ErrBadCommand},
		{"op 0", Command{Op: OpInvalid}, ErrBadCommand},
		{"reown stranger", Command{Op: OpReown, Key: "held", Owner: "o1", Args: [][]byte{[]byte("n")}}, ErrNotOwner},
		{"reown free key", Command{Op: OpReown, Key: "free", Owner: "o2", Args: [][]byte{[]byte("n")}}, ErrNotHeld},
		{"reown redis value", Command{Op: OpReown, Key: "str", Owner: "o2", Args: [][]byte{[]byte("n")}}, ErrWrongType},
		{"reown without new owner", Command{Op: OpReown, Key: "held", Owner: "o2"}, ErrBadCommand},
		{"reown to empty owner", Command{Op: OpReown, Key: "held", Owner: "o2", Args: [][]byte{nil}}, ErrBadCommand},
		{"reown to long owner", Command{Op: OpReown, Key: "held", Owner: "o2", Args: [][]byte{[]byte(long)}}, ErrLimit},
		{"reown without key", Command{Op: OpReown, Owner: "o2", Args: [][]byte{[]byte("n")}}, ErrBadCommand},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, b := New(cfg), New(cfg)
			for i, c := range setup {
				c.Time = 10
				ca, cb := c, c
				a.Apply(uint64(i+1), &ca)
				b.Apply(uint64(i+1), &cb)
			}
			idx := uint64(len(setup) + 1)
			c := tc.cmd
			c.Time = 20
			r := a.Apply(idx, &c)
			if tc.want == nil {
				// Only the fence registry's own limit is checked here: the
				// registry is bounded by MaxKeys separately from the keys.
				if r.Err != nil {
					t.Fatalf("err = %v", r.Err)
				}
				return
			}
			if !errors.Is(r.Err, tc.want) {
				t.Fatalf("err = %v, want %v", r.Err, tc.want)
			}
			b.Apply(idx, &Command{Op: OpTick, Time: 20})
			if !bytes.Equal(snap(t, a), snap(t, b)) {
				t.Fatalf("refused command changed the table")
			}
			if len(r.Events) != 0 {
				t.Fatalf("refused command has events %+v", r.Events)
			}
		})
	}
}

func TestExactlyOnce(t *testing.T) {
	h := newHarness(t)
	h.tab = New(Config{MaxReqIDs: 2, ReqIDWindow: 1000})
	acq := Command{Op: OpAcquire, Key: "a", Owner: "o", TTL: 5000, ReqID: "r1", Time: 1}
	r1 := h.apply(acq)
	rel := Command{Op: OpRelease, Key: "a", Owner: "o", ReqID: "r2", Time: 2}
	r2 := h.apply(rel)
	if !r1.Granted || !r2.Released || len(r2.Events) == 0 {
		t.Fatalf("first: %+v %+v", r1, r2)
	}
	again := h.apply(acq)
	if !again.Granted || again.Fence != r1.Fence || len(again.Events) != 0 {
		t.Fatalf("retried acquire: %+v", again)
	}
	if got := h.apply(rel); !got.Released || len(got.Events) != 0 {
		t.Fatalf("retried release: %+v", got)
	}
	if _, err := h.tab.Inspect("a", 0); !errors.Is(err, ErrNoSuchKey) {
		t.Fatalf("a retry re-applied the acquire: %v", err)
	}
	// A third id forgets the oldest (MaxReqIDs 2): r1 applies anew.
	h.apply(Command{Op: OpFenceCheck, Key: "x", Token: 1, ReqID: "r3", Time: 3})
	if st := h.tab.Stats(); st.ReqIDs != 2 {
		t.Fatalf("remembered %d ids", st.ReqIDs)
	}
	if r := h.apply(acq); !r.Granted || r.Fence == r1.Fence {
		t.Fatalf("forgotten id not applied anew: %+v", r)
	}
	// The window: after 1000 ms of FSM time every id is forgotten.
	h.apply(Command{Op: OpTick, Time: 1500})
	if st := h.tab.Stats(); st.ReqIDs != 0 {
		t.Fatalf("ids outlived the window: %d", st.ReqIDs)
	}
}

func TestRetriedBlockingAcquire(t *testing.T) {
	h := newHarness(t)
	h.apply(Command{Op: OpAcquire, Key: "a", Owner: "o1", TTL: 100, Time: 0})
	w := Command{Op: OpAcquire, Key: "a", Owner: "o2", TTL: 100, Wait: 1000, ReqID: "w", Time: 10}
	if r := h.apply(w); !r.Queued {
		t.Fatalf("%+v", r)
	}
	if r := h.apply(w); !r.Queued || r.Deadline != 1010 {
		t.Fatalf("retry while queued: %+v", r)
	}
	if st := h.tab.Stats(); st.Waiters != 1 {
		t.Fatalf("retry added a waiter: %+v", st)
	}
	r := h.apply(Command{Op: OpTick, Time: 100})
	g := eventsOf(r, EvGranted)
	if len(g) != 1 || g[0].WaiterID != "w" {
		t.Fatalf("hand-off on expiry: %+v", r.Events)
	}
	if r := h.apply(w); !r.Granted || r.Fence != g[0].Fence {
		t.Fatalf("retry after grant: %+v", r)
	}
	if r := h.apply(Command{Op: OpCancelWait, ReqID: "w", Time: 110}); !r.Granted || r.Fence != g[0].Fence {
		t.Fatalf("cancel after grant: %+v", r)
	}
}

// TestRedisValueWaiter: a native waiter on a key holding a Redis value is
// granted when the value is deleted or expires.
func TestRedisValueWaiter(t *testing.T) {
	for _, end := range []Command{rcmd("DEL", "k"), {Op: OpTick, Time: 600}} {
		h := newHarness(t)
		h.apply(rcmd("SET", "k", "v", "PX", "500"))
		if r := h.apply(Command{Op: OpAcquire, Key: "k", Owner: "o", TTL: 100, Wait: 1000, ReqID: "w"}); !r.Queued {
			t.Fatalf("%+v", r)
		}
		r := h.apply(end)
		if g := eventsOf(r, EvGranted); len(g) != 1 || g[0].Fence != h.idx {
			t.Fatalf("%v: events %+v", end.Args, r.Events)
		}
		if li, err := h.tab.Inspect("k", 0); err != nil || li.Kind != KindLock || li.Holders[0].Owner != "o" {
			t.Fatalf("inspect: %+v %v", li, err)
		}
	}
}

func TestRedisHelpers(t *testing.T) {
	h := newHarness(t)
	ctx := func() *applyCtx {
		h.idx++
		return &applyCtx{index: h.idx, now: h.tab.now, at: h.tab.now}
	}
	tab := h.tab
	if !tab.redisSetNX(ctx(), "k", []byte("tok"), 1000) {
		t.Fatal("SET NX on a free key failed")
	}
	if !tab.redisSetNX(ctx(), "k", []byte("tok"), 1000) {
		t.Fatal("repeated SET NX by the holder failed")
	}
	if tab.redisSetNX(ctx(), "k", []byte("other"), 1000) {
		t.Fatal("SET NX by another token succeeded")
	}
	l := tab.keys["k"].lock()
	if tok, ok := l.redisToken(); !ok || tok != "tok" || l.h0.Fence != 1 {
		t.Fatalf("token %q %v fence %d", tok, ok, l.h0.Fence)
	}
	if p := tab.redisLockPTTL(l, 400); p != 600 {
		t.Fatalf("pttl %d", p)
	}
	tab.redisLockExpire(ctx(), "k", 2000)
	if p := tab.redisLockPTTL(l, 0); p != 2000 {
		t.Fatalf("pttl after pexpire %d", p)
	}
	if tab.redisReleaseByToken(ctx(), "k", "other") {
		t.Fatal("release by a stranger")
	}
	if !tab.redisReleaseByToken(ctx(), "k", "tok") || tab.keys["k"] != nil {
		t.Fatal("release by the holder")
	}
	if !tab.redisTombstone("k", "tok", 1999) || tab.redisTombstone("k", "other", 0) || tab.redisTombstone("k", "tok", 2000) {
		t.Fatal("tombstone")
	}
	if err := checkRoundTrip(tab); err != nil {
		t.Fatal(err)
	}
	h.apply(Command{Op: OpTick, Time: 2000})
	if len(tab.tombs) != 0 {
		t.Fatal("tombstone outlived the lease")
	}
	// Waiters keep their place against SET NX; PEXPIRE in the past ends
	// the hold and hands the key on.
	h.apply(Command{Op: OpAcquire, Key: "k", Owner: "a", TTL: 100, LockDelay: 50})
	h.apply(Command{Op: OpAcquire, Key: "k", Owner: "b", TTL: 100, Wait: 1000, ReqID: "wb"})
	if tab.redisSetNX(ctx(), "k", []byte("c"), 0) {
		t.Fatal("SET NX jumped the queue")
	}
	c := ctx()
	tab.redisLockExpire(c, "k", 0)
	if li, _ := tab.Inspect("k", 0); li.DelayUntil != 2050 || len(li.Waiters) != 1 {
		t.Fatalf("after PEXPIRE 0: %+v", li)
	}
	if r := h.apply(Command{Op: OpTick, Time: 2050}); len(eventsOf(r, EvGranted)) != 1 {
		t.Fatalf("no hand-off after the delay: %+v", r.Events)
	}
	if p := tab.redisLockPTTL(&Lock{}, 0); p != -1 {
		t.Fatalf("pttl of an empty lock %d", p)
	}
}

func TestQueries(t *testing.T) {
	h := newHarness(t)
	h.apply(Command{Op: OpSessionOpen, Session: "s", TTL: 1000})
	for _, k := range []string{"p/b", "p/a", "p/c", "q/a"} {
		h.apply(Command{Op: OpAcquire, Key: k, Owner: "o", TTL: 100})
	}
	h.apply(Command{Op: OpAcquire, Key: "p/d", Owner: "o", Session: "s"})
	h.apply(Command{Op: OpAcquire, Key: "p/a", Owner: "o2", TTL: 100, Wait: 500, ReqID: "w"})
	h.apply(rcmd("SET", "p/str", "v"))
	before := snap(t, h.tab)

	infos, next := h.tab.List("p/", "", 2, 0)
	if len(infos) != 2 || infos[0].Key != "p/a" || infos[1].Key != "p/b" || next != "p/b" {
		t.Fatalf("page 1: %+v %q", infos, next)
	}
	if len(infos[0].Waiters) != 1 || infos[0].Waiters[0].ID != "w" {
		t.Fatalf("waiters: %+v", infos[0])
	}
	infos, next = h.tab.List("p/", next, 2, 0)
	if len(infos) != 2 || infos[0].Key != "p/c" || infos[1].Key != "p/d" || next != "" {
		t.Fatalf("page 2: %+v %q", infos, next)
	}
	// At the reader's later time the leases are over; the session's hold is not.
	if infos, _ = h.tab.List("p/", "", 10, 150); len(infos) != 1 || infos[0].Key != "p/d" || infos[0].Holders[0].Deadline != 1000 {
		t.Fatalf("at 150: %+v", infos)
	}
	if li, err := h.tab.Inspect("p/str", 0); err != nil || li.Kind != KindString || len(li.Holders) != 0 {
		t.Fatalf("redis value: %+v %v", li, err)
	}
	if _, err := h.tab.Inspect("nope", 0); !errors.Is(err, ErrNoSuchKey) {
		t.Fatal(err)
	}
	if s, ok := h.tab.Session("s", 0); !ok || s.Deadline != 1000 {
		t.Fatalf("session %+v", s)
	}
	if _, ok := h.tab.Session("s", 1000); ok {
		t.Fatal("expired session visible")
	}
	w, ok := h.tab.Waiter("w")
	if !ok || w.Owner != "o2" {
		t.Fatalf("waiter %+v", w)
	}
	w.Keys[0] = "mutated"
	if hd, ok := h.tab.HoldOf("p/a", "o", 0); !ok || hd.Fence != 3 {
		t.Fatalf("hold %+v", hd)
	}
	if _, ok := h.tab.HoldOf("p/a", "o", 100); ok {
		t.Fatal("expired hold visible")
	}
	st := h.tab.Stats()
	if st.Memory != h.tab.MemoryUsed() || st.Memory <= 0 {
		t.Fatalf("stats memory %d, used %d", st.Memory, h.tab.MemoryUsed())
	}
	st.Memory = 0
	if st != (Stats{Keys: 6, Locks: 5, Holds: 5, Waiters: 1, Sessions: 1, ReqIDs: 1}) {
		t.Fatalf("stats %+v", st)
	}
	if !bytes.Equal(before, snap(t, h.tab)) {
		t.Fatal("a query changed the table")
	}
}

func TestSnapshotEveryKind(t *testing.T) {
	h := newHarness(t)
	cmds := []Command{
		rcmd("SET", "s", "v", "PX", "5000"),
		rcmd("HSET", "h", "f1", "1", "f2", "2"),
		rcmd("SADD", "set", "x", "y"),
		rcmd("ZADD", "z", "1.5", "a", "-2", "b"),
		rcmd("RPUSH", "l", "1", "2", "3"),
		{Op: OpScriptLoad, Script: []byte("return 1")},
		{Op: OpSessionOpen, Session: "sess", TTL: 3000},
		{Op: OpAcquire, Key: "lk", Owner: "o", TTL: 1000, Reentrant: true, MaxHold: 4000, LockDelay: 10},
		{Op: OpAcquire, Key: "lk", Owner: "o", TTL: 1000, Reentrant: true},
		{Op: OpAcquire, Keys: []string{"lk", "m"}, Owner: "o2", TTL: 1000, Wait: 2000, ReqID: "w", Session: "sess"},
		{Op: OpAcquire, Key: "sem", Owner: "o", Mode: Semaphore, Permits: 3, TTL: 900, Session: "sess"},
		{Op: OpAcquire, Key: "tmp", Owner: "o", TTL: 900, ReqID: "r"},
		{Op: OpRelease, Key: "tmp", Owner: "o"},
		{Op: OpFenceCheck, Key: "res", Token: 9},
	}
	for _, c := range cmds {
		c.Time = 100
		if r := h.apply(c); r.Err != nil || r.Reply.IsError() {
			t.Fatalf("%+v: %+v", c, r)
		}
	}
	a := snap(t, h.tab)
	n := New(Config{})
	if err := n.Restore(bytes.NewReader(a)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, snap(t, n)) {
		t.Fatal("round trip differs")
	}
	if !bytes.Contains(a, []byte("return 1")) || !bytes.Contains(a, []byte("f2")) {
		t.Fatal("snapshot misses the script cache or a hash field")
	}
	// Both go on identically: every deadline was rescheduled.
	for _, tm := range []int64{1100, 2100, 3100, 5100, 9000} {
		ra := h.tab.Apply(h.idx+1, &Command{Op: OpTick, Time: tm})
		rb := n.Apply(h.idx+1, &Command{Op: OpTick, Time: tm})
		h.idx++
		if fmtResult(ra) != fmtResult(rb) {
			t.Fatalf("at %d: %s vs %s", tm, fmtResult(ra), fmtResult(rb))
		}
	}
	if !bytes.Equal(snap(t, h.tab), snap(t, n)) {
		t.Fatal("tables diverged after restore")
	}
}

func TestRestoreRefusesBadInput(t *testing.T) {
	h := newHarness(t)
	h.apply(Command{Op: OpAcquire, Key: "a", Owner: "o", TTL: 100})
	good := snap(t, h.tab)
	tab := New(Config{})
	tab.Apply(1, &Command{Op: OpAcquire, Key: "mine", Owner: "o", TTL: 100})
	before := snap(t, tab)
	bad := append([]byte{99}, good[1:]...)
	if err := tab.Restore(bytes.NewReader(bad)); !errors.Is(err, ErrBadVersion) || !errors.Is(err, ErrNeedVersion) {
		t.Fatalf("version: %v", err)
	}
	for i := 1; i < len(good); i++ {
		if err := tab.Restore(bytes.NewReader(good[:i])); err == nil {
			t.Fatalf("truncated at %d accepted", i)
		}
	}
	if err := tab.Restore(bytes.NewReader(append(good, 0))); err == nil {
		t.Fatal("trailing byte accepted")
	}
	if !bytes.Equal(before, snap(t, tab)) {
		t.Fatal("failed restore changed the table")
	}
}

// TestStaleDueEntriesAfterRestore: a lease extended (leaving a stale heap
// entry) and a restored copy (without it) end things in the same order.
func TestStaleDueEntriesAfterRestore(t *testing.T) {
	h := newHarness(t)
	h.apply(Command{Op: OpAcquire, Key: "a", Owner: "o1", TTL: 100, Time: 0})
	h.apply(Command{Op: OpAcquire, Keys: []string{"a", "b"}, Owner: "o2", TTL: 100, Wait: 150, ReqID: "w", Time: 0})
	h.apply(Command{Op: OpExtend, Key: "a", Owner: "o1", TTL: 200, Time: 50}) // lease 250; stale entry at 100
	n := New(Config{})
	if err := n.Restore(bytes.NewReader(snap(t, h.tab))); err != nil {
		t.Fatal(err)
	}
	ra := h.tab.Apply(10, &Command{Op: OpTick, Time: 400})
	rb := n.Apply(10, &Command{Op: OpTick, Time: 400})
	if fmtResult(ra) != fmtResult(rb) {
		t.Fatalf("%s vs %s", fmtResult(ra), fmtResult(rb))
	}
	// The waiter's wait (150) ended before the lease (250).
	if len(eventsOf(ra, EvGranted)) != 0 || len(eventsOf(ra, EvWaitEnded)) != 1 {
		t.Fatalf("%s", fmtResult(ra))
	}
}

// A redsync Unlock goes to every node in parallel; another client may take
// and release the key between the first and a late repeat. The late
// repeat must still be answered as the release was.
func TestTombstonesKeepRecentReleasers(t *testing.T) {
	h := newHarness(t)
	ctx := func() *applyCtx {
		h.idx++
		return &applyCtx{index: h.idx, now: h.tab.now, at: h.tab.now}
	}
	tab := h.tab
	for i, tok := range []string{"a", "b", "c"} {
		if !tab.redisSetNX(ctx(), "k", []byte(tok), int64(1000*(i+1))) || !tab.redisReleaseByToken(ctx(), "k", tok) {
			t.Fatalf("cycle %s", tok)
		}
	}
	for _, tok := range []string{"a", "b", "c"} {
		if !tab.redisTombstone("k", tok, 500) {
			t.Fatalf("tombstone of %s forgotten", tok)
		}
	}
	if err := checkRoundTrip(tab); err != nil {
		t.Fatal(err)
	}
	h.apply(Command{Op: OpTick, Time: 1000}) // a's lease would have ended
	if tab.redisTombstone("k", "a", 1000) || !tab.redisTombstone("k", "b", 1000) {
		t.Fatal("expiry of the oldest tombstone")
	}
	if err := checkRoundTrip(tab); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < maxTombsPerKey+2; i++ {
		tok := string(rune('d' + i))
		if !tab.redisSetNX(ctx(), "k", []byte(tok), 5000) || !tab.redisReleaseByToken(ctx(), "k", tok) {
			t.Fatalf("cycle %s", tok)
		}
	}
	if n := len(tab.tombs["k"].recent); n != maxTombsPerKey {
		t.Fatalf("%d tombstones kept, want %d", n, maxTombsPerKey)
	}
	h.apply(Command{Op: OpTick, Time: 10_000})
	if len(tab.tombs) != 0 {
		t.Fatal("tombstones outlived their leases")
	}
}

// HeldByOther answers as Inspect would: a live holder other than owner.
func TestHeldByOther(t *testing.T) {
	h := newHarness(t)
	h.apply(Command{Op: OpAcquire, Key: "held", Owner: "o1", TTL: 1000, Time: 10})
	h.apply(Command{Op: OpAcquire, Key: "sem", Owner: "o1", Mode: Semaphore, Permits: 2, TTL: 1000, Time: 10})
	h.apply(Command{Op: OpAcquire, Key: "sem", Owner: "o2", Mode: Semaphore, Permits: 2, TTL: 1000, Time: 10})
	h.apply(rcmd("SET", "str", "v"))
	h.apply(rcmd("SET", "rlock", "tok", "NX", "PX", "1000"))
	for _, c := range []struct {
		key, owner string
		now        int64
		want       bool
	}{
		{"held", "o2", 20, true},
		{"held", "o1", 20, false},   // its own hold
		{"held", "o2", 2000, false}, // expired
		{"sem", "o3", 20, true},
		{"sem", "o2", 20, false}, // one of the holders
		{"missing", "o1", 20, false},
		{"str", "o1", 20, false}, // a Redis value, not a lock
		{"rlock", "other", 20, true},
		{"rlock", "tok", 20, false},
	} {
		if got := h.tab.HeldByOther(c.key, c.owner, c.now); got != c.want {
			t.Errorf("HeldByOther(%q, %q, %d) = %v, want %v", c.key, c.owner, c.now, got, c.want)
		}
	}
}
