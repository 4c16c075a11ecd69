package fsm

import (
	"bytes"
	"strings"
	"testing"

	"github.com/locknode/locknode/fsm/reply"
)

// step is one command of a scenario and the reply it must produce
// (fmtReply form). advance moves the FSM clock forward first.
type step struct {
	advance int64
	args    []string
	want    string
}

func s(want string, args ...string) step { return step{args: args, want: want} }
func after(ms int64, want string, args ...string) step {
	return step{advance: ms, args: args, want: want}
}

func runSteps(t *testing.T, r *rt, steps []step) {
	t.Helper()
	for i, st := range steps {
		r.now += st.advance
		got := fmtReply(r.do(st.args...))
		if got != st.want {
			t.Errorf("step %d %v: got %s, want %s", i, st.args, got, st.want)
		}
	}
}

func TestRedisLocksInKeySpace(t *testing.T) {
	const wt = "-" + errWrongType
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"set-nx-creates-a-lock", []step{
			s("+OK", "SET", "l", "tok", "NX", "PX", "1000"),
			s(`"tok"`, "GET", "l"),
			s("+string", "TYPE", "l"),
			s(":1000", "PTTL", "l"),
			s(":1", "TTL", "l"),
			s(":1", "EXISTS", "l"),
			s(`["tok" nil]`, "MGET", "l", "x"),
			s(`"to"`, "GETRANGE", "l", "0", "1"),
		}},
		{"same-token-repeat-succeeds-other-fails", []step{
			s("+OK", "SET", "l", "tok", "NX", "PX", "1000"),
			after(100, "+OK", "SET", "l", "tok", "NX", "PX", "1000"),
			s(":900", "PTTL", "l"), // the repeat changes nothing
			s("nil", "SET", "l", "other", "NX", "PX", "1000"),
			s(`"tok"`, "SET", "l", "other", "NX", "PX", "1000", "GET"),
		}},
		{"lease-ends-by-ttl", []step{
			s("+OK", "SET", "l", "tok", "NX", "PX", "500"),
			after(499, `"tok"`, "GET", "l"),
			after(1, "nil", "GET", "l"),
			s(":-2", "PTTL", "l"),
			s("+OK", "SET", "l", "b", "NX", "PX", "500"),
		}},
		{"del-force-releases", []step{
			s("+OK", "SET", "l", "tok", "NX", "PX", "1000"),
			s(":1", "DEL", "l"),
			s(":0", "EXISTS", "l"),
			s("+OK", "SET", "l", "b", "NX", "PX", "1000"),
			s(":1", "UNLINK", "l"),
		}},
		{"pexpire-extends", []step{
			s("+OK", "SET", "l", "tok", "NX", "PX", "1000"),
			s(":1", "PEXPIRE", "l", "5000"),
			s(":5000", "PTTL", "l"),
			s(":0", "PEXPIRE", "l", "100", "GT"),
			s(":1", "EXPIRE", "l", "10", "GT"),
			s(":10000", "PTTL", "l"),
			s(":0", "PERSIST", "l"),
			s(":1", "PEXPIRE", "l", "0"),
			s(":0", "EXISTS", "l"),
		}},
		{"plain-set-replaces-a-lock", []step{
			s("+OK", "SET", "l", "tok", "NX", "PX", "1000"),
			s("+OK", "SET", "l", "str"),
			s(`"str"`, "GET", "l"),
			s(":-1", "PTTL", "l"),
			s(":1", "INCR", "n"),
		}},
		{"other-writes-on-a-lock-are-wrongtype", []step{
			s("+OK", "SET", "l", "tok", "NX", "PX", "1000"),
			s("-"+errNotInt, "INCR", "l"),
			s(wt, "APPEND", "l", "x"),
			s(wt, "HSET", "l", "f", "v"),
			s(wt, "SADD", "l", "m"),
			s(wt, "LPUSH", "l", "m"),
			s(wt, "ZADD", "l", "1", "m"),
			s(":0", "MSETNX", "l", "x"),
			s(`"tok"`, "GET", "l"),
		}},
		{"set-nx-on-a-foreign-value-fails", []step{
			s(":1", "HSET", "h", "f", "v"),
			s("nil", "SET", "h", "tok", "NX", "PX", "1000"),
			s("+OK", "SET", "s", "v"),
			s("nil", "SET", "s", "tok", "NX"),
		}},
		{"ifeq-and-delex", []step{
			s("+OK", "SET", "l", "tok", "NX", "PX", "1000"),
			s("nil", "SET", "l", "tok", "IFEQ", "nope", "PX", "5000"),
			s("+OK", "SET", "l", "tok", "IFEQ", "tok", "PX", "5000"),
			s(":5000", "PTTL", "l"),
			s("+string", "TYPE", "l"),
			s(":0", "DELEX", "l", "IFEQ", "nope"),
			s(":1", "DELEX", "l", "IFEQ", "tok"),
			s(":0", "EXISTS", "l"),
			s("+OK", "SET", "s", "a"),
			s("+OK", "SET", "s", "b", "IFEQ", "a"),
			s("nil", "SET", "s", "c", "IFEQ", "a"),
			s("nil", "SET", "missing", "c", "IFEQ", "a"),
			s("-ERR syntax error", "SET", "s", "c", "IFEQ", "a", "NX"),
			s(":0", "DELEX", "s", "IFNE", "b"),
			s(":1", "DELEX", "s", "IFNE", "zz"),
			s(":0", "DELEX", "s"),
			s("-ERR syntax error", "DELEX", "s", "IFEQ"),
			s(":1", "HSET", "h", "f", "v"),
			s(wt, "DELEX", "h", "IFEQ", "v"),
			s(":1", "DELEX", "h"),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { runSteps(t, newRT(t), tc.steps) })
	}
}

