package fsm

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/locknode/locknode/fsm/reply"
)

const testMaxMemory = 16 << 10

func mcmd(args ...string) *Command { return &Command{Op: OpRedis, Args: bargs(args...)} }

func acq(key, owner string) *Command {
	return &Command{Op: OpAcquire, Key: key, Owner: owner, TTL: 60_000}
}

// fillPast builds a table with MaxMemory testMaxMemory, applies setup,
// then a string big enough to put the key space past the limit.
func fillPast(t *testing.T, setup []*Command) *rt {
	t.Helper()
	r := &rt{tb: t, t: New(Config{MaxMemory: testMaxMemory}), now: 1000}
	for _, c := range setup {
		c := *c
		if res := r.apply(&c); res.Err != nil || res.Reply.Kind == reply.Error {
			t.Fatalf("setup %+v: %v %v", c, res.Err, res.Reply)
		}
	}
	if res := r.apply(mcmd("SET", "filler", strings.Repeat("x", testMaxMemory))); res.Reply.Kind == reply.Error {
		t.Fatalf("fill: %v", res.Reply)
	}
	if !r.t.overMemory() {
		t.Fatalf("not over the limit: %d of %d", r.t.MemoryUsed(), testMaxMemory)
	}
	return r
}

func snapBytes(t *testing.T, tab *Table) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := tab.Snapshot(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// isOOM reports whether res is a refusal for memory: the native error,
// Redis' OOM reply, or a transaction whose commands were refused so.
func isOOM(res Result) bool {
	if errors.Is(res.Err, ErrOutOfMemory) {
		return true
	}
	r := res.Reply
	if r.Kind == reply.Array && len(r.Arr) > 0 {
		r = r.Arr[len(r.Arr)-1]
	}
	return r.Kind == reply.Error && strings.HasPrefix(r.Str, OOMText)
}

const writeScript = "return redis.call('SET', KEYS[1], 'v')"

func TestMemoryRefusesGrowthAndChangesNothing(t *testing.T) {
	shared := &Command{Op: OpAcquire, Key: "r", Owner: "a", Mode: Shared, TTL: 60_000}
	cases := []struct {
		name  string
		setup []*Command
		cmd   *Command
	}{
		{"acquire a free key", nil, acq("new", "o")},
		{"acquire a second shared hold", []*Command{shared},
			&Command{Op: OpAcquire, Key: "r", Owner: "b", Mode: Shared, TTL: 60_000}},
		{"queue a waiter", []*Command{acq("k", "a")},
			&Command{Op: OpAcquire, Key: "k", Owner: "b", TTL: 60_000, Wait: 10_000, ReqID: "w1"}},
		{"open a session", nil, &Command{Op: OpSessionOpen, Session: "s", TTL: 10_000}},
		// A token no higher than a fence the table granted (the registry
		// refuses others).
		{"fence a new resource", []*Command{acq("f", "o")}, &Command{Op: OpFenceCheck, Key: "res", Token: 1}},
		{"SET a new key", nil, mcmd("SET", "k", "v")},
		{"SET a longer value", []*Command{mcmd("SET", "k", "v")}, mcmd("SET", "k", "vv")},
		{"SET NX a new lock", nil, mcmd("SET", "k", "tok", "NX", "PX", "10000")},
		{"MSET a new key", []*Command{mcmd("SET", "a", "1")}, mcmd("MSET", "a", "1", "b", "2")},
		{"MSETNX", nil, mcmd("MSETNX", "a", "1")},
		{"INCR a new key", nil, mcmd("INCR", "n")},
		{"INCR to a longer number", []*Command{mcmd("SET", "n", "9")}, mcmd("INCR", "n")},
		{"APPEND a new key", nil, mcmd("APPEND", "a", "v")},
		{"APPEND to a string", []*Command{mcmd("SET", "a", "v")}, mcmd("APPEND", "a", "v")},
		{"INCRBYFLOAT a new key", nil, mcmd("INCRBYFLOAT", "f", "1.5")},
		{"INCRBYFLOAT to a longer number", []*Command{mcmd("SET", "f", "1")}, mcmd("INCRBYFLOAT", "f", "0.5")},
		{"HSET a new field", []*Command{mcmd("HSET", "h", "f", "v")}, mcmd("HSET", "h", "g", "v")},
		{"HSET a longer value", []*Command{mcmd("HSET", "h", "f", "v")}, mcmd("HSET", "h", "f", "vv")},
		{"HMSET a new hash", nil, mcmd("HMSET", "h", "f", "v")},
		{"HSETNX", []*Command{mcmd("HSET", "h", "f", "v")}, mcmd("HSETNX", "h", "g", "v")},
		{"HINCRBY a new field", nil, mcmd("HINCRBY", "h", "f", "1")},
		{"SADD a new member", []*Command{mcmd("SADD", "s", "a")}, mcmd("SADD", "s", "a", "b")},
		{"ZADD a new member", []*Command{mcmd("ZADD", "z", "1", "a")}, mcmd("ZADD", "z", "1", "b")},
		{"ZINCRBY a new member", nil, mcmd("ZINCRBY", "z", "1", "a")},
		{"LPUSH", []*Command{mcmd("RPUSH", "l", "a")}, mcmd("LPUSH", "l", "b")},
		{"RPUSH a new list", nil, mcmd("RPUSH", "l", "a")},
		// Loaded first: EVAL caches its script, which is not the key space.
		{"EVAL that writes", []*Command{{Op: OpScriptLoad, Script: []byte(writeScript)}},
			&Command{Op: OpEval, Script: []byte(writeScript), KeysB: bargs("k")}},
		{"EXEC that writes", nil, &Command{Op: OpExec, Multi: [][][]byte{bargs("SET", "k", "v")}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a, b := fillPast(t, c.setup), fillPast(t, c.setup)
			cmd := *c.cmd
			res := a.apply(&cmd)
			b.apply(&Command{Op: OpTick})
			if !isOOM(res) {
				t.Fatalf("not refused: err %v, reply %v", res.Err, res.Reply)
			}
			if !bytes.Equal(snapBytes(t, a.t), snapBytes(t, b.t)) {
				t.Fatal("a refused command changed the table")
			}
		})
	}
}

func TestMemoryKeepsReleasesDeletesAndExtends(t *testing.T) {
	lock := mcmd("SET", "lk", "tok", "NX", "PX", "10000")
	cases := []struct {
		name  string
		setup []*Command
		cmd   *Command
	}{
		{"release", []*Command{acq("k", "a")}, &Command{Op: OpRelease, Key: "k", Owner: "a"}},
		{"forced release", []*Command{acq("k", "a")}, &Command{Op: OpRelease, Key: "k", Force: true}},
		{"extend", []*Command{acq("k", "a")}, &Command{Op: OpExtend, Key: "k", Owner: "a", TTL: 120_000}},
		{"reentrant acquire", []*Command{{Op: OpAcquire, Key: "k", Owner: "a", TTL: 60_000, Reentrant: true}},
			&Command{Op: OpAcquire, Key: "k", Owner: "a", TTL: 60_000, Reentrant: true}},
		{"repeated acquire by the holder", []*Command{acq("k", "a")}, acq("k", "a")},
		{"cancel a wait", []*Command{acq("k", "a"), {Op: OpAcquire, Key: "k", Owner: "b", TTL: 60_000, Wait: 10_000, ReqID: "w"}},
			&Command{Op: OpCancelWait, ReqID: "w"}},
		{"keep a session alive", []*Command{{Op: OpSessionOpen, Session: "s", TTL: 10_000}},
			&Command{Op: OpSessionKeepAlive, Session: "s"}},
		{"close a session", []*Command{{Op: OpSessionOpen, Session: "s", TTL: 10_000}},
			&Command{Op: OpSessionClose, Session: "s"}},
		{"fence a known resource", []*Command{acq("f", "o"), {Op: OpFenceCheck, Key: "res", Token: 1}},
			&Command{Op: OpFenceCheck, Key: "res", Token: 1}},
		{"DEL", nil, mcmd("DEL", "filler")},
		{"UNLINK a lock", []*Command{lock}, mcmd("UNLINK", "lk")},
		{"compare-and-delete", []*Command{lock}, &Command{Op: OpEval,
			Script: []byte(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`),
			KeysB:  bargs("lk"), Args: bargs("tok")}},
		{"compare-and-pexpire", []*Command{lock}, &Command{Op: OpEval,
			Script: []byte(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`),
			KeysB:  bargs("lk"), Args: bargs("tok", "20000")}},
		{"SET NX by the holder", []*Command{lock}, mcmd("SET", "lk", "tok", "NX", "PX", "10000")},
		{"SET IFEQ extends a lock", []*Command{lock}, mcmd("SET", "lk", "tok", "IFEQ", "tok", "PX", "20000")},
		{"PEXPIRE", nil, mcmd("PEXPIRE", "filler", "5000")},
		{"SET a shorter value", nil, mcmd("SET", "filler", "small")},
		{"SET with a past deadline", []*Command{mcmd("SET", "k", "v")}, mcmd("SET", "k", "vvvv", "PXAT", "1")},
		{"INCR keeping the length", []*Command{mcmd("SET", "n", "1")}, mcmd("INCR", "n")},
		{"INCRBYFLOAT to a shorter number", []*Command{mcmd("SET", "f", "1.5")}, mcmd("INCRBYFLOAT", "f", "0.5")},
		{"APPEND nothing", []*Command{mcmd("SET", "a", "v")}, mcmd("APPEND", "a", "")},
		{"GETDEL", nil, mcmd("GETDEL", "filler")},
		{"GETDEL a lock", []*Command{lock}, mcmd("GETDEL", "lk")},
		{"GETEX extends a lock", []*Command{lock}, mcmd("GETEX", "lk", "PX", "20000")},
		{"GETEX PERSIST", []*Command{mcmd("SET", "k", "v", "PX", "20000")}, mcmd("GETEX", "k", "PERSIST")},
		{"HSET an equal value", []*Command{mcmd("HSET", "h", "f", "v")}, mcmd("HSET", "h", "f", "w")},
		{"HDEL", []*Command{mcmd("HSET", "h", "f", "v")}, mcmd("HDEL", "h", "f")},
		{"SADD a member it has", []*Command{mcmd("SADD", "s", "a")}, mcmd("SADD", "s", "a")},
		{"ZADD a new score", []*Command{mcmd("ZADD", "z", "1", "a")}, mcmd("ZADD", "z", "2", "a")},
		{"ZADD XX", []*Command{mcmd("ZADD", "z", "1", "a")}, mcmd("ZADD", "z", "XX", "1", "b")},
		{"LPOP", []*Command{mcmd("RPUSH", "l", "a")}, mcmd("LPOP", "l")},
		{"read-only script", nil, &Command{Op: OpEval, Script: []byte("return redis.call('GET', 'filler') ~= false")}},
		{"script that deletes then writes", nil, &Command{Op: OpEval,
			Script: []byte("redis.call('DEL', 'filler') return redis.call('SET', 'k', 'v')")}},
		{"tick", nil, &Command{Op: OpTick}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := fillPast(t, c.setup)
			cmd := *c.cmd
			if res := r.apply(&cmd); res.Err != nil || res.Reply.Kind == reply.Error {
				t.Fatalf("refused: err %v, reply %v", res.Err, res.Reply)
			}
		})
	}
}

