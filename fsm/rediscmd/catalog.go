package rediscmd

import (
	"slices"
	"strings"
)

// The catalogue. Every entry of a command Redis 7.0 has is Redis 7.0.15's
// COMMAND INFO, word for word (compat/command_info_test.go compares them
// with a real redis-server); the rest are locknode's own or later Redis
// versions'. Perm is locknode's: what a user of the users file needs.
var catalog = []Spec{
	// The key space: keys and strings (fsm/redis_string.go).
	{Name: "get", Arity: 2, Flags: ReadOnly | Fast | KeySpace, Categories: CatString, Perm: PermRead, Keys: []KeySpec{one(KeyRO | KeyAccess)}},
	{Name: "set", Arity: -3, Flags: Write | DenyOOM | KeySpace, Categories: CatString, Perm: PermWrite, Keys: []KeySpec{{Notes: "RW and ACCESS due to the optional `GET` argument", Flags: KeyRW | KeyAccess | KeyUpdate | KeyVariableFlags, Index: 1, KeyStep: 1}}},
	{Name: "del", Arity: -2, Flags: Write | KeySpace, Categories: CatKeyspace, Perm: PermWrite, Keys: []KeySpec{rest(KeyRM|KeyDelete, 1)}, Tips: []string{"request_policy:multi_shard", "response_policy:agg_sum"}},
	{Name: "unlink", Arity: -2, Flags: Write | Fast | KeySpace, Categories: CatKeyspace, Perm: PermWrite, Keys: []KeySpec{rest(KeyRM|KeyDelete, 1)}, Tips: []string{"request_policy:multi_shard", "response_policy:agg_sum"}},
	{Name: "exists", Arity: -2, Flags: ReadOnly | Fast | KeySpace, Categories: CatKeyspace, Perm: PermRead, Keys: []KeySpec{rest(KeyRO, 1)}, Tips: []string{"request_policy:multi_shard", "response_policy:agg_sum"}},
	{Name: "pexpire", Arity: -3, Flags: Write | Fast | KeySpace, Categories: CatKeyspace, Perm: PermWrite, Keys: []KeySpec{one(KeyRW | KeyUpdate)}},
	{Name: "expire", Arity: -3, Flags: Write | Fast | KeySpace, Categories: CatKeyspace, Perm: PermWrite, Keys: []KeySpec{one(KeyRW | KeyUpdate)}},
	{Name: "pexpireat", Arity: -3, Flags: Write | Fast | KeySpace, Categories: CatKeyspace, Perm: PermWrite, Keys: []KeySpec{one(KeyRW | KeyUpdate)}},
	{Name: "expireat", Arity: -3, Flags: Write | Fast | KeySpace, Categories: CatKeyspace, Perm: PermWrite, Keys: []KeySpec{one(KeyRW | KeyUpdate)}},
	{Name: "pttl", Arity: 2, Flags: ReadOnly | Fast | KeySpace, Categories: CatKeyspace, Perm: PermRead, Keys: []KeySpec{one(KeyRO | KeyAccess)}, Tips: []string{"nondeterministic_output"}},
	{Name: "ttl", Arity: 2, Flags: ReadOnly | Fast | KeySpace, Categories: CatKeyspace, Perm: PermRead, Keys: []KeySpec{one(KeyRO | KeyAccess)}, Tips: []string{"nondeterministic_output"}},
	{Name: "persist", Arity: 2, Flags: Write | Fast | KeySpace, Categories: CatKeyspace, Perm: PermWrite, Keys: []KeySpec{one(KeyRW | KeyUpdate)}},
	{Name: "type", Arity: 2, Flags: ReadOnly | Fast | KeySpace, Categories: CatKeyspace, Perm: PermRead, Keys: []KeySpec{one(KeyRO)}},
	{Name: "getrange", Arity: 4, Flags: ReadOnly | KeySpace, Categories: CatString, Perm: PermRead, Keys: []KeySpec{one(KeyRO | KeyAccess)}},
	{Name: "mget", Arity: -2, Flags: ReadOnly | Fast | KeySpace, Categories: CatString, Perm: PermRead, Keys: []KeySpec{rest(KeyRO|KeyAccess, 1)}, Tips: []string{"request_policy:multi_shard"}},
	{Name: "mset", Arity: -3, Flags: Write | DenyOOM | KeySpace, Categories: CatString, Perm: PermWrite, Keys: []KeySpec{rest(KeyOW|KeyUpdate, 2)}, Tips: []string{"request_policy:multi_shard", "response_policy:all_succeeded"}},
	{Name: "msetnx", Arity: -3, Flags: Write | DenyOOM | KeySpace, Categories: CatString, Perm: PermWrite, Keys: []KeySpec{rest(KeyOW|KeyInsert, 2)}, Tips: []string{"request_policy:multi_shard", "response_policy:agg_min"}},
	{Name: "incr", Arity: 2, Flags: Write | DenyOOM | Fast | KeySpace, Categories: CatString, Perm: PermWrite, Keys: []KeySpec{one(KeyRW | KeyAccess | KeyUpdate)}},
	{Name: "decr", Arity: 2, Flags: Write | DenyOOM | Fast | KeySpace, Categories: CatString, Perm: PermWrite, Keys: []KeySpec{one(KeyRW | KeyAccess | KeyUpdate)}},
	{Name: "incrby", Arity: 3, Flags: Write | DenyOOM | Fast | KeySpace, Categories: CatString, Perm: PermWrite, Keys: []KeySpec{one(KeyRW | KeyAccess | KeyUpdate)}},
	{Name: "decrby", Arity: 3, Flags: Write | DenyOOM | Fast | KeySpace, Categories: CatString, Perm: PermWrite, Keys: []KeySpec{one(KeyRW | KeyAccess | KeyUpdate)}},
	{Name: "strlen", Arity: 2, Flags: ReadOnly | Fast | KeySpace, Categories: CatString, Perm: PermRead, Keys: []KeySpec{one(KeyRO)}},
	{Name: "getdel", Arity: 2, Flags: Write | Fast | KeySpace, Categories: CatString, Perm: PermWrite, Keys: []KeySpec{one(KeyRW | KeyAccess | KeyDelete)}},
	{Name: "append", Arity: 3, Flags: Write | DenyOOM | Fast | KeySpace, Categories: CatString, Perm: PermWrite, Keys: []KeySpec{one(KeyRW | KeyInsert)}},
	{Name: "incrbyfloat", Arity: 3, Flags: Write | DenyOOM | Fast | KeySpace, Categories: CatString, Perm: PermWrite, Keys: []KeySpec{one(KeyRW | KeyAccess | KeyUpdate)}},
	{Name: "getex", Arity: -2, Flags: Write | Fast | KeySpace, Categories: CatString, Perm: PermWrite, Keys: []KeySpec{{Notes: "RW and UPDATE because it changes the TTL", Flags: KeyRW | KeyAccess | KeyUpdate, Index: 1, KeyStep: 1}}},
	{Name: "time", Arity: 1, Flags: Loading | Stale | Fast | KeySpace, Perm: PermRead, Tips: []string{"nondeterministic_output"}},
	// DELEX (Redis 8.4): DEL with a compare-value condition.
	{Name: "delex", Arity: -2, Flags: Write | Fast | KeySpace, Categories: CatString, Perm: PermWrite, Keys: []KeySpec{one(KeyRW | KeyAccess | KeyDelete)}},
	{Name: "ping", Arity: -1, Flags: Fast | KeySpace, Categories: CatConnection, Perm: PermNone, Tips: []string{"request_policy:all_shards", "response_policy:all_succeeded"}},
	{Name: "publish", Arity: 3, Flags: PubSub | Loading | Stale | Fast | MayReplicate | KeySpace, Perm: PermWrite, Channels: ChannelRange{First: 1, Last: 1}},
	// The key space: hashes, sets, sorted sets, lists.
	{Name: "hget", Arity: 3, Flags: ReadOnly | Fast | KeySpace, Categories: CatHash, Perm: PermRead, Keys: []KeySpec{one(KeyRO | KeyAccess)}},
	{Name: "hset", Arity: -4, Flags: Write | DenyOOM | Fast | KeySpace, Categories: CatHash, Perm: PermWrite, Keys: []KeySpec{one(KeyRW | KeyUpdate)}},
	{Name: "hmset", Arity: -4, Flags: Write | DenyOOM | Fast | KeySpace, Categories: CatHash, Perm: PermWrite, Keys: []KeySpec{one(KeyRW | KeyUpdate)}},
	{Name: "hsetnx", Arity: 4, Flags: Write | DenyOOM | Fast | KeySpace, Categories: CatHash, Perm: PermWrite, Keys: []KeySpec{one(KeyRW | KeyInsert)}},
	{Name: "hexists", Arity: 3, Flags: ReadOnly | Fast | KeySpace, Categories: CatHash, Perm: PermRead, Keys: []KeySpec{one(KeyRO)}},
	{Name: "hincrby", Arity: 4, Flags: Write | DenyOOM | Fast | KeySpace, Categories: CatHash, Perm: PermWrite, Keys: []KeySpec{one(KeyRW | KeyAccess | KeyUpdate)}},
	{Name: "hdel", Arity: -3, Flags: Write | Fast | KeySpace, Categories: CatHash, Perm: PermWrite, Keys: []KeySpec{one(KeyRW | KeyDelete)}},
	{Name: "hlen", Arity: 2, Flags: ReadOnly | Fast | KeySpace, Categories: CatHash, Perm: PermRead, Keys: []KeySpec{one(KeyRO)}},
	{Name: "hkeys", Arity: 2, Flags: ReadOnly | KeySpace, Categories: CatHash, Perm: PermRead, Keys: []KeySpec{one(KeyRO | KeyAccess)}, Tips: []string{"nondeterministic_output_order"}},
	{Name: "hvals", Arity: 2, Flags: ReadOnly | KeySpace, Categories: CatHash, Perm: PermRead, Keys: []KeySpec{one(KeyRO | KeyAccess)}, Tips: []string{"nondeterministic_output_order"}},
	{Name: "hgetall", Arity: 2, Flags: ReadOnly | KeySpace, Categories: CatHash, Perm: PermRead, Keys: []KeySpec{one(KeyRO | KeyAccess)}, Tips: []string{"nondeterministic_output_order"}},
	{Name: "hmget", Arity: -3, Flags: ReadOnly | Fast | KeySpace, Categories: CatHash, Perm: PermRead, Keys: []KeySpec{one(KeyRO | KeyAccess)}},
	{Name: "sadd", Arity: -3, Flags: Write | DenyOOM | Fast | KeySpace, Categories: CatSet, Perm: PermWrite, Keys: []KeySpec{one(KeyRW | KeyInsert)}},
	{Name: "srem", Arity: -3, Flags: Write | Fast | KeySpace, Categories: CatSet, Perm: PermWrite, Keys: []KeySpec{one(KeyRW | KeyDelete)}},
	{Name: "sismember", Arity: 3, Flags: ReadOnly | Fast | KeySpace, Categories: CatSet, Perm: PermRead, Keys: []KeySpec{one(KeyRO)}},
	{Name: "scard", Arity: 2, Flags: ReadOnly | Fast | KeySpace, Categories: CatSet, Perm: PermRead, Keys: []KeySpec{one(KeyRO)}},
	{Name: "smembers", Arity: 2, Flags: ReadOnly | KeySpace, Categories: CatSet, Perm: PermRead, Keys: []KeySpec{one(KeyRO | KeyAccess)}, Tips: []string{"nondeterministic_output_order"}},
	{Name: "zadd", Arity: -4, Flags: Write | DenyOOM | Fast | KeySpace, Categories: CatSortedSet, Perm: PermWrite, Keys: []KeySpec{one(KeyRW | KeyUpdate)}},
	{Name: "zincrby", Arity: 4, Flags: Write | DenyOOM | Fast | KeySpace, Categories: CatSortedSet, Perm: PermWrite, Keys: []KeySpec{one(KeyRW | KeyAccess | KeyUpdate)}},
	{Name: "zrem", Arity: -3, Flags: Write | Fast | KeySpace, Categories: CatSortedSet, Perm: PermWrite, Keys: []KeySpec{one(KeyRW | KeyDelete)}},
	{Name: "zcard", Arity: 2, Flags: ReadOnly | Fast | KeySpace, Categories: CatSortedSet, Perm: PermRead, Keys: []KeySpec{one(KeyRO)}},
	{Name: "zscore", Arity: 3, Flags: ReadOnly | Fast | KeySpace, Categories: CatSortedSet, Perm: PermRead, Keys: []KeySpec{one(KeyRO | KeyAccess)}},
	{Name: "zrank", Arity: 3, Flags: ReadOnly | Fast | KeySpace, Categories: CatSortedSet, Perm: PermRead, Keys: []KeySpec{one(KeyRO | KeyAccess)}},
	{Name: "zrange", Arity: -4, Flags: ReadOnly | KeySpace, Categories: CatSortedSet, Perm: PermRead, Keys: []KeySpec{one(KeyRO | KeyAccess)}},
	{Name: "zrangebyscore", Arity: -4, Flags: ReadOnly | KeySpace, Categories: CatSortedSet, Perm: PermRead, Keys: []KeySpec{one(KeyRO | KeyAccess)}},
	{Name: "zremrangebyscore", Arity: 4, Flags: Write | KeySpace, Categories: CatSortedSet, Perm: PermWrite, Keys: []KeySpec{one(KeyRW | KeyDelete)}},
	{Name: "lpush", Arity: -3, Flags: Write | DenyOOM | Fast | KeySpace, Categories: CatList, Perm: PermWrite, Keys: []KeySpec{one(KeyRW | KeyInsert)}},
	{Name: "rpush", Arity: -3, Flags: Write | DenyOOM | Fast | KeySpace, Categories: CatList, Perm: PermWrite, Keys: []KeySpec{one(KeyRW | KeyInsert)}},
	{Name: "lpop", Arity: -2, Flags: Write | Fast | KeySpace, Categories: CatList, Perm: PermWrite, Keys: []KeySpec{one(KeyRW | KeyAccess | KeyDelete)}},
	{Name: "rpop", Arity: -2, Flags: Write | Fast | KeySpace, Categories: CatList, Perm: PermWrite, Keys: []KeySpec{one(KeyRW | KeyAccess | KeyDelete)}},
	{Name: "lindex", Arity: 3, Flags: ReadOnly | KeySpace, Categories: CatList, Perm: PermRead, Keys: []KeySpec{one(KeyRO | KeyAccess)}},
	{Name: "lrange", Arity: 4, Flags: ReadOnly | KeySpace, Categories: CatList, Perm: PermRead, Keys: []KeySpec{one(KeyRO | KeyAccess)}},
	{Name: "lrem", Arity: 4, Flags: Write | KeySpace, Categories: CatList, Perm: PermWrite, Keys: []KeySpec{one(KeyRW | KeyDelete)}},
	{Name: "llen", Arity: 2, Flags: ReadOnly | Fast | KeySpace, Categories: CatList, Perm: PermRead, Keys: []KeySpec{one(KeyRO)}},

	// Connection, server and cluster commands (redisbridge/cmd_conn.go, cmd_cluster.go, cmd_client.go).
	{Name: "echo", Arity: 2, Flags: Loading | Stale | Fast, Categories: CatConnection, Perm: PermNone},
	{Name: "hello", Arity: -1, Flags: NoScript | Loading | Stale | Fast | NoAuth | AllowBusy, Categories: CatConnection, Perm: PermNone},
	{Name: "auth", Arity: -2, Flags: NoScript | Loading | Stale | Fast | NoAuth | AllowBusy, Categories: CatConnection, Perm: PermNone},
	{Name: "select", Arity: 2, Flags: Loading | Stale | Fast, Categories: CatConnection, Perm: PermNone},
	{Name: "client", Arity: -2, Perm: PermNone},
	{Name: "role", Arity: 1, Flags: NoScript | Loading | Stale | Fast, Categories: CatAdmin | CatDangerous, Perm: PermRead},
	{Name: "info", Arity: -1, Flags: Loading | Stale, Categories: CatDangerous, Perm: PermRead, Tips: []string{"nondeterministic_output", "request_policy:all_shards", "response_policy:special"}},
	{Name: "config", Arity: -2, Perm: PermRead},
	{Name: "cluster", Arity: -2, Perm: PermRead},
	{Name: "command", Arity: -1, Flags: Loading | Stale, Categories: CatConnection, Perm: PermNone, Tips: []string{"nondeterministic_output_order"}},
	{Name: "quit", Arity: -1, Flags: NoScript | Loading | Stale | Fast | NoAuth | AllowBusy, Categories: CatConnection, Perm: PermNone},
	{Name: "reset", Arity: 1, Flags: NoScript | Loading | Stale | Fast | NoAuth | AllowBusy, Categories: CatConnection, Perm: PermNone},
	{Name: "readonly", Arity: 1, Flags: Loading | Stale | Fast, Categories: CatConnection, Perm: PermNone},
	{Name: "readwrite", Arity: 1, Flags: Loading | Stale | Fast, Categories: CatConnection, Perm: PermNone},
	{Name: "asking", Arity: 1, Flags: Fast, Categories: CatConnection, Perm: PermNone},
	{Name: "wait", Arity: 3, Flags: NoScript, Categories: CatConnection, Perm: PermNone, Tips: []string{"request_policy:all_shards", "response_policy:agg_min"}},
	// WAITAOF (Redis 7.2).
	{Name: "waitaof", Arity: 4, Flags: NoScript, Categories: CatConnection, Perm: PermNone, Tips: []string{"request_policy:all_shards", "response_policy:agg_min"}},
	// SENTINEL, the few subcommands clients probe a server with.
	{Name: "sentinel", Arity: -2, Perm: PermRead},
	{Name: "acl", Arity: -2, Perm: PermNone},
	{Name: "slowlog", Arity: -2, Perm: PermNone},

	// The key space as a whole (redisbridge/cmd_keyspace.go).
	{Name: "scan", Arity: -2, Flags: ReadOnly, Categories: CatKeyspace, Perm: PermRead, Tips: []string{"nondeterministic_output", "request_policy:special"}},
	{Name: "keys", Arity: 2, Flags: ReadOnly, Categories: CatKeyspace | CatDangerous, Perm: PermRead, Tips: []string{"request_policy:all_shards", "nondeterministic_output_order"}},
	{Name: "dbsize", Arity: 1, Flags: ReadOnly | Fast, Categories: CatKeyspace, Perm: PermRead, Tips: []string{"request_policy:all_shards", "response_policy:agg_sum"}},

	// Scripting (redisbridge/cmd_data.go): the key space runs the scripts.
	{Name: "eval", Arity: -3, Flags: NoScript | Stale | SkipMonitor | NoMandatoryKeys, Categories: CatScripting, Perm: PermWrite, Keys: []KeySpec{{Notes: "We cannot tell how the keys will be used so we assume the worst, RW and UPDATE", Flags: KeyRW | KeyAccess | KeyUpdate, Index: 2, KeyNum: true, KeyNumIdx: 0, FirstKey: 1, KeyStep: 1}}},
	{Name: "evalsha", Arity: -3, Flags: NoScript | Stale | SkipMonitor | NoMandatoryKeys, Categories: CatScripting, Perm: PermWrite, Keys: []KeySpec{{Flags: KeyRW | KeyAccess | KeyUpdate, Index: 2, KeyNum: true, KeyNumIdx: 0, FirstKey: 1, KeyStep: 1}}},
	{Name: "eval_ro", Arity: -3, Flags: ReadOnly | NoScript | Stale | SkipMonitor | NoMandatoryKeys, Categories: CatScripting, Perm: PermRead, Keys: []KeySpec{{Notes: "We cannot tell how the keys will be used so we assume the worst, RO and ACCESS", Flags: KeyRO | KeyAccess, Index: 2, KeyNum: true, KeyNumIdx: 0, FirstKey: 1, KeyStep: 1}}},
	{Name: "evalsha_ro", Arity: -3, Flags: ReadOnly | NoScript | Stale | SkipMonitor | NoMandatoryKeys, Categories: CatScripting, Perm: PermRead, Keys: []KeySpec{{Flags: KeyRO | KeyAccess, Index: 2, KeyNum: true, KeyNumIdx: 0, FirstKey: 1, KeyStep: 1}}},
	{Name: "script", Arity: -2, Perm: PermNone},

	// Pub/sub (redisbridge/cmd_pubsub.go); PUBLISH is above, as scripts run it.
	{Name: "subscribe", Arity: -2, Flags: PubSub | NoScript | Loading | Stale, Perm: PermRead, Channels: ChannelRange{First: 1, Last: -1}},
	{Name: "unsubscribe", Arity: -1, Flags: PubSub | NoScript | Loading | Stale, Perm: PermNone},
	{Name: "psubscribe", Arity: -2, Flags: PubSub | NoScript | Loading | Stale, Perm: PermRead, Channels: ChannelRange{First: 1, Last: -1, Patterns: true}},
	{Name: "punsubscribe", Arity: -1, Flags: PubSub | NoScript | Loading | Stale, Perm: PermNone},

	// Transactions (redisbridge/cmd_tx.go).
	{Name: "watch", Arity: -2, Flags: NoScript | Loading | Stale | Fast | AllowBusy, Categories: CatTransaction, Perm: PermRead, Keys: []KeySpec{rest(KeyRO, 1)}},
	{Name: "unwatch", Arity: 1, Flags: NoScript | Loading | Stale | Fast | AllowBusy, Categories: CatTransaction, Perm: PermNone},
	{Name: "multi", Arity: 1, Flags: NoScript | Loading | Stale | Fast | AllowBusy, Categories: CatTransaction, Perm: PermNone},
	{Name: "exec", Arity: 1, Flags: NoScript | Loading | Stale | SkipSlowlog, Categories: CatTransaction, Perm: PermNone},
	{Name: "discard", Arity: 1, Flags: NoScript | Loading | Stale | Fast | AllowBusy, Categories: CatTransaction, Perm: PermNone},

	// Native locks (redisbridge/cmd_lock.go): locknode's own commands.
	{Name: "lock.acquire", Arity: -4, Flags: Write | DenyOOM, Perm: PermWrite, Keys: []KeySpec{one(KeyRW | KeyInsert)}},
	{Name: "lock.release", Arity: -3, Flags: Write | Fast, Perm: PermWrite, Keys: []KeySpec{one(KeyRW | KeyDelete)}},
	{Name: "lock.extend", Arity: -4, Flags: Write | Fast, Perm: PermWrite, Keys: []KeySpec{one(KeyRW | KeyUpdate)}},
	{Name: "lock.info", Arity: 2, Flags: ReadOnly | Fast, Perm: PermRead, Keys: []KeySpec{one(KeyRO | KeyAccess)}},
	{Name: "fence.check", Arity: 3, Flags: Write | Fast, Perm: PermWrite, Keys: []KeySpec{one(KeyRW | KeyAccess)}},
}

