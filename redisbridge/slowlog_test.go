package redisbridge

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSlowlog: entries in Redis' shape, newest first, arguments
// truncated as Redis does, passwords redacted, bounded by
// slowlog-max-len, and CONFIG GET/SET of both parameters.
func TestSlowlog(t *testing.T) {
	s, _ := testServer(t, Config{})
	c := dialRaw(t, s)
	if got := strs(c.do("CONFIG", "GET", "slowlog-*")); strings.Join(got, " ") != "slowlog-log-slower-than 10000 slowlog-max-len 128" {
		t.Fatalf("CONFIG GET slowlog-* = %v (Redis' defaults wanted)", got)
	}
	if v := c.do("SLOWLOG", "LEN"); v.Int != 0 {
		t.Fatalf("SLOWLOG LEN at start = %v", v)
	}
	if v := c.do("CONFIG", "SET", "slowlog-log-slower-than", "0"); v.Str != "OK" {
		t.Fatalf("CONFIG SET = %v", v)
	}
	c.do("CLIENT", "SETNAME", "me")
	c.do("SET", "k", strings.Repeat("x", 200))
	many := []string{"MSET"}
	for i := range 40 {
		many = append(many, "m"+strconv.Itoa(i), "v")
	}
	c.do(many...)
	c.do("AUTH", "default", "hunter2")
	es := c.do("SLOWLOG", "GET", "3").Elems
	if len(es) != 3 {
		t.Fatalf("SLOWLOG GET 3 = %d entries", len(es))
	}
	// Newest first: AUTH, MSET, SET.
	auth, mset, set := es[0], es[1], es[2]
	for _, e := range es {
		if len(e.Elems) != 6 || e.Elems[0].Type != ':' || e.Elems[1].Type != ':' || e.Elems[2].Type != ':' ||
			e.Elems[3].Type != '*' || e.Elems[4].Type != '$' || e.Elems[5].Type != '$' {
			t.Fatalf("entry not in Redis' shape (id, time, µs, args, addr, name): %v", e)
		}
		if at := e.Elems[1].Int; at < time.Now().Add(-time.Minute).Unix() || at > time.Now().Unix()+1 {
			t.Fatalf("entry time %d is not now", at)
		}
		if e.Elems[4].Str != c.nc.LocalAddr().String() || e.Elems[5].Str != "me" {
			t.Fatalf("entry client %q name %q, want %q me", e.Elems[4].Str, e.Elems[5].Str, c.nc.LocalAddr())
		}
	}
	if auth.Elems[0].Int != mset.Elems[0].Int+1 || mset.Elems[0].Int != set.Elems[0].Int+1 {
		t.Fatalf("ids not consecutive, newest first: %d %d %d", auth.Elems[0].Int, mset.Elems[0].Int, set.Elems[0].Int)
	}
	if got := strs(set.Elems[3]); len(got) != 3 || got[2] != strings.Repeat("x", 128)+"... (72 more bytes)" {
		t.Fatalf("long argument = %q", got)
	}
	if got := strs(mset.Elems[3]); len(got) != 32 || got[31] != "... (50 more arguments)" || got[29] != "m14" {
		t.Fatalf("many arguments = %d: %q", len(got), got)
	}
	if got := strs(auth.Elems[3]); strings.Join(got, " ") != "AUTH (redacted) (redacted)" {
		t.Fatalf("AUTH entry = %q", got)
	}
	if v := c.do("SLOWLOG", "GET", "-1"); len(v.Elems) < 5 {
		t.Fatalf("SLOWLOG GET -1 = %d entries", len(v.Elems))
	}

	// slowlog-max-len bounds the log; setting it lower drops the oldest.
	c.do("CONFIG", "SET", "slowlog-max-len", "2")
	if v := c.do("SLOWLOG", "LEN"); v.Int != 2 {
		t.Fatalf("SLOWLOG LEN after max-len 2 = %v", v)
	}
	for range 5 {
		c.do("PING")
	}
	if v := c.do("SLOWLOG", "LEN"); v.Int != 2 {
		t.Fatalf("SLOWLOG LEN past max-len = %v", v)
	}
	if v := c.do("SLOWLOG", "RESET"); v.Str != "OK" {
		t.Fatal(v)
	}
	// RESET itself is then logged, as in Redis.
	if v := c.do("SLOWLOG", "LEN"); v.Int != 1 {
		t.Fatalf("SLOWLOG LEN after RESET = %v", v)
	}
	c.do("CONFIG", "SET", "slowlog-log-slower-than", "-1")
	c.do("SLOWLOG", "RESET")
	c.do("PING")
	if v := c.do("SLOWLOG", "LEN"); v.Int != 0 {
		t.Fatalf("SLOWLOG LEN with logging off = %v", v)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"SLOWLOG", "GET", "-2"}, "ERR count should be greater than or equal to -1"},
		{[]string{"SLOWLOG", "GET", "x"}, "ERR count should be greater than or equal to -1"},
		{[]string{"SLOWLOG", "FOO"}, "ERR unknown subcommand 'FOO'. Try SLOWLOG HELP."},
		{[]string{"SLOWLOG", "LEN", "x"}, "ERR wrong number of arguments for 'slowlog|len' command"},
		{[]string{"CONFIG", "SET", "slowlog-max-len", "x"}, "ERR CONFIG SET failed (possibly related to argument 'slowlog-max-len') - argument must be between 0 and 10000 inclusive"},
		{[]string{"CONFIG", "SET", "slowlog-log-slower-than", "1.5"}, "ERR CONFIG SET failed (possibly related to argument 'slowlog-log-slower-than') - argument couldn't be parsed into an integer"},
		{[]string{"CONFIG", "SET", "maxmemory", "1"}, "ERR Unknown option or number of arguments for CONFIG SET - 'maxmemory'"},
		{[]string{"CONFIG", "SET", "slowlog-max-len"}, "ERR wrong number of arguments for 'config|set' command"},
	} {
		if v := c.do(tc.args...); v.Str != tc.want {
			t.Errorf("%v = %v, want %q", tc.args, v, tc.want)
		}
	}
	// A refused pair changes nothing, not even the valid pair before it.
	c.do("CONFIG", "SET", "slowlog-max-len", "7", "slowlog-log-slower-than", "x")
	if got := strs(c.do("CONFIG", "GET", "slowlog-max-len")); got[1] != "2" {
		t.Fatalf("a refused CONFIG SET applied a pair: %v", got)
	}
}