func TestRedisCommandErrors(t *testing.T) {
	r := newRT(t)
	runSteps(t, r, []step{
		s("-ERR wrong number of arguments for 'get' command", "get"),
		s("-ERR wrong number of arguments for 'hset' command", "HSET", "h", "a", "1", "b"),
		s("-ERR wrong number of arguments for 'mset' command", "MSET", "a", "1", "b"),
		s("-ERR wrong number of arguments for 'lpop' command", "LPOP", "l", "1", "2"),
		s("-ERR unknown command 'FOO', with args beginning with: 'a' 'b' ", "FOO", "a", "b"),
		s("-ERR syntax error", "SET", "k", "v", "NX", "XX"),
		s("-ERR invalid expire time in 'set' command", "SET", "k", "v", "PX", "0"),
		s("-ERR value is not an integer or out of range", "SET", "k", "v", "EX", "1.5"),
		s("-ERR value is not a valid float", "ZADD", "z", "x", "m"),
		s("-ERR value is out of range, must be positive", "LPOP", "l", "-1"),
		s("-ERR min or max is not a float", "ZREMRANGEBYSCORE", "z", "a", "1"),
		s("-ERR Unsupported option foo", "EXPIRE", "k", "1", "foo"),
	})
	if got := fmtReply(r.do()); !strings.HasPrefix(got, "-ERR") {
		t.Errorf("empty command: %s", got)
	}
}

func TestRedisLimits(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxKeys = 3
	cfg.MaxKeyBytes = 8
	cfg.MaxValueBytes = 16
	r := &rt{tb: t, t: New(cfg), now: 1000}
	long := strings.Repeat("x", 17)
	runSteps(t, r, []step{
		s("-"+errKeyTooLong, "SET", "123456789", "v"),
		s("-"+errValTooLong, "SET", "k", long),
		s("-"+errValTooLong, "HSET", "h", "f", long),
		s("+OK", "SET", "a", "1"),
		s(":1", "HSET", "b", "f", "v"),
		s("-"+errKeysFull, "MSET", "c", "1", "d", "2"),
		s(":0", "EXISTS", "c", "d"),
		s("+OK", "SET", "c", "1"),
		s("-"+errKeysFull, "SADD", "d", "m"),
		s("-"+errKeysFull, "INCR", "d"),
		s("+OK", "SET", "a", "2"), // replacing needs no new key
		s(":3", "HSET", "b", "f", "v", "g", "w", "h", "x", "i", "y"),
	})
	if n := len(r.t.keys); n != 3 {
		t.Fatalf("keys = %d, want 3", n)
	}
}