// byName indexes the catalogue; sorted is it in name order.
var (
	byName map[string]*Spec
	sorted []*Spec
)

func init() {
	all := append(catalog, nextSpecs...)
	byName = make(map[string]*Spec, len(all))
	for i := range all {
		s := &all[i]
		s.legacyRange()
		byName[s.Name] = s
		sorted = append(sorted, s)
	}
	slices.SortFunc(sorted, func(a, b *Spec) int { return strings.Compare(a.Name, b.Name) })
}

// Lookup returns the command named name (lower case), or nil.
func Lookup(name string) *Spec { return byName[name] }

// maxName is longer than every command name: a longer one is unknown.
const maxName = 32

// LookupBytes returns the command named name in any case, or nil. It does
// not allocate.
func LookupBytes(name []byte) *Spec {
	if len(name) > maxName {
		return nil
	}
	var buf [maxName]byte
	b := buf[:len(name)]
	for i, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b[i] = c
	}
	return byName[string(b)]
}

// All returns every command, in name order. The slice is the caller's;
// the specs are shared and read-only.
func All() []*Spec { return slices.Clone(sorted) }

// KeySpaceNames returns the names of the commands the key space executes
// (flag KeySpace), in order.
func KeySpaceNames() []string {
	var out []string
	for _, s := range sorted {
		if s.Flags&KeySpace != 0 {
			out = append(out, s.Name)
		}
	}
	return out
}