// TestSlowlogFilteredByKeyPatterns: a user sees the entries whose keys
// its patterns allow (and those naming no key); a user of ~* sees all.
func TestSlowlogFilteredByKeyPatterns(t *testing.T) {
	s, _ := usersServer(t, testUsers+"user aa on >aap ~app:* +@all\n")
	root := dialRaw(t, s)
	root.do("AUTH", "root", "rootp")
	root.do("CONFIG", "SET", "slowlog-log-slower-than", "0")
	root.do("SET", "other:k", "secret")
	root.do("SET", "app:k", "v")
	root.do("MSET", "app:a", "1", "other:b", "2")
	root.do("PING")
	a := dialRaw(t, s)
	a.do("AUTH", "aa", "aap")
	var cmds []string
	for _, e := range a.do("SLOWLOG", "GET", "-1").Elems {
		cmds = append(cmds, strings.Join(strs(e.Elems[3]), " "))
	}
	got := strings.Join(cmds, "|")
	if strings.Contains(got, "other:") {
		t.Fatalf("a user of ~app:* sees entries of other keys: %q", got)
	}
	if !strings.Contains(got, "SET app:k v") || !strings.Contains(got, "PING") {
		t.Fatalf("entries of app:* keys and of no key missing: %q", got)
	}
	// LEN counts the GET just logged too.
	if n, all := a.do("SLOWLOG", "LEN").Int, root.do("SLOWLOG", "LEN").Int; n != int64(len(cmds))+1 || n >= all {
		t.Fatalf("SLOWLOG LEN as ~app:* = %d (listed %d), as ~* = %d", n, len(cmds), all)
	}
}
