package compat

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Differential test through the wire: the same command and script
// sequences (one or more per script family F1–F12 of
// shared/redis-clients.md §6.2, written here in the clients' shape) go to
// a real redis-server and to a locknode node over RESP, in RESP2 and
// RESP3; every reply and the resulting keys (type, value, TTL) must match.
// Where locknode differs from Redis on purpose (DESIGN.md "One key space
// for every client"), the step names the reply locknode must give.
//
// fsm/redis_diff_test.go does the same at the FSM level; this one adds
// the RESP codec, the bridge's command table, forwarding from a follower,
// and the script cache (EVAL, then EVALSHA of the same text).

const diffTol = 300 // ms of slack (s for TTL) for time-dependent numbers

// step is one command of a sequence.
type step struct {
	args      []string
	approx    bool // numbers may differ by diffTol (TTLs)
	tol       float64
	errPrefix bool   // compare only an error's first word (the text names interpreter positions)
	unordered bool   // set members / hash fields may come in any order
	deviation string // locknode must answer this (rendered) instead of Redis' reply
	why       string // the DESIGN.md reason for the deviation
}

func (s step) approxTo(tol float64) step { s.approx, s.tol = true, tol; return s }
func (s step) approxMs() step            { return s.approxTo(diffTol) }
func (s step) anyError() step            { s.errPrefix = true; return s }
func (s step) anyOrder() step            { s.unordered = true; return s }
func (s step) deviates(reply, why string) step {
	s.deviation, s.why = reply, why
	return s
}

func cmd(args ...string) step { return step{args: args} }

func sha1hex(s string) string {
	h := sha1.Sum([]byte(s))
	return hex.EncodeToString(h[:])
}

func evalArgs(verb, script string, keys []string, args []string) step {
	a := []string{verb, script, strconv.Itoa(len(keys))}
	a = append(a, keys...)
	return step{args: append(a, args...)}
}

// eval runs script by text; evalsha by the SHA1 of the same text (after
// an eval of it, both servers have it cached).
func eval(script string, keys []string, args ...string) step {
	return evalArgs("EVAL", script, keys, args)
}

func evalsha(script string, keys []string, args ...string) step {
	return evalArgs("EVALSHA", sha1hex(script), keys, args)
}

// keys is a shorthand for a KEYS list.
func keys(k ...string) []string { return k }

// sequence is one scenario; keys named "$P:..." get a fresh prefix.
type sequence struct {
	name  string
	keys  []string // compared after the run: TYPE, value, PTTL
	steps []step
	// keepGoing reports every mismatching step, not only the first.
	keepGoing bool
	// scoreTol is the slack for sorted-set scores in the final compare
	// (scores computed from TIME).
	scoreTol float64
}

func TestDifferentialVsRedis(t *testing.T) {
	redisAddr := startRedis(t)
	tc := newCluster(t, 3)
	// Through a follower: writes are forwarded, replies come back through
	// the follower's bridge.
	node := (tc.leader(10*time.Second) + 1) % 3
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			for _, seq := range diffSequences() {
				t.Run(seq.name, func(t *testing.T) {
					runDiff(t, seq, dialRESP(t, redisAddr, proto), dialRESP(t, tc.resp[node], proto),
						fmt.Sprintf("%s-%d", uniq("d"), proto))
				})
			}
		})
	}
}

func runDiff(t *testing.T, seq sequence, redis, ln *respConn, prefix string) {
	t.Helper()
	sub := func(s string) string { return strings.ReplaceAll(s, "$P", prefix) }
	var log []string
	fail := func(format string, args ...any) {
		t.Helper()
		if seq.keepGoing {
			t.Errorf("%s", fmt.Sprintf(format, args...))
			return
		}
		t.Fatalf("%s\nsteps so far:\n  %s", fmt.Sprintf(format, args...), strings.Join(log, "\n  "))
	}
	for i, st := range seq.steps {
		args := make([]string, len(st.args))
		for j, a := range st.args {
			args[j] = sub(a)
		}
		want, err := redis.do(args...)
		if err != nil {
			t.Fatalf("step %d %q: redis-server: %v", i, short(args), err)
		}
		got, err := ln.do(args...)
		if err != nil {
			t.Fatalf("step %d %q: locknode: %v", i, short(args), err)
		}
		if st.unordered {
			want, got = unorder(want), unorder(got)
		}
		log = append(log, fmt.Sprintf("%d %s -> redis %v, locknode %v", i, short(args), want, got))
		switch {
		case st.deviation != "":
			if got.String() != st.deviation {
				fail("step %d %s: locknode = %v, want %s (by design: %s; redis-server says %v)", i, short(args), got, st.deviation, st.why, want)
			}
			if sameReply(want, got, st.approx, st.tol) {
				fail("step %d %s: the documented deviation (%s) is gone: both say %v; drop it from the test", i, short(args), st.why, got)
			}
		case st.errPrefix && want.kind == '-':
			if got.kind != '-' || firstWord(got.str) != firstWord(want.str) {
				fail("step %d %s: locknode = %v, redis-server = %v", i, short(args), got, want)
			}
		case !sameReply(want, got, st.approx, st.tol):
			fail("step %d %s: locknode = %v, redis-server = %v", i, short(args), got, want)
		}
	}
	for _, k := range seq.keys {
		compareKey(t, sub(k), redis, ln, seq.scoreTol, fail)
	}
}