func TestRedisReadIsReadOnly(t *testing.T) {
	r := newRT(t)
	r.do("SET", "s", "v", "PX", "1000")
	r.do("SET", "l", "tok", "NX", "PX", "2000")
	before := r.t.keys["s"].Version
	for _, tc := range []struct {
		now  int64
		args []string
		want string
	}{
		{r.now, []string{"GET", "s"}, `"v"`},
		{r.now + 999, []string{"PTTL", "s"}, ":1"},
		{r.now + 1000, []string{"GET", "s"}, "nil"}, // expired by then: gone, though not yet removed
		{r.now + 1000, []string{"EXISTS", "s", "l"}, ":1"},
		{r.now + 1500, []string{"PTTL", "l"}, ":500"},
		{r.now + 2000, []string{"GET", "l"}, "nil"},
		{r.now + 2000, []string{"TYPE", "l"}, "+none"},
		{0, []string{"GET", "s"}, `"v"`}, // a time before the FSM clock reads at the FSM clock
		{r.now, []string{"get"}, "-ERR wrong number of arguments for 'get' command"},
	} {
		got, ok := r.t.Read(tc.now, bargs(tc.args...))
		if !ok || fmtReply(got) != tc.want {
			t.Errorf("Read(%d, %v) = %s, %v; want %s", tc.now-r.now, tc.args, fmtReply(got), ok, tc.want)
		}
	}
	for _, args := range [][]string{{"SET", "s", "x"}, {"DEL", "s"}, {"NOPE"}, {}} {
		if _, ok := r.t.Read(r.now, bargs(args...)); ok {
			t.Errorf("Read accepted %v", args)
		}
	}
	if r.t.keys["s"] == nil || r.t.keys["s"].Version != before {
		t.Fatal("Read changed the table")
	}
	if !lookupCmd([]byte("zrangebyscore")).ro || lookupCmd([]byte("SET")).ro || lookupCmd([]byte("nope")) != nil {
		t.Error("read-only commands")
	}
	if lookupCmd([]byte("DelEx")) == nil || lookupCmd([]byte("EVAL")) != nil {
		t.Error("known commands")
	}
}

// TestLookupCmdNames: command names resolve case-insensitively, a
// non-ASCII name exactly as strings.ToLower lowers it (the KELVIN SIGN
// lowers to k), and nothing longer than 32 bytes resolves.
func TestLookupCmdNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		want string // "" = unknown
	}{
		{"set", "set"},
		{"SET", "set"},
		{"sEt", "set"},
		{"ZRangeByScore", "zrangebyscore"},
		{"HKEYS", "hkeys"},
		{"H\u212aEYS", "hkeys"},
		{"h\u212aeys", "hkeys"},
		{"s\u00e9t", ""},
		{"SET ", ""},
		{"", ""},
		{"nope", ""},
		{strings.Repeat("a", 33), ""},
		{"EVAL", ""},
	} {
		c := lookupCmd([]byte(tc.name))
		got := ""
		if c != nil {
			got = c.name
		}
		if got != tc.want {
			t.Errorf("lookupCmd(%q) = %q, want %q", tc.name, got, tc.want)
		}
		if want := redisCmds[strings.ToLower(tc.name)]; len(tc.name) <= 32 && c != want {
			t.Errorf("lookupCmd(%q) differs from the strings.ToLower lookup", tc.name)
		}
	}
	if n := testing.AllocsPerRun(100, func() { lookupCmd([]byte("SET")) }); n != 0 {
		t.Errorf("lookupCmd(\"SET\") allocates %v times", n)
	}
}

func TestRedisExecAndWatch(t *testing.T) {
	r := newRT(t)
	r.do("SET", "w", "1")
	ver := r.t.KeyVersion("w", r.now)
	if ver == 0 || r.t.KeyVersion("absent", r.now) != 0 {
		t.Fatalf("KeyVersion = %d", ver)
	}
	exec := func(watch []WatchKey, cmds ...[]string) string {
		m := make([][][]byte, len(cmds))
		for i, c := range cmds {
			m[i] = bargs(c...)
		}
		return fmtReply(r.apply(&Command{Op: OpExec, Watch: watch, Multi: m}).Reply)
	}
	if got := exec([]WatchKey{{"w", ver}, {"absent", 0}}, []string{"INCR", "w"}, []string{"HSET", "w", "f", "v"}, []string{"GET", "w"}); got !=
		`[:2 -WRONGTYPE Operation against a key holding the wrong kind of value "2"]` {
		t.Fatalf("exec = %s", got)
	}
	if got := exec([]WatchKey{{"w", ver}}, []string{"SET", "w", "x"}); got != "(nil-array)" {
		t.Fatalf("exec after a change = %s", got)
	}
	if got := fmtReply(r.do("GET", "w")); got != `"2"` {
		t.Fatalf("broken watch ran commands: %s", got)
	}
}

