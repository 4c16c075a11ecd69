package compat

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestKeyspaceCommandsVsRedis: SCAN, KEYS, DBSIZE, INFO keyspace,
// SLOWLOG, ACL WHOAMI and CONFIG GET slowlog-* against a real
// redis-server, through a follower (reads go through the leader's read
// index). Orders Redis does not promise (KEYS, SCAN's steps) are
// compared as sets: a whole SCAN iteration must list the same keys.
func TestKeyspaceCommandsVsRedis(t *testing.T) {
	redisAddr := startRedis(t)
	tc := newCluster(t, 3)
	node := (tc.leader(10*time.Second) + 1) % 3
	redis, ln := dialRESP(t, redisAddr, 2), dialRESP(t, tc.resp[node], 2)
	both := func(args ...string) (rv, rv) {
		t.Helper()
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
	same := func(args ...string) {
		t.Helper()
		a, b := both(args...)
		if a.String() != b.String() {
			t.Errorf("%q: locknode = %v, redis-server = %v", args, b, a)
		}
	}
	sameSet := func(args ...string) {
		t.Helper()
		a, b := both(args...)
		if sortedElems(a).String() != sortedElems(b).String() {
			t.Errorf("%q: locknode = %v, redis-server = %v", args, sortedElems(b), sortedElems(a))
		}
	}
	scanAll := func(c *respConn, opts ...string) []string {
		t.Helper()
		var out []string
		cursor := "0"
		for range 100000 {
			r, err := c.do(append([]string{"SCAN", cursor}, opts...)...)
			if err != nil || r.kind != '*' || len(r.elems) != 2 {
				t.Fatalf("SCAN %s %q: %v, %v", cursor, opts, r, err)
			}
			for _, e := range r.elems[1].elems {
				out = append(out, e.str)
			}
			if cursor = r.elems[0].str; cursor == "0" {
				slices.Sort(out)
				return slices.Compact(out) // Redis may return a key twice
			}
		}
		t.Fatalf("SCAN %q did not end", opts)
		return nil
	}

	same("DBSIZE")
	same("KEYS", "*")
	for _, args := range [][]string{
		{"SET", "s1", "v"},
		{"SET", "s2", "v", "PX", "60000"},
		{"SET", "lock1", "tok", "NX", "PX", "60000"}, // a lock on locknode
		{"HSET", "h1", "f", "v"},
		{"SET", "a*b", "v"}, {"SET", "a?b", "v"}, {"SET", "axb", "v"}, {"SET", `a\b`, "v"}, {"SET", "a[b", "v"},
	} {
		same(args...)
	}
	for i := range 300 {
		same("SET", fmt.Sprintf("many:%03d", i), "v")
	}
	same("DBSIZE")
	for _, pat := range []string{"*", "a*", `a\*b`, `a\?b`, "a?b", "a[x*]b", "a[^x]b", `a\\b`, "many:1*", "many:[0-1]0?", "nomatch*", "s[12]", "[", `a\[b`} {
		sameSet("KEYS", pat)
	}
	for _, opts := range [][]string{
		nil,
		{"COUNT", "1"},
		{"COUNT", "1000"},
		{"MATCH", "many:2*", "COUNT", "5"},
		{"MATCH", `a\*b`},
		{"TYPE", "hash"},
		{"TYPE", "string", "MATCH", "[sl]*"},
		{"TYPE", "nosuch"},
	} {
		a, b := scanAll(redis, opts...), scanAll(ln, opts...)
		if !slices.Equal(a, b) {
			t.Errorf("whole SCAN %q: locknode %d keys, redis-server %d keys\nlocknode: %q\nredis:    %q", opts, len(b), len(a), b, a)
		}
	}
	for _, args := range [][]string{
		{"SCAN", "x"}, {"SCAN", "-"}, {"SCAN", " 1"}, {"SCAN", "99999999999999999999"}, {"SCAN", "0", "COUNT", "0"}, {"SCAN", "0", "COUNT", "x"},
		{"SCAN", "0", "BOGUS", "1"}, {"SCAN", "0", "MATCH"}, {"SCAN"}, {"KEYS"}, {"DBSIZE", "x"},
		{"SLOWLOG", "GET", "-2"}, {"SLOWLOG", "GET", "x"}, {"SLOWLOG", "LEN", "x"}, {"SLOWLOG", "FOO"},
		{"ACL", "WHOAMI"},
	} {
		same(args...)
	}
	// Redis lists parameters in its dictionary's order.
	a, b := both("CONFIG", "GET", "slowlog-*")
	pairs := func(r rv) string {
		var ps []string
		for i := 0; i+1 < len(r.elems); i += 2 {
			ps = append(ps, r.elems[i].str+"="+r.elems[i+1].str)
		}
		slices.Sort(ps)
		return strings.Join(ps, " ")
	}
	if pairs(a) == "" || pairs(a) != pairs(b) {
		t.Errorf("CONFIG GET slowlog-*: locknode %v, redis-server %v", b, a)
	}

	// Cursors Redis reads as C's strtoul does: accepted by both (what a
	// step returns depends on each server's order).
	for _, cur := range []string{"-1", "+0", ""} {
		a, b := both("SCAN", cur)
		if a.kind != '*' || b.kind != '*' {
			t.Errorf("SCAN %q: locknode = %v, redis-server = %v", cur, b, a)
		}
	}

	// INFO keyspace: the db0 line's counts (avg_ttl is sampled by Redis).
	a, b = both("INFO", "keyspace")
	db0 := func(s string) string {
		for _, l := range strings.Split(s, "\r\n") {
			if strings.HasPrefix(l, "db0:") {
				return l[:strings.LastIndex(l, ",avg_ttl=")]
			}
		}
		return ""
	}
	if db0(a.str) == "" || db0(a.str) != db0(b.str) {
		t.Errorf("INFO keyspace: locknode %q, redis-server %q", b.str, a.str)
	}

	// SLOWLOG: the same entry shape for the same command.
	same("CONFIG", "SET", "slowlog-log-slower-than", "0")
	same("SLOWLOG", "RESET")
	long := strings.Repeat("y", 300)
	args := []string{"MSET"}
	for i := range 20 {
		args = append(args, fmt.Sprintf("m%d", i), long)
	}
	same(args...)
	a, b = both("SLOWLOG", "GET", "1")
	shape := func(r rv) string {
		if len(r.elems) != 1 || len(r.elems[0].elems) != 6 {
			return fmt.Sprintf("not one 6-field entry: %v", r)
		}
		e := r.elems[0].elems
		kinds := string([]byte{e[0].kind, e[1].kind, e[2].kind, e[3].kind, e[4].kind, e[5].kind})
		return kinds + " " + e[3].String() + " name=" + e[5].str
	}
	if shape(a) != shape(b) {
		t.Errorf("SLOWLOG GET 1:\nlocknode:     %s\nredis-server: %s", shape(b), shape(a))
	}
	same("CONFIG", "SET", "slowlog-log-slower-than", "10000")
}
