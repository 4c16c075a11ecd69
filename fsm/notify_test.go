package fsm

import (
	"bytes"
	"strings"
	"testing"
)

// keyspaceEvents renders r's EvKeyspace events as "event:key ...".
func keyspaceEvents(r Result) string {
	var out []string
	for _, e := range r.Events {
		if e.Kind == EvKeyspace {
			out = append(out, e.Message+":"+e.Key)
		}
	}
	return strings.Join(out, " ")
}

// TestKeyspaceEventsOfRedisCommands: each command emits Redis 7's
// keyspace events (names, order, and none when nothing changed), as
// redis-server 7.0 does for the same sequence (compat
// TestKeyspaceNotificationsVsRedis compares the wire).
func TestKeyspaceEventsOfRedisCommands(t *testing.T) {
	r := newRT(t)
	r.t.SetKeyspaceEvents(true)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"SET", "s", "1"}, "new:s set:s"},
		{[]string{"SET", "s", "2"}, "set:s"},
		{[]string{"SET", "s", "3", "PX", "10000"}, "set:s expire:s"},
		{[]string{"SET", "s", "4", "KEEPTTL"}, "set:s"},
		{[]string{"SET", "s", "5", "NX"}, ""},
		{[]string{"SET", "s", "5", "PXAT", "1"}, "set:s expire:s expired:s"},
		{[]string{"SET", "gone", "1", "XX"}, ""},
		{[]string{"SET", "gone", "1", "PXAT", "1"}, "new:gone set:gone expire:gone expired:gone"},
		{[]string{"INCR", "n"}, "new:n incrby:n"},
		{[]string{"DECRBY", "n", "3"}, "incrby:n"},
		{[]string{"INCRBYFLOAT", "n", "1.5"}, "incrbyfloat:n"},
		{[]string{"APPEND", "n", "x"}, "append:n"},
		{[]string{"PEXPIRE", "n", "5000"}, "expire:n"},
		{[]string{"PEXPIRE", "n", "9000", "NX"}, ""},
		{[]string{"PERSIST", "n"}, "persist:n"},
		{[]string{"PERSIST", "n"}, ""},
		{[]string{"GETEX", "n", "PX", "100"}, "expire:n"},
		{[]string{"GETEX", "n", "PERSIST"}, "persist:n"},
		{[]string{"GETDEL", "n"}, "del:n"},
		{[]string{"MSET", "a", "1", "b", "2"}, "new:a set:a new:b set:b"},
		{[]string{"DEL", "a", "b", "nothing"}, "del:a del:b"},
		{[]string{"HSET", "h", "f", "1", "g", "2"}, "new:h hset:h"},
		{[]string{"HINCRBY", "h", "f", "2"}, "hincrby:h"},
		{[]string{"HDEL", "h", "f"}, "hdel:h"},
		{[]string{"HDEL", "h", "nope"}, ""},
		{[]string{"HDEL", "h", "g"}, "hdel:h del:h"},
		{[]string{"SADD", "st", "x"}, "new:st sadd:st"},
		{[]string{"SADD", "st", "x"}, ""},
		{[]string{"SREM", "st", "x"}, "srem:st del:st"},
		{[]string{"ZADD", "z", "1", "m"}, "new:z zadd:z"},
		{[]string{"ZINCRBY", "z", "1", "m"}, "zincr:z"},
		{[]string{"ZREMRANGEBYSCORE", "z", "0", "10"}, "zremrangebyscore:z del:z"},
		{[]string{"RPUSH", "l", "a", "b"}, "new:l rpush:l"},
		{[]string{"LPOP", "l"}, "lpop:l"},
		{[]string{"RPOP", "l", "5"}, "rpop:l del:l"},
		{[]string{"SET", "lk", "tok", "NX", "PX", "10000"}, "new:lk set:lk expire:lk"},
		{[]string{"PEXPIRE", "lk", "20000"}, "expire:lk"},
		{[]string{"PEXPIRE", "lk", "-1"}, "del:lk"},
		{[]string{"SET", "lk", "tok", "NX", "PX", "10000"}, "new:lk set:lk expire:lk"},
		{[]string{"DEL", "lk"}, "del:lk"},
		{[]string{"PUBLISH", "c", "m"}, ""},
		{[]string{"GET", "s"}, ""},
	} {
		if got := keyspaceEvents(r.apply(&Command{Op: OpRedis, Args: bargs(tc.args...)})); got != tc.want {
			t.Errorf("%q: events %q, want %q", tc.args, got, tc.want)
		}
	}
}