func TestRedisExecRunsScripts(t *testing.T) {
	r := newRT(t)
	cad := `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`
	sha := ScriptSHA([]byte(cad))
	m := [][][]byte{
		bargs("SET", "k", "v"),
		bargs("EVALSHA", sha, "1", "k", "v"), // not cached yet: NOSCRIPT
		bargs("EVAL", cad, "1", "k", "other"),
		bargs("evalsha", sha, "1", "k", "v"), // EVAL cached it
		bargs("EVAL", cad, "2", "k"),
		bargs("EVAL", cad),
		bargs("EXISTS", "k"),
	}
	got := fmtReply(r.apply(&Command{Op: OpExec, Multi: m}).Reply)
	want := `[+OK -NOSCRIPT No matching script. Please use EVAL. :0 :1 ` +
		`-ERR Number of keys can't be greater than number of args -ERR wrong number of arguments for 'eval' command :0]`
	if got != want {
		t.Fatalf("exec = %s\nwant   %s", got, want)
	}
}

func TestRedisPublishEvent(t *testing.T) {
	r := newRT(t)
	res := r.apply(&Command{Op: OpRedis, Args: bargs("PUBLISH", "ch", "msg")})
	if fmtReply(res.Reply) != ":0" || len(res.Events) != 1 || res.Events[0].Kind != EvPublish ||
		res.Events[0].Channel != "ch" || res.Events[0].Message != "msg" {
		t.Fatalf("publish: %+v", res)
	}
	res = r.apply(&Command{Op: OpEval, Script: []byte(`redis.call('publish', KEYS[1], ARGV[1]) return 1`),
		KeysB: bargs("c2"), Args: bargs("m2")})
	if len(res.Events) != 1 || res.Events[0].Channel != "c2" {
		t.Fatalf("publish from a script: %+v", res.Events)
	}
}

func TestRedisTimeFromCommand(t *testing.T) {
	r := newRT(t)
	r.now = 1_700_000_123_456
	if got := fmtReply(r.do("TIME")); got != `["1700000123" "456000"]` {
		t.Fatalf("TIME = %s", got)
	}
	if got := fmtReply(r.eval(`return redis.call('TIME')`, 0)); got != `["1700000123" "456000"]` {
		t.Fatalf("TIME in a script = %s", got)
	}
}

func TestRedisSortedReplies(t *testing.T) {
	r := newRT(t)
	r.do("HSET", "h", "b", "2", "c", "3", "a", "1")
	r.do("SADD", "s", "z", "x", "y")
	runSteps(t, r, []step{
		s(`["a" "1" "b" "2" "c" "3"]`, "HGETALL", "h"),
		s(`["a" "b" "c"]`, "HKEYS", "h"),
		s(`["1" "2" "3"]`, "HVALS", "h"),
		s(`["x" "y" "z"]`, "SMEMBERS", "s"),
	})
}

func TestNativeScriptFastPath(t *testing.T) {
	cad := hotText(famCADMissing)
	cape := hotText(famCAPE)
	r := newRT(t)
	if fam := classify([]byte(strings.ReplaceAll(cad, "\n", "\r\n"))); fam != famCADMissing {
		t.Fatalf("CRLF variant not recognised: %v", fam)
	}
	if classify([]byte(`return 1`)) != famNone {
		t.Fatal("unrelated script classified")
	}
	for i, st := range []struct {
		advance int64
		script  string
		args    []string
		want    string
	}{
		{0, cad, []string{"tok"}, ":-1"}, // missing
		{0, "SETNX", []string{"tok"}, "+OK"},
		{0, cape, []string{"other", "5000"}, ":0"},
		{0, cape, []string{"tok", "5000"}, ":1"},
		{0, "PTTL", nil, ":5000"},
		{0, cad, []string{"other"}, ":0"},
		{0, cad, []string{"tok"}, ":1"},
		// The releasing token's repeated release answers as the release
		// did; its extend does not: nobody holds the lock.
		{0, cad, []string{"tok"}, ":1"},
		{0, cape, []string{"tok", "5000"}, ":0"},
		{0, hotText(famCAPE1), []string{"tok", "5000"}, ":0"},
		{0, "EXISTS", nil, ":0"},
		{0, cad, []string{"other"}, ":-1"},
		// Until the old lease's deadline.
		{5000, cad, []string{"tok"}, ":-1"},
		{0, cape, []string{"tok", "5000"}, ":0"},
	} {
		r.now += st.advance
		var got string
		switch st.script {
		case "SETNX":
			got = fmtReply(r.do("SET", "k", st.args[0], "NX", "PX", "1000"))
		case "PTTL", "EXISTS":
			got = fmtReply(r.do(st.script, "k"))
		default:
			got = fmtReply(r.eval(st.script, 1, append([]string{"k"}, st.args...)...))
		}
		if got != st.want {
			t.Errorf("step %d %s %v: got %s, want %s", i, firstLine(st.script), st.args, got, st.want)
		}
	}
	if _, ok := r.t.ScriptBySHA(ScriptSHA([]byte(cad))); !ok {
		t.Error("EVAL via the native path did not cache the script")
	}
}

