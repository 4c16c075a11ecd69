package fsm

import "strings"

// The differential sequences. Scripts are written here in the shape of
// each family (shared/redis-clients.md §6.2), not copied from clients;
// the hot (native) texts come from hotScripts so that the native path is
// compared too.

// F2 compare-and-delete, multi-key count (node-redlock shape).
const scriptCADMulti = `
local n = 0
for _, k in ipairs(KEYS) do
  if redis.call("GET", k) == ARGV[1] then
    redis.call("DEL", k)
    n = n + 1
  end
end
return n`

// F2 compare-and-delete with an unlock notice (Spring PUB_SUB shape).
const scriptCADPublish = `
if redis.call('get', KEYS[1]) == ARGV[1] then
  redis.call('unlink', KEYS[1])
  redis.call('publish', KEYS[2], ARGV[2])
  return true
end
return false`

// F3 compare-and-pexpire, adding to the remaining TTL (redis-py shape).
const scriptCAPEAdd = `
local tok = redis.call('get', KEYS[1])
if not tok or tok ~= ARGV[1] then return 0 end
local left = redis.call('pttl', KEYS[1])
if not left then left = 0 end
if left < 0 then return 0 end
local ttl = ARGV[2]
if ARGV[3] == "0" then ttl = ARGV[2] + left end
redis.call('pexpire', KEYS[1], ttl)
return 1`

// F4 compare-or-create extend (redsync SetNX-on-extend / RedLock.net shape).
const scriptCompareOrCreate = `
if redis.call("GET", KEYS[1]) == ARGV[1] then
  return redis.call("PEXPIRE", KEYS[1], ARGV[2])
elseif redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2], "NX") then
  return 1
else
  return -1
end`

// F5 multi-key all-or-nothing (node-redlock v5 acquire shape).
const scriptAllOrNothing = `
for _, k in ipairs(KEYS) do
  if redis.call("EXISTS", k) == 1 then return 0 end
end
for _, k in ipairs(KEYS) do
  redis.call("SET", k, ARGV[1], "PX", ARGV[2])
end
return #KEYS`

// F5 MSETNX + PEXPIRE (bsm v0.10 shape).
const scriptMsetnx = `
local kv = {}
for i, k in ipairs(KEYS) do kv[#kv+1] = k; kv[#kv+1] = ARGV[1] end
if redis.call("msetnx", unpack(kv)) ~= 1 then return nil end
for _, k in ipairs(KEYS) do redis.call("pexpire", k, ARGV[2]) end
return redis.status_reply("OK")`

// F6 owner-checked TTL read (bsm shape).
const scriptOwnedTTL = `
local min = -3
for _, k in ipairs(KEYS) do
  if redis.call("get", k) ~= ARGV[1] then return -3 end
  local t = redis.call("pttl", k)
  if min == -3 or t < min then min = t end
end
return min`

// F7 reentrant hash lock (Redisson RLock shape).
const scriptHashAcquire = `
if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then
  redis.call('hincrby', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
return redis.call('pttl', KEYS[1]);`

const scriptHashRelease = `
local v = redis.call('get', KEYS[3]); if v ~= false then return tonumber(v); end;
if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil; end;
local c = redis.call('hincrby', KEYS[1], ARGV[3], -1);
local res = 0;
if (c > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); res = 0;
else redis.call('del', KEYS[1]); redis.call(ARGV[4], KEYS[2], ARGV[1]); res = 1; end;
redis.call('set', KEYS[3], res, 'px', ARGV[5]);
return res;`

const scriptHashRenew = `
if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return 1;
end;
return 0;`

// F8 fenced reentrant lock (Redisson RFencedLock shape).
const scriptFenced = `
if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then
  local tok = redis.call('incr', KEYS[2]);
  redis.call('hincrby', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return {-1, tok};
end;
return {redis.call('pttl', KEYS[1]), -1};`

// F9a reader/writer lock in a hash with a mode field (Redisson shape).
const scriptReadAcquire = `
local mode = redis.call('hget', KEYS[1], 'mode');
if (mode == false) then
  redis.call('hset', KEYS[1], 'mode', 'read');
  redis.call('hset', KEYS[1], ARGV[2], 1);
  redis.call('set', KEYS[2] .. ':1', 1);
  redis.call('pexpire', KEYS[2] .. ':1', ARGV[1]);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
if (mode == 'read') or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then
  local ind = redis.call('hincrby', KEYS[1], ARGV[2], 1);
  local key = KEYS[2] .. ':' .. ind;
  redis.call('set', key, 1);
  redis.call('pexpire', key, ARGV[1]);
  local left = redis.call('pttl', KEYS[1]);
  redis.call('pexpire', KEYS[1], math.max(left, ARGV[1]));
  return nil;
end;
return redis.call('pttl', KEYS[1]);`

// F9a batched watchdog: the numeric for starts at a string (hget).
const scriptReadRenew = `
local n = redis.call('hget', KEYS[1], ARGV[2]);
if (n ~= false) then
  redis.call('pexpire', KEYS[1], ARGV[1]);
  for i = n, 1, -1 do
    redis.call('pexpire', KEYS[2] .. ':' .. i, ARGV[1]);
  end;
  return 1;
end;
return 0;`

// F9b reader set + writer string (DistributedLock shape).
const scriptReaderAcquire = `
if redis.call('exists', KEYS[2]) == 1 then return 0 end
redis.call('sadd', KEYS[1], ARGV[1])
local left = redis.call('pttl', KEYS[1])
if left < tonumber(ARGV[2]) then redis.call('pexpire', KEYS[1], ARGV[2]) end
return 1`