// compareKey compares a key's type, value and remaining TTL.
func compareKey(t *testing.T, key string, redis, ln *respConn, scoreTol float64, fail func(string, ...any)) {
	t.Helper()
	both := func(args ...string) (rv, rv) {
		a, err := redis.do(args...)
		if err != nil {
			t.Fatalf("redis-server %q: %v", args, err)
		}
		b, err := ln.do(args...)
		if err != nil {
			t.Fatalf("locknode %q: %v", args, err)
		}
		return a, b
	}
	a, b := both("TYPE", key)
	if !sameReply(a, b, false, 0) {
		fail("key %s: TYPE locknode %v, redis-server %v", key, b, a)
	}
	var tol float64
	norm := func(r rv) rv { return r }
	var read []string
	switch a.str {
	case "none":
		return
	case "string":
		read = []string{"GET", key}
	case "hash":
		read, norm = []string{"HGETALL", key}, sortedPairs
	case "set":
		read, norm = []string{"SMEMBERS", key}, sortedElems
	case "zset":
		read, tol = []string{"ZRANGE", key, "0", "-1", "WITHSCORES"}, scoreTol
	case "list":
		read = []string{"LRANGE", key, "0", "-1"}
	default:
		fail("key %s: unexpected type %q", key, a.str)
	}
	a, b = both(read...)
	// Shapes are TestRESP3ReplyShapes' business; here only the contents.
	if a, b = norm(flat(a)), norm(flat(b)); !sameReply(a, b, tol > 0, tol) {
		fail("key %s: %s: locknode %v, redis-server %v", key, read[0], b, a)
	}
	a, b = both("PTTL", key)
	if !sameReply(a, b, true, diffTol) {
		fail("key %s: PTTL locknode %v, redis-server %v", key, b, a)
	}
}

// unorder sorts a set's members or a map's pairs (or the same as flat
// arrays, which is how RESP2 sends them: pairs for HGETALL, else members).
func unorder(r rv) rv {
	switch r.kind {
	case '%':
		return sortedPairs(r)
	case '*', '~':
		return sortedElems(r)
	}
	return r
}

// flat turns RESP3 maps, sets and nested pairs into one flat array.
func flat(r rv) rv {
	switch r.kind {
	case '*', '%', '~':
	default:
		return r
	}
	out := rv{kind: '*'}
	for _, e := range r.elems {
		if e.kind == '*' {
			out.elems = append(out.elems, flat(e).elems...)
		} else {
			out.elems = append(out.elems, e)
		}
	}
	return out
}

func firstWord(s string) string {
	if i := strings.IndexByte(s, ' '); i >= 0 {
		return s[:i]
	}
	return s
}

// short shortens long arguments (script texts) for messages.
func short(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		a = strings.Join(strings.Fields(a), " ")
		if len(a) > 40 {
			a = a[:37] + "..."
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// TestRESP3ReplyShapes: in RESP3, Redis answers HGETALL with a map,
// SMEMBERS with a set and ZRANGE ... WITHSCORES with [member, score]
// pairs; RESP3 clients (redis-py 8, ioredis 6 with resp3 reply mapping,
// Redisson in RESP3 mode) decode by those types. The same sequence runs in
// RESP2, where all are flat arrays, as a control.
func TestRESP3ReplyShapes(t *testing.T) {
	redisAddr := startRedis(t)
	tc := newCluster(t, 3)
	const H, S, Z = "$P:hash", "$P:set", "$P:zset"
	seq := sequence{name: "shapes", keepGoing: true, steps: []step{
		cmd("HSET", H, "f1", "v1", "f2", "v2"),
		cmd("SADD", S, "m1", "m2"),
		cmd("ZADD", Z, "1.5", "a", "2", "b"),
		cmd("HGETALL", "$P:none"),
		cmd("ZSCORE", Z, "a"),
		cmd("ZRANGE", Z, "0", "-1"),
		cmd("HGETALL", H),
		cmd("SMEMBERS", S).anyOrder(),
		cmd("ZRANGE", Z, "0", "-1", "WITHSCORES"),
		cmd("ZRANGEBYSCORE", Z, "-inf", "+inf", "WITHSCORES"),
		cmd("CONFIG", "GET", "timeout"),
		// Scripts see RESP2 shapes unless they call redis.setresp(3).
		eval("return redis.call('hgetall', KEYS[1])", keys(H)),
		eval("return redis.call('zrange', KEYS[1], 0, -1, 'withscores')", keys(Z)),
	}}
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			runDiff(t, seq, dialRESP(t, redisAddr, proto), dialRESP(t, tc.resp[0], proto), fmt.Sprintf("%s-%d", uniq("s"), proto))
		})
	}
}