// The native path and the Lua path of the same script must agree on
// everything but the tombstone answer.
func TestNativeMatchesLua(t *testing.T) {
	for _, h := range hotScripts {
		// A trailing comment changes the SHA but not the meaning: Lua runs it.
		luaText := h.text + "\n-- not hot"
		if classify([]byte(luaText)) != famNone {
			t.Fatal("commented variant still hot")
		}
		for _, setup := range [][]string{
			nil,
			{"SET", "k", "tok", "NX", "PX", "1000"},
			{"SET", "k", "other", "NX", "PX", "1000"},
			{"SET", "k", "tok"},
			{"SET", "k", "tok", "PX", "800"},
		} {
			for _, args := range [][]string{{"tok", "3000"}, {"other", "3000"}, {"tok", "x"}, {"tok", "-5"}, {"tok"}} {
				var replies, states [2]string
				for i, text := range []string{h.text, luaText} {
					r := newRT(t)
					if setup != nil {
						r.do(setup...)
					}
					replies[i] = fmtReply(r.eval(text, 1, append([]string{"k"}, args...)...))
					replies[i] = strings.Split(replies[i], " script: ")[0]
					states[i] = fmtReply(r.do("GET", "k")) + fmtReply(r.do("PTTL", "k"))
				}
				if replies[0] != replies[1] || states[0] != states[1] {
					t.Errorf("%s setup %v args %v: native %s %s, lua %s %s",
						firstLine(h.text), setup, args, replies[0], states[0], replies[1], states[1])
				}
			}
		}
	}
}

func TestScriptCache(t *testing.T) {
	r := newRT(t)
	src := []byte(`return ARGV[1]`)
	res := r.apply(&Command{Op: OpScriptLoad, Script: src}).Reply
	if res.Kind != reply.Bulk || res.Str != ScriptSHA(src) || len(res.Str) != 40 {
		t.Fatalf("SCRIPT LOAD = %s", fmtReply(res))
	}
	if ScriptSHA([]byte("")) != "da39a3ee5e6b4b0d3255bfef95601890afd80709" {
		t.Fatal("ScriptSHA")
	}
	if got, ok := r.t.ScriptBySHA(res.Str); !ok || !bytes.Equal(got, src) {
		t.Fatal("ScriptBySHA")
	}
	bad := r.apply(&Command{Op: OpScriptLoad, Script: []byte(`return +`)}).Reply
	if !strings.HasPrefix(bad.Str, "ERR Error compiling script") {
		t.Fatalf("bad SCRIPT LOAD = %s", fmtReply(bad))
	}
	r.eval(`return 2`, 0)
	loaded, evals := r.t.scripts.cache.snapshot()
	if len(loaded) != 1 || len(evals) != 1 || !bytes.Equal(loaded[0], src) {
		t.Fatalf("snapshot = %q %q", loaded, evals)
	}
	var x scriptCache
	x.restore(loaded, evals)
	if got, ok := x.get(ScriptSHA(src)); !ok || !bytes.Equal(got, src) || x.lru.Len() != 1 {
		t.Fatal("restore")
	}
	long := bytes.Repeat([]byte("-"), DefaultConfig().MaxScriptBytes+1)
	if got := r.eval(string(long), 0); got.Str != errScriptLong {
		t.Fatalf("long script: %s", fmtReply(got))
	}
}
