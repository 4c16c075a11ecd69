package compat

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Keyspace notifications compared byte for byte with redis-server: the
// subscriber, the writer and the connection that sends the markers sit
// on three different nodes of the cluster; the transcripts (every reply
// of the subscriber and the writer, and every message the subscriber
// receives, as raw RESP frames) must be identical.

// ksWrites are the writer's commands, each followed by a marker (but
// those starting with "+", which run with the next); the subscriber logs
// every frame up to the marker.
var ksWrites = [][]string{
	{"SET", "ks:s", "1"},
	{"SET", "ks:s", "2", "PX", "100000"},
	{"SET", "ks:s", "3", "KEEPTTL"},
	{"SET", "ks:s", "4", "NX"},
	{"SET", "ks:s", "5", "GET"},
	{"SET", "ks:gone", "1", "XX"},
	// An expiry already past: Redis expires the key at its next access.
	{"+", "SET", "ks:p", "1", "PXAT", "1"},
	{"GET", "ks:p"},
	{"INCR", "ks:n"},
	{"DECRBY", "ks:n", "3"},
	{"INCRBYFLOAT", "ks:n", "1.5"},
	{"APPEND", "ks:n", "x"},
	{"PEXPIRE", "ks:n", "50000"},
	{"EXPIRE", "ks:n", "90", "NX"},
	{"PERSIST", "ks:n"},
	{"PERSIST", "ks:n"},
	{"GETEX", "ks:n", "PX", "100000"},
	{"GETEX", "ks:n", "PERSIST"},
	{"GETDEL", "ks:n"},
	{"MSET", "ks:a", "1", "ks:b", "2"},
	{"MSETNX", "ks:c", "1", "ks:d", "2"},
	{"DEL", "ks:a", "ks:b", "ks:none"},
	{"UNLINK", "ks:c"},
	{"PEXPIRE", "ks:d", "-1"},
	{"HSET", "ks:h", "f", "1", "g", "2"},
	{"HSETNX", "ks:h", "f", "9"},
	{"HINCRBY", "ks:h", "f", "2"},
	{"HDEL", "ks:h", "f", "nope"},
	{"HDEL", "ks:h", "g"},
	// Redisson's watchdog renewal (native from cluster version 4): an
	// expire event only when the owner's field is there.
	{"EVAL", luaRedissonRenew, "1", "ks:rl", "30000", "uuid:1"},
	{"HSET", "ks:rl", "uuid:1", "1"},
	{"EVAL", luaRedissonRenew, "1", "ks:rl", "30000", "uuid:1"},
	{"EVAL", luaRedissonRenew, "1", "ks:rl", "30000", "uuid:2"},
	{"DEL", "ks:rl"},
	{"SADD", "ks:st", "x", "y"},
	{"SADD", "ks:st", "x"},
	{"SREM", "ks:st", "x", "y"},
	{"ZADD", "ks:z", "1", "m", "2", "n"},
	{"ZADD", "ks:z", "INCR", "1", "m"},
	{"ZINCRBY", "ks:z", "1", "n"},
	{"ZREM", "ks:z", "m"},
	{"ZREMRANGEBYSCORE", "ks:z", "0", "10"},
	{"RPUSH", "ks:l", "a", "b", "c"},
	{"LPUSH", "ks:l", "z"},
	{"LPOP", "ks:l"},
	{"LREM", "ks:l", "0", "b"},
	{"RPOP", "ks:l", "5"},
	// Locks the Redis way: SET NX PX, extend, release by script.
	{"SET", "ks:lock", "tok", "NX", "PX", "100000"},
	{"SET", "ks:lock", "other", "NX", "PX", "100000"},
	{"PEXPIRE", "ks:lock", "200000"},
	{"EVAL", "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end", "1", "ks:lock", "tok", "300000"},
	{"EVAL", "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end", "1", "ks:lock", "tok"},
	{"SET", "ks:lock", "tok2", "NX", "PX", "100000"},
	{"DEL", "ks:lock"},
	{"SET", "ks:lock", "tok3", "NX", "PX", "100000"},
	{"PEXPIRE", "ks:lock", "-5"},
	{"MULTI"},
	{"SET", "ks:m", "1"},
	{"INCR", "ks:m"},
	{"DEL", "ks:m"},
	{"EXEC"},
	{"PUBLISH", "ks:chan", "not a keyspace event"},
}