func TestMemoryHandOffAndExpiryPastTheLimit(t *testing.T) {
	r := fillPast(t, []*Command{
		acq("k", "a"),
		{Op: OpAcquire, Key: "k", Owner: "b", TTL: 60_000, Wait: 100_000, ReqID: "w"},
		mcmd("SET", "ttl", "v", "PX", "500"),
	})
	res := r.apply(&Command{Op: OpRelease, Key: "k", Owner: "a"})
	if res.Err != nil || len(eventsOf(res, EvGranted)) != 1 {
		t.Fatalf("release did not hand the lock to the waiter: %+v", res)
	}
	r.now += 1000
	r.apply(&Command{Op: OpTick})
	if v := r.t.get("ttl"); v != nil {
		t.Fatal("value did not expire past the limit")
	}
}

func TestMemoryWritesResumeAfterDelete(t *testing.T) {
	r := fillPast(t, nil)
	if res := r.apply(mcmd("SET", "k", "v")); !isOOM(res) {
		t.Fatalf("SET over the limit: %v", res.Reply)
	}
	if res := r.apply(acq("lock", "o")); !errors.Is(res.Err, ErrOutOfMemory) {
		t.Fatalf("acquire over the limit: %+v", res)
	}
	r.apply(mcmd("DEL", "filler"))
	if res := r.apply(mcmd("SET", "k", "v")); res.Reply.Kind == reply.Error {
		t.Fatalf("SET after DEL: %v", res.Reply)
	}
	if res := r.apply(acq("lock", "o")); !res.Granted {
		t.Fatalf("acquire after DEL: %+v", res)
	}
}