const scriptWriterAcquire = `
if redis.call('scard', KEYS[1]) > 0 then
  redis.call('set', KEYS[2] .. '_WRITERWAITING', ARGV[1], 'px', ARGV[2])
  return 0
end
if redis.call('get', KEYS[2] .. '_WRITERWAITING') == ARGV[1] then
  redis.call('del', KEYS[2] .. '_WRITERWAITING')
end
if redis.call('set', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0`

const scriptReaderRelease = `return redis.call('srem', KEYS[1], ARGV[1])`

// F10 fair FIFO lock: list queue + zset timeouts on a client clock
// (Redisson RFairLock shape; ARGV[4] is the client's "now").
const scriptFairAcquire = `
while true do
  local first = redis.call('lindex', KEYS[2], 0);
  if first == false then break; end;
  local timeout = tonumber(redis.call('zscore', KEYS[3], first));
  if timeout <= tonumber(ARGV[4]) then
    redis.call('zrem', KEYS[3], first);
    redis.call('lpop', KEYS[2]);
  else break; end;
end;
if (redis.call('exists', KEYS[1]) == 0) and ((redis.call('exists', KEYS[2]) == 0) or (redis.call('lindex', KEYS[2], 0) == ARGV[2])) then
  redis.call('lpop', KEYS[2]);
  redis.call('zrem', KEYS[3], ARGV[2]);
  local ks = redis.call('zrange', KEYS[3], 0, -1);
  for i = 1, #ks, 1 do redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), ks[i]); end;
  redis.call('hset', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1);
  redis.call('pexpire', KEYS[1], ARGV[1]);
  return nil;
end;
local timeout = redis.call('zscore', KEYS[3], ARGV[2]);
if timeout ~= false then
  return timeout - tonumber(ARGV[3]) - tonumber(ARGV[4]);
end;
local last = redis.call('lindex', KEYS[2], -1);
local ttl;
if last ~= false and last ~= ARGV[2] then
  ttl = tonumber(redis.call('zscore', KEYS[3], last)) - tonumber(ARGV[4]);
else
  ttl = redis.call('pttl', KEYS[1]);
end;
local to = ttl + tonumber(ARGV[3]) + tonumber(ARGV[4]);
if redis.call('zadd', KEYS[3], to, ARGV[2]) == 1 then
  redis.call('rpush', KEYS[2], ARGV[2]);
end;
return ttl;`

const scriptFairRelease = `
if (redis.call('hexists', KEYS[1], ARGV[2]) == 0) then return nil; end;
local c = redis.call('hincrby', KEYS[1], ARGV[2], -1);
if (c > 0) then redis.call('pexpire', KEYS[1], ARGV[1]); return 0; end;
redis.call('del', KEYS[1]);
local next = redis.call('lindex', KEYS[2], 0);
if next ~= false then redis.call('publish', KEYS[4] .. ':' .. next, ARGV[3]); end;
return 1;`

// F11a counter semaphore (Redisson RSemaphore shape).
const scriptSemAcquire = `
local v = redis.call('get', KEYS[1]);
if (v ~= false and tonumber(v) >= tonumber(ARGV[1])) then
  redis.call('decrby', KEYS[1], ARGV[1]);
  return 1;
end;
return 0;`

const scriptSemRelease = `
local v = redis.call('incrby', KEYS[1], ARGV[1]);
redis.call(ARGV[2], KEYS[2], v);`

// F11b lease semaphore on server TIME (DistributedLock shape).
const scriptLeaseSem = `
redis.replicate_commands()
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('zremrangebyscore', KEYS[1], '-inf', now)
if redis.call('zcard', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('zadd', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
  local left = redis.call('pttl', KEYS[1])
  if left < 3 * tonumber(ARGV[3]) then redis.call('pexpire', KEYS[1], 3 * tonumber(ARGV[3])) end
  return 1
end
return 0`

const scriptLeaseExtend = `
local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('zadd', KEYS[1], 'XX', 'CH', now + tonumber(ARGV[2]), ARGV[1])`

// F12 force unlock with notice (Redisson shape).
const scriptForceUnlock = `
if (redis.call('del', KEYS[1]) == 1) then
  redis.call(ARGV[2], KEYS[2], ARGV[1]);
  return 1
else
  return 0
end`