// TestKeyspaceEventsOfHolds: a native hold that begins emits set (and
// expire with a lease), ends by release or force as del, by expiry as
// expired; a value whose TTL runs out emits expired in the entry that
// removes it.
func TestKeyspaceEventsOfHolds(t *testing.T) {
	r := newRT(t)
	r.t.SetKeyspaceEvents(true)
	step := func(cmd *Command, want string) {
		t.Helper()
		if got := keyspaceEvents(r.apply(cmd)); got != want {
			t.Errorf("op %d: events %q, want %q", cmd.Op, got, want)
		}
	}
	step(&Command{Op: OpAcquire, Key: "k", Owner: "a", TTL: 5000}, "new:k set:k expire:k")
	step(&Command{Op: OpExtend, Key: "k", Owner: "a", TTL: 8000}, "expire:k")
	step(&Command{Op: OpRelease, Key: "k", Owner: "a"}, "del:k")
	step(&Command{Op: OpAcquire, Key: "k", Owner: "a", TTL: 5000}, "new:k set:k expire:k")
	step(&Command{Op: OpRelease, Key: "k", Force: true}, "del:k")
	step(&Command{Op: OpAcquire, Key: "k", Owner: "b", TTL: 5000}, "new:k set:k expire:k")
	r.now += 5000
	step(&Command{Op: OpTick}, "expired:k")

	step(&Command{Op: OpRedis, Args: bargs("SET", "v", "1", "PX", "100")}, "new:v set:v expire:v")
	r.now += 100
	step(&Command{Op: OpTick}, "expired:v")

	// A queued waiter granted when the holder releases: its hold begins
	// in the releasing entry.
	step(&Command{Op: OpAcquire, Key: "q", Owner: "a", TTL: 5000}, "new:q set:q expire:q")
	step(&Command{Op: OpAcquire, Key: "q", Owner: "b", TTL: 5000, Wait: 10000, ReqID: "w1"}, "")
	step(&Command{Op: OpRelease, Key: "q", Owner: "a"}, "del:q new:q set:q expire:q")
}

// TestKeyspaceEventsOfSessions: a hold bound to a session ends as expired
// when the session runs out, as del when it is closed.
func TestKeyspaceEventsOfSessions(t *testing.T) {
	r := newRT(t)
	r.t.SetKeyspaceEvents(true)
	step := func(cmd *Command, want string) {
		t.Helper()
		if got := keyspaceEvents(r.apply(cmd)); got != want {
			t.Errorf("op %d: events %q, want %q", cmd.Op, got, want)
		}
	}
	step(&Command{Op: OpSessionOpen, Session: "s1", TTL: 1000}, "")
	step(&Command{Op: OpAcquire, Key: "a", Owner: "o", Session: "s1"}, "new:a set:a")
	step(&Command{Op: OpSessionClose, Session: "s1"}, "del:a")
	step(&Command{Op: OpSessionOpen, Session: "s2", TTL: 1000}, "")
	step(&Command{Op: OpAcquire, Key: "b", Owner: "o", Session: "s2"}, "new:b set:b")
	r.now += 1000
	step(&Command{Op: OpTick}, "expired:b")
}

// TestKeyspaceEventsOff: by default (and once turned off) no EvKeyspace
// is emitted, and the table changes alike.
func TestKeyspaceEventsOff(t *testing.T) {
	on, off := newRT(t), newRT(t)
	on.t.SetKeyspaceEvents(true)
	for _, args := range [][]string{{"SET", "a", "1", "PX", "100"}, {"HSET", "h", "f", "v"}, {"DEL", "h"}} {
		if got := keyspaceEvents(off.apply(&Command{Op: OpRedis, Args: bargs(args...)})); got != "" {
			t.Errorf("%q with events off: %q", args, got)
		}
		on.apply(&Command{Op: OpRedis, Args: bargs(args...)})
	}
	if g := keyspaceEvents(off.apply(&Command{Op: OpAcquire, Key: "k", Owner: "o", TTL: 100})); g != "" {
		t.Errorf("acquire with events off: %q", g)
	}
	on.apply(&Command{Op: OpAcquire, Key: "k", Owner: "o", TTL: 100})
	on.t.SetKeyspaceEvents(false)
	on.now += 100
	off.now += 100
	if g := keyspaceEvents(on.apply(&Command{Op: OpTick})); g != "" {
		t.Errorf("expiry after turning events off: %q", g)
	}
	off.apply(&Command{Op: OpTick})
	var a, b bytes.Buffer
	if err := on.t.Snapshot(&a); err != nil {
		t.Fatal(err)
	}
	if err := off.t.Snapshot(&b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("the tables differ with events on and off")
	}
}