func TestKeyspaceNotificationsVsRedis(t *testing.T) {
	redisAddr := startRedis(t)
	tc := newCluster(t, 3)
	tc.leader(10 * time.Second)
	for _, sc := range []struct {
		name, flags string
		resp3       bool
		subscribe   []string
	}{
		{"KEA pattern RESP2", "KEA", false, []string{"PSUBSCRIBE", "__key*__:ks:*", "__keyevent@0__:*"}},
		{"KEA pattern RESP3", "KEA", true, []string{"PSUBSCRIBE", "__key*__:ks:*", "__keyevent@0__:*"}},
		{"classes and new", "Kgxn$", false, []string{"PSUBSCRIBE", "__keyspace@0__:*"}},
		{"keyevent channels", "Ehlsz", false, []string{"SUBSCRIBE", "__keyevent@0__:hset", "__keyevent@0__:del", "__keyevent@0__:zadd", "__keyevent@0__:lpop"}},
	} {
		t.Run(sc.name, func(t *testing.T) {
			var want, got strings.Builder
			run := func(addr func(node int) string, log *strings.Builder) {
				sub := dialTrk(t, addr(1), "S", log)
				w := dialTrk(t, addr(2), "W", log)
				mark := dialTrk(t, addr(0), "M", &strings.Builder{})
				if sc.resp3 {
					sub.do("HELLO", "3")
				}
				sub.do("CONFIG", "SET", "notify-keyspace-events", "Kq")
				sub.do("CONFIG", "SET", "notify-keyspace-events", sc.flags, "notify-keyspace-events", "K")
				sub.do("CONFIG", "SET", "notify-keyspace-events", sc.flags)
				sub.do("CONFIG", "GET", "notify-keyspace-events")
				sub.do(sc.subscribe...)
				for range len(sc.subscribe) - 2 {
					sub.frame() // the other confirmations
				}
				sub.do("SUBSCRIBE", "ks:mark")
				// The key space starts empty for the scenario.
				w.do("DEL", "ks:s", "ks:p", "ks:n", "ks:a", "ks:b", "ks:c", "ks:d", "ks:h", "ks:st", "ks:z", "ks:l", "ks:lock", "ks:m", "ks:e")
				waitMark := func(i int) {
					t.Helper()
					mark.do("PUBLISH", "ks:mark", strconv.Itoa(i))
					for {
						if f := sub.frame(); strings.Contains(f, "ks:mark") {
							return
						}
					}
				}
				waitMark(0)
				for i, args := range ksWrites {
					if args[0] == "+" {
						w.do(args[1:]...)
						continue
					}
					w.do(args...)
					waitMark(i + 1)
				}
				// A TTL that runs out: "expired" when the key is removed.
				w.do("SET", "ks:e", "v", "PX", "150")
				waitMark(len(ksWrites) + 1)
				if strings.ContainsAny(sc.flags, "Ax") && !strings.HasPrefix(sc.flags, "E") {
					sub.frame()
					if strings.Contains(sc.flags, "E") {
						sub.frame()
					}
				}
				if sc.resp3 {
					sub.do("PUNSUBSCRIBE")
					sub.frame()
				}
			}
			run(func(int) string { return redisAddr }, &want)
			run(func(node int) string { return tc.resp[node] }, &got)
			w, g := want.String(), got.String()
			if w != g {
				if d := os.Getenv("LOCKNODE_KS_DUMP"); d != "" {
					os.WriteFile(d+"/want.txt", []byte(w), 0o644)
					os.WriteFile(d+"/got.txt", []byte(g), 0o644)
				}
				t.Fatalf("transcripts differ\nredis-server:\n%s\nlocknode:\n%s", w, g)
			}
			t.Logf("transcript:\n%s", g)
		})
	}
}