// Inside a script the refused write raises Redis' error, with the
// script's position; redis.pcall returns it as an error table.
func TestMemoryScriptErrors(t *testing.T) {
	r := fillPast(t, nil)
	script := "return redis.call('SET', KEYS[1], 'v')"
	got := r.eval(script, 1, "k")
	want := OOMText + " script: " + ScriptSHA([]byte(script)) + ", on @user_script:1."
	if got.Kind != reply.Error || got.Str != want {
		t.Fatalf("got %v, want %q", got, want)
	}
	got = r.eval("local e = redis.pcall('SET', KEYS[1], 'v') return e['err']", 1, "k")
	if got.Kind != reply.Bulk || got.Str != OOMText {
		t.Fatalf("pcall: %v", got)
	}
}

// Everything a table holds is counted, and deleting it all gives the
// count back (fences stay: the registry never forgets a resource).
func TestMemoryReturnsToZero(t *testing.T) {
	r := &rt{tb: t, t: New(Config{}), now: 1000}
	cmds := []*Command{
		{Op: OpSessionOpen, Session: "s", TTL: 10_000, ReqID: "r1"},
		{Op: OpAcquire, Key: "a", Owner: "o1", TTL: 5000, ReqID: "r2", LockDelay: 10},
		{Op: OpAcquire, Key: "b", Owner: "o2", Session: "s", ReqID: "r3", MaxHold: 9000},
		{Op: OpAcquire, Keys: []string{"a", "b"}, Owner: "o3", TTL: 5000, Wait: 3000, ReqID: "r4"},
		{Op: OpAcquire, Key: "sem", Owner: "o4", Mode: Semaphore, Permits: 3, TTL: 5000},
		{Op: OpAcquire, Key: "sem", Owner: "o5", Mode: Semaphore, Permits: 3, TTL: 5000},
		mcmd("SET", "lk", "tok", "NX", "PX", "4000"),
		mcmd("SET", "str", "value", "PX", "4000"),
		mcmd("HSET", "h", "f1", "v1", "f2", "v2"),
		mcmd("SADD", "s1", "a", "b"),
		mcmd("ZADD", "z", "1", "a", "2", "b"),
		mcmd("RPUSH", "l", "a", "b", "c"),
		mcmd("LPUSH", "l", "z"),
		mcmd("INCR", "n"),
		{Op: OpEval, Script: []byte(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`),
			KeysB: bargs("lk"), Args: bargs("tok")},
	}
	for _, c := range cmds {
		if res := r.apply(c); res.Err != nil || res.Reply.Kind == reply.Error {
			t.Fatalf("%+v: %v %v", c, res.Err, res.Reply)
		}
	}
	if r.t.MemoryUsed() <= 0 {
		t.Fatal("nothing counted")
	}
	// Everything ends: deletes, a session close, then time passes every
	// lease, wait, tombstone and request id window.
	for _, c := range []*Command{
		mcmd("DEL", "h", "s1", "n"), mcmd("ZREM", "z", "a", "b"), mcmd("LPOP", "l", "4"),
		{Op: OpSessionClose, Session: "s"},
	} {
		if res := r.apply(c); res.Err != nil || res.Reply.Kind == reply.Error {
			t.Fatalf("%+v: %v %v", c, res.Err, res.Reply)
		}
	}
	r.now += DefaultConfig().ReqIDWindow + 60_000
	r.apply(&Command{Op: OpTick})
	r.now += 100 // the lock-delay the expiry started
	r.apply(&Command{Op: OpTick})
	if st := r.t.Stats(); st.Keys != 0 || st.Waiters != 0 || st.Sessions != 0 || st.ReqIDs != 0 || len(r.t.tombs) != 0 {
		t.Fatalf("table not empty: %+v, %d tombstones", st, len(r.t.tombs))
	}
	if got := r.t.MemoryUsed(); got != 0 {
		t.Fatalf("empty table counts %d bytes", got)
	}
}

func TestMemoryRestoreCountsTheSame(t *testing.T) {
	r := &rt{tb: t, t: New(Config{}), now: 1000}
	for _, c := range []*Command{
		{Op: OpSessionOpen, Session: "s", TTL: 10_000, ReqID: "r1"},
		{Op: OpAcquire, Key: "a", Owner: "o1", TTL: 5000, ReqID: "r2"},
		{Op: OpAcquire, Key: "a", Owner: "o2", TTL: 5000, Wait: 3000, ReqID: "r3", Session: "s"},
		{Op: OpFenceCheck, Key: "res", Token: 2},
		mcmd("SET", "lk", "tok", "NX", "PX", "4000"),
		mcmd("DELEX", "lk", "IFEQ", "tok"),
		mcmd("HSET", "h", "f1", "v1"), mcmd("SADD", "s1", "a"), mcmd("ZADD", "z", "1", "a"), mcmd("RPUSH", "l", "a"),
		mcmd("SET", "str", "value"),
	} {
		if res := r.apply(c); res.Err != nil || res.Reply.Kind == reply.Error {
			t.Fatalf("%+v: %v %v", c, res.Err, res.Reply)
		}
	}
	n := New(Config{})
	if err := n.Restore(bytes.NewReader(snapBytes(t, r.t))); err != nil {
		t.Fatal(err)
	}
	if got, want := n.MemoryUsed(), r.t.MemoryUsed(); got != want || want == 0 {
		t.Fatalf("restored table counts %d, original %d", got, want)
	}
	if err := checkMemory(n); err != nil {
		t.Fatal(err)
	}
}

func TestMaxMemoryConfig(t *testing.T) {
	cases := []struct {
		max int64
		ok  bool
	}{{1 << 30, true}, {1, true}, {NoMaxMemory, true}, {0, false}, {-2, false}}
	for _, c := range cases {
		cfg := DefaultConfig()
		cfg.MaxMemory = c.max
		if err := cfg.Validate(); (err == nil) != c.ok {
			t.Errorf("MaxMemory %d: %v", c.max, err)
		}
	}
	if got := New(Config{}).Config().MaxMemory; got != DefaultConfig().MaxMemory {
		t.Errorf("zero MaxMemory became %d", got)
	}
	// Off: nothing is refused whatever the count.
	r := &rt{tb: t, t: New(Config{MaxMemory: NoMaxMemory}), now: 1000}
	r.apply(mcmd("SET", "big", strings.Repeat("x", 64<<10)))
	if res := r.apply(mcmd("SET", "k", "v")); res.Reply.Kind == reply.Error {
		t.Fatalf("refused with the limit off: %v", res.Reply)
	}
}