func diffCases() []diffCase {
	k := func(s ...string) []string { return s }
	return []diffCase{
		{name: "F1-set-nx-px", keys: k("lock", "other"), steps: []dstep{
			c("SET", "lock", "tok1", "NX", "PX", "30000"),
			c("SET", "lock", "tok2", "NX", "PX", "30000"),
			c("GET", "lock"),
			ca("PTTL", "lock"),
			c("SET", "other", "a", "px", "20000", "nx"),
			c("set", "other", "b", "ex", "8", "NX"),
			c("TYPE", "lock"),
			c("EXISTS", "lock", "other", "nope"),
			// bsm v0.9 shape: SET NX PX in a script, then a same-prefix override.
			ev(`if redis.call("set", KEYS[1], ARGV[1], "NX", "PX", ARGV[3]) then return redis.status_reply("OK") end
local offset = tonumber(ARGV[2])
if redis.call("getrange", KEYS[1], 0, offset-1) == string.sub(ARGV[1], 1, offset) then return redis.call("set", KEYS[1], ARGV[1], "PX", ARGV[3]) end`,
				k("fresh"), "abc123", "3", "10000"),
			c("GET", "fresh"),
		}},
		{name: "F2-compare-and-delete", keys: k("lock", "a", "b", "c"), steps: []dstep{
			c("SET", "lock", "tok", "NX", "PX", "30000"),
			ev(hotText(famCADMissing), k("lock"), "wrong"),
			ev(hotText(famCAD), k("lock"), "wrong"),
			ev(hotText(famCAD1), k("lock"), "wrong"),
			ev(hotText(famCADMissing), k("lock"), "tok"),
			// Redis forgets; the key space answers the releasing token's
			// repeat as the release did (Redlock quorum on one cluster).
			{script: hotText(famCADMissing), keys: k("lock"), args: k("tok"), table: ":1"},
			ev(hotText(famCADMissing), k("lock"), "stranger"),
			ev(hotText(famCAD), k("never"), "tok"),
			c("SET", "a", "t1"), c("SET", "b", "t1"), c("SET", "c", "t2"),
			ev(scriptCADMulti, k("a", "b", "c"), "t1"),
			c("SET", "c", "t3", "PX", "10000"),
			ev(scriptCADPublish, k("c", "chan"), "t3", "unlocked"),
			ev(scriptCADPublish, k("c", "chan"), "t3", "unlocked"),
			c("SET", "lock", "tok", "NX", "PX", "30000"),
			ev(hotText(famCAD1), k("lock"), "tok"),
		}},
		{name: "F3-compare-and-pexpire", keys: k("lock", "s"), steps: []dstep{
			c("SET", "lock", "tok", "NX", "PX", "10000"),
			ev(hotText(famCAPE), k("lock"), "wrong", "50000"),
			ev(hotText(famCAPE), k("lock"), "tok", "50000"),
			ca("PTTL", "lock"),
			ev(hotText(famCAPE1), k("lock"), "tok", "60000"),
			ca("PTTL", "lock"),
			ev(hotText(famCAPE), k("lock"), "tok", "abc"), // falls back to Lua: Redis' error text
			ev(scriptCAPEAdd, k("lock"), "tok", "1000", "0"),
			ca("PTTL", "lock"),
			ev(scriptCAPEAdd, k("lock"), "tok", "5000", "1"),
			ca("PTTL", "lock"),
			c("SET", "s", "v"),
			ev(scriptCAPEAdd, k("s"), "v", "5000", "0"),
			ev(hotText(famCAPE), k("s"), "v", "7000"),
			ca("PTTL", "s"),
		}},
		{name: "F4-compare-or-create", keys: k("lock"), steps: []dstep{
			ev(scriptCompareOrCreate, k("lock"), "tok", "20000"),
			ca("PTTL", "lock"),
			ev(scriptCompareOrCreate, k("lock"), "tok", "40000"),
			ca("PTTL", "lock"),
			ev(scriptCompareOrCreate, k("lock"), "other", "40000"),
			c("GET", "lock"),
		}},
		{name: "F5-all-or-nothing", keys: k("r1", "r2", "r3", "m1", "m2"), steps: []dstep{
			ev(scriptAllOrNothing, k("r1", "r2"), "tok", "30000"),
			ev(scriptAllOrNothing, k("r2", "r3"), "tok2", "30000"),
			c("EXISTS", "r3"),
			ev(scriptMsetnx, k("m1", "m2"), "tok", "30000"),
			ev(scriptMsetnx, k("m2", "r3"), "tok", "30000"),
			c("MGET", "m1", "m2", "r3"),
		}},
		{name: "F6-owner-ttl", keys: k("x", "y"), steps: []dstep{
			c("SET", "x", "tok", "NX", "PX", "30000"),
			c("SET", "y", "tok", "NX", "PX", "20000"),
			eva(scriptOwnedTTL, k("x", "y"), "tok"),
			ev(scriptOwnedTTL, k("x", "y"), "nope"),
			ev(`if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pttl", KEYS[1]) else return -3 end`, k("x"), "nope"),
		}},
		{name: "F7-reentrant-hash", keys: k("rl", "rl:latch", "chan"), steps: []dstep{
			ev(scriptHashAcquire, k("rl"), "30000", "uuid:1"),
			ev(scriptHashAcquire, k("rl"), "30000", "uuid:1"),
			eva(scriptHashAcquire, k("rl"), "30000", "uuid:2"),
			c("HGET", "rl", "uuid:1"),
			ev(scriptHashRenew, k("rl"), "40000", "uuid:1"),
			ev(scriptHashRenew, k("rl"), "40000", "uuid:2"),
			ca("PTTL", "rl"),
			ev(scriptHashRelease, k("rl", "chan", "rl:latch"), "0", "30000", "uuid:1", "publish", "5000"),
			c("DEL", "rl:latch"),
			ev(scriptHashRelease, k("rl", "chan", "rl:latch"), "0", "30000", "uuid:1", "publish", "5000"),
			ev(scriptHashRelease, k("rl", "chan", "rl:latch"), "0", "30000", "uuid:1", "publish", "5000"),
			c("DEL", "rl:latch"),
			ev(scriptHashRelease, k("rl", "chan", "rl:latch"), "0", "30000", "uuid:1", "publish", "5000"),
			c("HEXISTS", "rl", "uuid:1"),
		}},
		// Redisson's exact renewal text, native from VersionRedissonRenew
		// on; its fallbacks (a bad TTL, another kind) answer Redis' errors.
		{name: "F7-redisson-renew-native", version: VersionRedissonRenew, keys: k("rl", "s", "h"), steps: []dstep{
			ev(redissonRenewText, k("rl"), "40000", "uuid:1"),
			ev(scriptHashAcquire, k("rl"), "30000", "uuid:1"),
			ev(redissonRenewText, k("rl"), "40000", "uuid:1"),
			ca("PTTL", "rl"),
			ev(redissonRenewText, k("rl"), "50000", "uuid:2"),
			ca("PTTL", "rl"),
			ev(redissonRenewText, k("rl"), "abc", "uuid:1"),
			ev(redissonRenewText, k("rl"), "abc", "uuid:2"),
			ev(redissonRenewText, k("rl"), "40000"),
			c("SET", "s", "v"),
			ev(redissonRenewText, k("s"), "40000", "uuid:1"),
			c("HSET", "h", "uuid:1", "x"),
			ev(redissonRenewText, k("h"), "40000", "uuid:1"),
			ca("PTTL", "h"),
			ev(redissonRenewText, k("h"), "0", "uuid:1"),
			c("EXISTS", "h"),
			ev(redissonRenewText, k("rl"), "-1", "uuid:1"),
			c("EXISTS", "rl"),
		}},
		{name: "F8-fenced", keys: k("fl", "fl:token"), steps: []dstep{
			ev(scriptFenced, k("fl", "fl:token"), "30000", "uuid:1"),
			ev(scriptFenced, k("fl", "fl:token"), "30000", "uuid:1"),
			eva(scriptFenced, k("fl", "fl:token"), "30000", "uuid:2"),
			c("GET", "fl:token"),
			c("INCR", "fl:token"),
		}},
		{name: "F9a-rw-hash", keys: k("rw", "rw:t:1", "rw:t:2", "rw:t:3"), steps: []dstep{
			ev(scriptReadAcquire, k("rw", "rw:t"), "30000", "r1", "w1"),
			ev(scriptReadAcquire, k("rw", "rw:t"), "30000", "r1", "w1"),
			ev(scriptReadAcquire, k("rw", "rw:t"), "30000", "r1", "w1"),
			c("HGETALL", "rw"),
			ev(scriptReadRenew, k("rw", "rw:t"), "60000", "r1"),
			ca("PTTL", "rw:t:3"),
			ev(scriptReadRenew, k("rw", "rw:t"), "60000", "nobody"),
			c("HSET", "rw", "mode", "write"),
			eva(scriptReadAcquire, k("rw", "rw:t"), "30000", "r2", "w9"),
		}},
		{name: "F9b-rw-set-string", keys: k("rd", "wr", "wr_WRITERWAITING"), steps: []dstep{
			ev(scriptReaderAcquire, k("rd", "wr"), "r1", "30000"),
			ev(scriptReaderAcquire, k("rd", "wr"), "r2", "30000"),
			c("SISMEMBER", "rd", "r1"),
			ev(scriptWriterAcquire, k("rd", "wr"), "w1", "30000"),
			c("GET", "wr_WRITERWAITING"),
			ev(scriptReaderRelease, k("rd"), "r1"),
			ev(scriptReaderRelease, k("rd"), "r2"),
			ev(scriptWriterAcquire, k("rd", "wr"), "w1", "30000"),
			ev(scriptReaderAcquire, k("rd", "wr"), "r3", "30000"),
			c("SCARD", "rd"),
		}},
		{name: "F10-fair", keys: k("fair", "fair:q", "fair:t"), steps: []dstep{
			ev(scriptFairAcquire, k("fair", "fair:q", "fair:t"), "30000", "u1", "5000", "1000000"),
			eva(scriptFairAcquire, k("fair", "fair:q", "fair:t"), "30000", "u2", "5000", "1000000"),
			eva(scriptFairAcquire, k("fair", "fair:q", "fair:t"), "30000", "u3", "5000", "1000000"),
			eva(scriptFairAcquire, k("fair", "fair:q", "fair:t"), "30000", "u2", "5000", "1000000"),
			c("LRANGE", "fair:q", "0", "-1"),
			c("ZRANGE", "fair:t", "0", "-1"),
			ev(scriptFairRelease, k("fair", "fair:q", "fair:t", "fair:ch"), "30000", "u1", "0"),
			ev(scriptFairAcquire, k("fair", "fair:q", "fair:t"), "30000", "u2", "5000", "1000000"),
			c("LLEN", "fair:q"),
			c("ZCARD", "fair:t"),
			// u3's timeout passes on the client clock: it is dropped.
			ev(scriptFairRelease, k("fair", "fair:q", "fair:t", "fair:ch"), "30000", "u2", "0"),
			ev(scriptFairAcquire, k("fair", "fair:q", "fair:t"), "30000", "u4", "5000", "99999999999"),
		}},
		{name: "F11a-counter-semaphore", keys: k("sem"), steps: []dstep{
			c("SET", "sem", "2"),
			ev(scriptSemAcquire, k("sem"), "1"),
			ev(scriptSemAcquire, k("sem"), "1"),
			ev(scriptSemAcquire, k("sem"), "1"),
			ev(scriptSemRelease, k("sem", "sem:ch"), "1", "publish"),
			ev(scriptSemAcquire, k("sem"), "2"),
			c("GET", "sem"),
		}},
		{name: "F11b-lease-semaphore", keys: k("ls"), steps: []dstep{
			ev(scriptLeaseSem, k("ls"), "2", "h1", "10000"),
			ev(scriptLeaseSem, k("ls"), "2", "h2", "10000"),
			ev(scriptLeaseSem, k("ls"), "2", "h3", "10000"),
			c("ZCARD", "ls"),
			ev(scriptLeaseExtend, k("ls"), "h1", "20000"),
			ev(scriptLeaseExtend, k("ls"), "h9", "20000"),
			c("ZREM", "ls", "h2"),
			ev(scriptLeaseSem, k("ls"), "2", "h3", "10000"),
			ca("PTTL", "ls"),
		}},
		{name: "F12-force-unlock", keys: k("fu"), steps: []dstep{
			ev(scriptHashAcquire, k("fu"), "30000", "uuid:1"),
			ev(scriptForceUnlock, k("fu", "fu:ch"), "0", "publish"),
			ev(scriptForceUnlock, k("fu", "fu:ch"), "0", "publish"),
			c("SET", "fu", "tok", "NX", "PX", "30000"),
			ev(scriptForceUnlock, k("fu", "fu:ch"), "0", "publish"),
		}},
		{name: "strings-and-keys", keys: k("s", "n", "e", "p", "big"), steps: []dstep{
			c("SET", "s", "hello", "EX", "100"), ca("TTL", "s"), ca("PTTL", "s"),
			c("SET", "s", "world", "KEEPTTL"), ca("TTL", "s"),
			c("SET", "s", "x", "GET"), c("SET", "s", "y", "XX", "GET"), c("SET", "nope", "y", "XX"),
			c("SET", "s", "v", "EX", "0"), c("SET", "s", "v", "PX", "-5"), c("SET", "s", "v", "EX", "abc"),
			c("SET", "s", "v", "NX", "XX"), c("SET", "s", "v", "KEEPTTL", "PX", "5"), c("SET", "s", "v", "EX"),
			c("SET", "s", "v", "EX", "10", "EX", "20"), ca("TTL", "s"),
			c("SET", "s", "v", "PXAT", "1"), c("GET", "s"),
			c("SET"), c("GET", "a", "b"), c("get"),
			c("SET", "n", "10"), c("INCR", "n"), c("INCRBY", "n", "-20"), c("DECR", "n"), c("DECRBY", "n", "5"),
			c("INCRBY", "n", "abc"), c("INCRBY", "n", "+1"), c("INCRBY", "n", "01"),
			c("SET", "n", "9223372036854775807"), c("INCR", "n"), c("DECRBY", "n", "-9223372036854775808"),
			c("SET", "n", "1.5"), c("INCR", "n"), c("SET", "n", " 1"), c("INCR", "n"),
			c("SET", "e", "abcdefgh"), c("GETRANGE", "e", "0", "3"), c("GETRANGE", "e", "-3", "-1"),
			c("GETRANGE", "e", "5", "2"), c("GETRANGE", "e", "-1", "-5"), c("GETRANGE", "e", "2", "100"),
			c("GETRANGE", "missing", "0", "3"), c("GETRANGE", "e", "x", "1"),
			c("MSET", "m1", "1", "m2", "2"), c("MSET", "m1"), c("MGET", "m1", "m2", "m3"),
			c("MSETNX", "m3", "3", "m1", "x"), c("MSETNX", "m3", "3", "m4", "4"), c("MGET", "m1", "m3", "m4"),
			c("SET", "p", "v"), c("PEXPIRE", "p", "100000"), ca("PTTL", "p"),
			c("PEXPIRE", "p", "200000", "NX"), c("PEXPIRE", "p", "200000", "XX"), ca("PTTL", "p"),
			c("PEXPIRE", "p", "100", "GT"), c("PEXPIRE", "p", "300000", "GT"), c("PEXPIRE", "p", "500000", "LT"),
			c("PEXPIRE", "p", "1000", "NX", "XX"), c("PEXPIRE", "p", "1000", "GT", "LT"), c("PEXPIRE", "p", "1000", "FOO"),
			c("EXPIRE", "p", "abc"), c("EXPIRE", "p", "9223372036854775807"), c("PERSIST", "p"), c("PERSIST", "p"),
			c("TTL", "p"), c("PEXPIRE", "p", "1000", "XX"), c("PEXPIRE", "p", "1000", "GT"), c("PEXPIRE", "p", "1000", "LT"),
			c("PERSIST", "p"), c("EXPIRE", "p", "-1"), c("EXISTS", "p"), c("TTL", "nope"), c("PEXPIRE", "nope", "10"),
			c("SET", "big", "v"), c("PEXPIREAT", "big", "99999999999999"), ca("PTTL", "big"),
			c("EXPIREAT", "big", "1"), c("EXISTS", "big"),
			c("DEL", "m1", "m2", "m1", "zz"), c("UNLINK", "m3"), c("TYPE", "m4"), c("TYPE", "zz"),
			c("PING"), c("PING", "hi"),
		}},
		{name: "hashes-and-sets", keys: k("h", "st"), steps: []dstep{
			c("HSET", "h", "a", "1", "b", "2"), c("HSET", "h", "a", "3"), c("HSET", "h", "a"),
			c("HSETNX", "h", "a", "9"), c("HSETNX", "h", "c", "9"), c("HGET", "h", "a"), c("HGET", "h", "zz"),
			c("HEXISTS", "h", "c"), c("HINCRBY", "h", "a", "5"), c("HINCRBY", "h", "new", "-2"),
			c("HSET", "h", "f", "x"), c("HINCRBY", "h", "f", "1"), c("HINCRBY", "h", "a", "x"),
			c("HSET", "h", "big", "9223372036854775807"), c("HINCRBY", "h", "big", "1"),
			c("HLEN", "h"), c("HMGET", "h", "a", "zz", "b"), c("HDEL", "h", "f", "zz", "big"),
			c("HMSET", "h", "x", "1"),
			c("SET", "str", "v"), c("HGET", "str", "a"), c("HSET", "str", "a", "1"), c("SADD", "str", "a"),
			c("SADD", "st", "a", "b", "a"), c("SREM", "st", "a", "zz"), c("SISMEMBER", "st", "b"), c("SISMEMBER", "st", "a"),
			c("SCARD", "st"), c("SADD", "st", "c"), c("SCARD", "nope"), c("SMEMBERS", "nope"),
			c("SADD", "gone", "x"), c("SREM", "gone", "x"), c("EXISTS", "gone"),
			c("HSET", "hg", "a", "1"), c("HDEL", "hg", "a"), c("EXISTS", "hg"), c("HLEN", "hg"),
		}},
		{name: "zsets", keys: k("z"), steps: []dstep{
			c("ZADD", "z", "1", "a", "2", "b", "0.1", "c"), c("ZADD", "z", "1"), c("ZADD", "z", "nx", "1"),
			c("ZADD", "z", "xx", "nx", "1", "a"), c("ZADD", "z", "gt", "lt", "1", "a"), c("ZADD", "z", "incr", "1", "a", "2", "b"),
			c("ZADD", "z", "abc", "x"), c("ZADD", "z", "nan", "x"),
			c("ZADD", "z", "CH", "5", "a", "7", "d"), c("ZADD", "z", "XX", "CH", "6", "a", "8", "e"),
			c("ZADD", "z", "GT", "CH", "1", "a"), c("ZADD", "z", "LT", "CH", "1", "a"), c("ZADD", "z", "NX", "9", "a", "9", "f"),
			c("ZADD", "z", "INCR", "2.5", "a"), c("ZADD", "z", "GT", "INCR", "-1", "a"), c("ZINCRBY", "z", "1", "c"),
			c("ZINCRBY", "z", "x", "c"), c("ZSCORE", "z", "a"), c("ZSCORE", "z", "zz"), c("ZCARD", "z"),
			c("ZRANK", "z", "a"), c("ZRANK", "z", "zz"),
			c("ZRANGE", "z", "0", "-1"), c("ZRANGE", "z", "0", "-1", "WITHSCORES"), c("ZRANGE", "z", "-2", "-1"),
			c("ZRANGE", "z", "5", "1"), c("ZRANGE", "z", "0", "1", "REV"), c("ZRANGE", "z", "(1", "8", "BYSCORE", "WITHSCORES"),
			c("ZRANGE", "z", "8", "(1", "BYSCORE", "REV"), c("ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "1", "2"),
			c("ZRANGE", "z", "0", "-1", "LIMIT", "0", "1"), c("ZRANGE", "z", "0", "-1", "FOO"), c("ZRANGE", "z", "a", "b"),
			c("ZRANGE", "z", "x", "y", "BYSCORE"),
			c("ZRANGEBYSCORE", "z", "-inf", "+inf"), c("ZRANGEBYSCORE", "z", "2", "8", "WITHSCORES", "LIMIT", "0", "2"),
			c("ZRANGEBYSCORE", "z", "2", "8", "LIMIT", "-1", "2"), c("ZRANGEBYSCORE", "z", "2", "8", "LIMIT", "1", "-1"),
			c("ZRANGEBYSCORE", "z", "0", "1", "REV"),
			c("ZADD", "z", "inf", "top", "-inf", "bottom"), c("ZRANGE", "z", "0", "-1", "WITHSCORES"),
			c("ZREMRANGEBYSCORE", "z", "(5", "inf"), c("ZREMRANGEBYSCORE", "z", "a", "b"),
			c("ZREM", "z", "a", "zz"), c("ZRANGE", "z", "0", "-1", "WITHSCORES"),
			c("ZADD", "zg", "1", "x"), c("ZREM", "zg", "x"), c("EXISTS", "zg"),
		}},
		{name: "lists", keys: k("l"), steps: []dstep{
			c("LPUSH", "l", "a", "b", "c"), c("RPUSH", "l", "d", "a", "e", "a"), c("LRANGE", "l", "0", "-1"),
			c("LLEN", "l"), c("LINDEX", "l", "0"), c("LINDEX", "l", "-1"), c("LINDEX", "l", "99"), c("LINDEX", "l", "x"),
			c("LREM", "l", "1", "a"), c("LREM", "l", "-1", "a"), c("LRANGE", "l", "0", "-1"), c("LREM", "l", "0", "zz"),
			c("LPOP", "l"), c("RPOP", "l"), c("LPOP", "l", "2"), c("LPOP", "l", "0"), c("LPOP", "l", "-1"), c("LPOP", "l", "x"),
			c("LPOP", "l", "1", "2"), c("LPOP", "nope"), c("LPOP", "nope", "2"), c("RPOP", "l", "10"), c("EXISTS", "l"),
			c("RPUSH", "l", "x", "y", "x"), c("LREM", "l", "0", "x"), c("LRANGE", "l", "-100", "100"), c("LRANGE", "l", "2", "1"),
		}},
		{name: "script-semantics", keys: k("sk", "h", "lst"), steps: []dstep{
			ev(`return {1, "two", {3, false}, true, nil, 5}`, nil),
			ev(`return 3.99`, nil), ev(`return -3.99`, nil), ev(`return {err="custom failure"}`, nil),
			ev(`return {ok="FINE"}`, nil), ev(`return redis.status_reply("DONE")`, nil),
			ev(`return redis.error_reply("MY failure")`, nil), ev(`return redis.error_reply("lower")`, nil),
			ev(`return redis.error_reply("-DASHED x")`, nil), ev(`return {err=5}`, nil),
			ev(`return redis.sha1hex("abc")`, nil), ev(`return redis.replicate_commands()`, nil),
			ev(`return redis.LOG_WARNING`, nil), ev(`redis.log(redis.LOG_NOTICE, "x") return 1`, nil),
			ev(`return redis.call("SET", KEYS[1], 1.5)`, k("sk")), ev(`return redis.call("GET", KEYS[1])`, k("sk")),
			ev(`return redis.call("SET", KEYS[1], 0.1)`, k("sk")), ev(`return redis.call("GET", KEYS[1])`, k("sk")),
			ev(`return redis.call("SET", KEYS[1], 12)`, k("sk")), ev(`return redis.call("INCRBY", KEYS[1], 3)`, k("sk")),
			ev(`return redis.call("HSET", KEYS[1], "f", "v")`, k("h")),
			ev(`return redis.call("GET", KEYS[1])`, k("h")),
			ev(`local r = redis.pcall("GET", KEYS[1]) return r.err`, k("h")),
			ev(`return redis.pcall("INCR", KEYS[1])`, k("h")),
			ev(`return redis.call("nosuch")`, nil), ev(`return redis.pcall("nosuch")`, nil),
			ev(`return redis.call("GET")`, nil), ev(`return redis.pcall("GET", "a", "b")`, nil),
			ev(`return redis.call("SET", "k", {})`, nil),
			ev(`return redis.call("ZSCORE", KEYS[1], "m")`, k("nz")),
			ev(`redis.call("ZADD", KEYS[1], 1.5, "m") return redis.call("ZSCORE", KEYS[1], "m")`, k("z")),
			ev(`return redis.call("HGETALL", KEYS[1])`, k("h")),
			ev(`return redis.call("EXISTS", KEYS[1]) == 1`, k("h")),
			ev(`return type(redis.call("GET", "nothing"))`, nil),
			ev(`local t = redis.call("MGET", KEYS[1], "zz") return {type(t[1]), type(t[2])}`, k("sk")),
			ev(`return #ARGV + #KEYS`, k("a", "b"), "c"),
			ev(`x = 1`, nil), ev(`return undefined_global`, nil), ev(`return _VERSION`, nil),
			ev(`for i = "3", 1, -1 do redis.call("RPUSH", KEYS[1], i) end return redis.call("LRANGE", KEYS[1], 0, -1)`, k("lst")),
			ev(`local n = 0 for i = 1, "4" do n = n + i end return n`, nil),
			ev(`return redis.setresp(3)`, nil), ev(`return redis.setresp(9)`, nil),
			ev(`return table.concat({"a", "b"}, "-") .. string.upper("x") .. math.floor(2.7)`, nil),
			ev(`return tonumber("0x10") + tonumber("  5  ")`, nil),
			ev(`return string.format("%d-%s-%5.2f", 7, "z", 3.14159)`, nil),
			ev(`local ok, err = pcall(function() error("boom") end) return {tostring(ok), err}`, nil),
			ev(`local ok, err = pcall(function() error({code = 7}) end) return {tostring(ok), err.code}`, nil),
			// A known difference, pinned: math.random is reseeded per
			// script (Redis 7.0 keeps one unreplicated generator).
			ev(`local ok, err = pcall(error, "boom") return {tostring(ok), err}`, nil),
			ev(`local t = {} t[1] = "a" t[3] = "c" return t`, nil),
			ev(`return unpack({1, 2, 3})`, nil),
			{script: `return {math.random(10), math.random(1, 100), math.random(5)}`, table: "[:2 :75 :1]"},
			ev(`error("plain failure")`, nil),
			ev(`return 1 +`, nil),
		}},
		{name: "script-cache", keys: k("ro"), steps: []dstep{
			c("SCRIPT", "FLUSH"),
			c("SCRIPT", "LOAD", "return 'loaded'"),
			c("SCRIPT", "EXISTS", sha("return 'loaded'"), sha("return 'never'")),
			c("EVALSHA", sha("return 'loaded'"), "0"),
			c("EVALSHA", strings.ToUpper(sha("return 'loaded'")), "0"),
			c("EVALSHA", sha("return 'never'"), "0"),
			ev(roSet, k("ro")),
			c("EVALSHA", sha(roSet), "1", "ro"),
			c("EVAL_RO", roSet, "1", "ro"),
			c("EVALSHA_RO", sha(roSet), "1", "ro"),
			c("EVAL_RO", "return redis.pcall('set', KEYS[1], 'x')", "1", "ro"),
			c("EVAL_RO", "return redis.call('publish', 'ch', 'm')", "0"),
			c("EVAL_RO", "return redis.call('get', KEYS[1])", "1", "ro"),
			c("EVALSHA_RO", sha("return 'loaded'"), "0"),
			c("SCRIPT", "FLUSH", "ASYNC"),
			c("SCRIPT", "EXISTS", sha("return 'loaded'"), sha(roSet)),
			c("EVALSHA", sha("return 'loaded'"), "0"),
			c("EVALSHA_RO", sha(roSet), "1", "ro"),
			c("SCRIPT", "LOAD", "return 'loaded'"),
			c("SCRIPT", "FLUSH", "SYNC"),
			c("SCRIPT", "EXISTS", sha("return 'loaded'")),
		}},
		{name: "strings-more", keys: k("s", "a", "f", "g", "lk", "nl", "e", "h"), steps: []dstep{
			c("SET", "s", "hello"), c("STRLEN", "s"), c("STRLEN", "nope"), c("STRLEN"), c("STRLEN", "s", "x"),
			c("HSET", "h", "f", "v"), c("STRLEN", "h"), c("GETDEL", "h"), c("APPEND", "h", "x"),
			c("INCRBYFLOAT", "h", "1"), c("GETEX", "h"), c("GETEX", "h", "EX", "abc"),
			c("SET", "g", "v"), c("GETDEL", "g"), c("GETDEL", "g"), c("EXISTS", "g"), c("GETDEL"),
			c("APPEND", "a", "ab"), c("APPEND", "a", "cd"), c("GET", "a"), c("APPEND", "a", ""),
			c("PEXPIRE", "a", "100000"), c("APPEND", "a", "e"), ca("PTTL", "a"), c("APPEND", "e", ""),
			c("EXISTS", "e"), c("STRLEN", "e"), c("APPEND", "a"),
			c("SET", "n", "12"), c("APPEND", "n", "3"), c("INCR", "n"),
			c("INCRBYFLOAT", "f", "10.50"), c("INCRBYFLOAT", "f", "0.1"), c("INCRBYFLOAT", "f", "-10.6"),
			c("INCRBYFLOAT", "f", "0.1"), c("INCRBYFLOAT", "f", "0.2"), c("INCRBYFLOAT", "f", "5.0e3"),
			c("INCRBYFLOAT", "f", "+1.5"), c("INCRBYFLOAT", "f", ".25"), c("INCRBYFLOAT", "f", "5."),
			c("INCRBYFLOAT", "f", "abc"), c("INCRBYFLOAT", "f", " 1"), c("INCRBYFLOAT", "f", "1 "),
			c("INCRBYFLOAT", "f", "nan"), c("INCRBYFLOAT", "f", "inf"), c("INCRBYFLOAT", "f", "-Infinity"),
			c("INCRBYFLOAT", "f", "1e5000"), c("INCRBYFLOAT", "f", "1e-5000"), c("INCRBYFLOAT", "f", ""),
			c("INCRBYFLOAT", "f", "1e4000"), c("INCRBYFLOAT", "f", "-1e4000"), c("GET", "f"),
			c("INCRBYFLOAT", "f", "1e999999999"), c("INCRBYFLOAT", "f", "1e-999999999"), c("INCRBYFLOAT", "f", "0e999999999"),
			c("INCRBYFLOAT", "f", "0.000e-999999999"), c("INCRBYFLOAT", "f", "1e99999999999999999999"), c("GET", "f"),
			c("SET", "f", "17179869184"), c("INCRBYFLOAT", "f", "1.1"), c("INCRBYFLOAT", "f", "1e20"),
			c("SET", "f", "1.7976931348623157e308"), c("INCRBYFLOAT", "f", "1.7976931348623157e308"),
			c("SET", "f", "-0.0"), c("INCRBYFLOAT", "f", "0"), c("INCRBYFLOAT", "f", "-3"),
			c("SET", "f", "abc"), c("INCRBYFLOAT", "f", "1"), c("SET", "f", "3"),
			c("PEXPIRE", "f", "100000"), c("INCRBYFLOAT", "f", "1"), ca("PTTL", "f"),
			{cmd: []string{"INCRBYFLOAT", "f", "0x10"}, table: "-ERR value is not a valid float"},
			c("INCRBYFLOAT", "f"),
			c("GETEX", "s"), c("GETEX", "s", "EX", "100"), ca("TTL", "s"), c("GETEX", "s", "PERSIST"), c("TTL", "s"),
			c("GETEX", "s", "px", "200000"), ca("PTTL", "s"), c("GETEX", "s", "EX", "10", "EX", "20"), ca("TTL", "s"),
			c("GETEX", "s", "EX", "0"), c("GETEX", "s", "PX", "-1"), c("GETEX", "s", "EX", "abc"),
			c("GETEX", "s", "EX", "9223372036854775807"), c("GETEX", "s", "EX", "10", "PX", "10"),
			c("GETEX", "s", "PERSIST", "EX", "10"), c("GETEX", "s", "EX", "10", "PERSIST"), c("GETEX", "s", "EX"),
			c("GETEX", "s", "KEEPTTL"), c("GETEX", "s", "NX"), c("GETEX", "s", "GET"), c("GETEX", "s", "PERSIST", "PERSIST"),
			c("GETEX", "nope", "EX", "abc"), c("GETEX", "nope", "FOO"), c("GETEX"),
			c("GETEX", "s", "EXAT", "99999999999"), ca("TTL", "s"), c("GETEX", "s", "PXAT", "1"), c("EXISTS", "s"),
			c("SET", "s", "again"), c("GETEX", "s", "EXAT", "1"), c("EXISTS", "s"),
			// A lock reads as a string whose value is the holder's token.
			c("SET", "lk", "tok1", "NX", "PX", "30000"), c("STRLEN", "lk"), c("GETEX", "lk"),
			c("INCR", "lk"), c("INCRBY", "lk", "2"), c("DECR", "lk"), c("DECRBY", "lk", "2"), c("INCRBYFLOAT", "lk", "1"),
			c("GETEX", "lk", "PX", "60000"), ca("PTTL", "lk"),
			// The lease cannot be made endless: PERSIST leaves it.
			{cmd: []string{"GETEX", "lk", "PERSIST"}, table: `"tok1"`},
			// A lock is not appended to: that would change its token.
			{cmd: []string{"APPEND", "lk", "x"}, table: "-" + errWrongType},
			{cmd: []string{"GETDEL", "lk"}, table: `"tok1"`}, c("EXISTS", "lk"),
			c("SET", "nl", "123", "NX", "PX", "30000"),
			// A numeric token is still a lock, not a counter.
			{cmd: []string{"INCR", "nl"}, table: "-" + errNotInt},
			{cmd: []string{"INCRBYFLOAT", "nl", "1"}, table: "-" + errNotFloat},
			{cmd: []string{"GETEX", "nl", "PXAT", "1"}, table: `"123"`}, c("EXISTS", "nl"),
		}},
	}
}

// roSet writes: EVAL_RO and EVALSHA_RO of it must fail.
const roSet = "return redis.call('set', KEYS[1], 'v')"

func sha(script string) string { return ScriptSHA([]byte(script)) }
