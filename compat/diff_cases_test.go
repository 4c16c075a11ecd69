package compat

// Scripts in the shape of each family (shared/redis-clients.md §6.2),
// written here, not copied from the clients.

// F2: compare-and-delete, 1/0 (redis-py, bsm, go-redis users).
const luaCAD = `if redis.call("get", KEYS[1]) == ARGV[1] then
	return redis.call("del", KEYS[1])
else
	return 0
end`

// F2: compare-and-delete, -1 when missing (redsync shape).
const luaCADMissing = `local val = redis.call("GET", KEYS[1])
if val == ARGV[1] then
	return redis.call("DEL", KEYS[1])
elseif val == false then
	return -1
else
	return 0
end`

// F2: multi-key count (node-redlock release shape).
const luaCADMulti = `local count = 0
for _, key in ipairs(KEYS) do
	if redis.call("get", key) == ARGV[1] then
		redis.call("del", key)
		count = count + 1
	end
end
return count`

// F2: with an unlock notice (Spring PUB_SUB shape).
const luaCADPublish = `if redis.call('get', KEYS[1]) == ARGV[1] then
	redis.call('unlink', KEYS[1])
	redis.call('publish', KEYS[2], ARGV[2])
	return true
end
return false`

// F3: compare-and-pexpire (redsync touch / bsm refresh shape).
const luaCAPE = `if redis.call("get", KEYS[1]) == ARGV[1] then
	return redis.call("pexpire", KEYS[1], ARGV[2])
else
	return 0
end`

// F3: add to the remaining TTL or replace it (redis-py extend shape).
const luaCAPEAdd = `local token = redis.call('get', KEYS[1])
if not token or token ~= ARGV[1] then
	return 0
end
local expiration = redis.call('pttl', KEYS[1])
if not expiration then expiration = 0 end
if expiration < 0 then return 0 end
local newttl = ARGV[2]
if ARGV[3] == "0" then newttl = ARGV[2] + expiration end
redis.call('pexpire', KEYS[1], newttl)
return 1`

// F4: compare-or-create extend (redsync SetNX-on-extend / RedLock.net shape).
const luaCompareOrCreate = `if redis.call("GET", KEYS[1]) == ARGV[1] then
	return redis.call("PEXPIRE", KEYS[1], ARGV[2])
elseif redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2], "NX") then
	return 1
else
	return -1
end`

// F5: all-or-nothing acquire and extend (node-redlock v5 shape).
const luaAllAcquire = `for _, key in ipairs(KEYS) do
	if redis.call("exists", key) == 1 then return 0 end
end
for _, key in ipairs(KEYS) do
	redis.call("set", key, ARGV[1], "PX", ARGV[2])
end
return #KEYS`

const luaAllExtend = `for _, key in ipairs(KEYS) do
	if redis.call("get", key) ~= ARGV[1] then return 0 end
end
for _, key in ipairs(KEYS) do
	redis.call("set", key, ARGV[1], "PX", ARGV[2])
end
return #KEYS`

// F5: MSETNX then PEXPIRE each (bsm v0.10 shape).
const luaMsetnx = `local args = {}
for _, key in ipairs(KEYS) do
	table.insert(args, key)
	table.insert(args, ARGV[1])
end
if redis.call("msetnx", unpack(args)) ~= 1 then return false end
for _, key in ipairs(KEYS) do
	redis.call("pexpire", key, ARGV[2])
end
return redis.status_reply("OK")`

// F6: owner-checked minimum TTL (bsm shape).
const luaOwnedTTL = `local ttl = -3
for _, key in ipairs(KEYS) do
	if redis.call("get", key) ~= ARGV[1] then return -3 end
	local t = redis.call("pttl", key)
	if ttl == -3 or t < ttl then ttl = t end
end
return ttl`

// F7: reentrant hash lock with unlock notice and unlock latch (Redisson RLock shape).
const luaHashAcquire = `if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then
	redis.call('hincrby', KEYS[1], ARGV[2], 1);
	redis.call('pexpire', KEYS[1], ARGV[1]);
	return nil;
end;
return redis.call('pttl', KEYS[1]);`

const luaHashRelease = `local val = redis.call('get', KEYS[3]);
if val ~= false then return tonumber(val); end;
if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil; end;
local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1);
local result = 0;
if (counter > 0) then
	redis.call('pexpire', KEYS[1], ARGV[2]);
	result = 0;
else
	redis.call('del', KEYS[1]);
	redis.call(ARGV[4], KEYS[2], ARGV[1]);
	result = 1;
end;
redis.call('set', KEYS[3], result, 'px', ARGV[5]);
return result;`

const luaHashRenew = `if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
	redis.call('pexpire', KEYS[1], ARGV[1]);
	return 1;
end;
return 0;`

// luaRedissonRenew is Redisson 3.x's watchdog renewal byte for byte (its
// Java literals joined), which locknode runs natively from cluster version
// 4 and batches by this SHA1.
const luaRedissonRenew = "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then " +
	"redis.call('pexpire', KEYS[1], ARGV[1]); " +
	"return 1; " +
	"end; " +
	"return 0;"

// F8: fenced reentrant lock (Redisson RFencedLock shape).
const luaFenced = `if ((redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then
	local token = redis.call('incr', KEYS[2]);
	redis.call('hincrby', KEYS[1], ARGV[2], 1);
	redis.call('pexpire', KEYS[1], ARGV[1]);
	return {-1, token};
end;
return {redis.call('pttl', KEYS[1]), -1};`

// F9a: reader/writer lock in a hash with a mode field, per-hold timeout
// keys, and a watchdog whose numeric for starts at a string (Redisson
// RReadWriteLock shape).
const luaReadAcquire = `local mode = redis.call('hget', KEYS[1], 'mode');
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
	local remainTime = redis.call('pttl', KEYS[1]);
	redis.call('pexpire', KEYS[1], math.max(remainTime, ARGV[1]));
	return nil;
end;
return redis.call('pttl', KEYS[1]);`

const luaWriteAcquire = `local mode = redis.call('hget', KEYS[1], 'mode');
if (mode == false) then
	redis.call('hset', KEYS[1], 'mode', 'write');
	redis.call('hset', KEYS[1], ARGV[2], 1);
	redis.call('pexpire', KEYS[1], ARGV[1]);
	return nil;
end;
if (mode == 'write') and (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then
	redis.call('hincrby', KEYS[1], ARGV[2], 1);
	local currentExpire = redis.call('pttl', KEYS[1]);
	redis.call('pexpire', KEYS[1], currentExpire + ARGV[1]);
	return nil;
end;
return redis.call('pttl', KEYS[1]);`

const luaReadRenew = `local counter = redis.call('hget', KEYS[1], ARGV[2]);
if (counter ~= false) then
	redis.call('pexpire', KEYS[1], ARGV[1]);
	for i = counter, 1, -1 do
		redis.call('pexpire', KEYS[2] .. ':' .. i, ARGV[1]);
	end;
	return 1;
end;
return 0;`

// F9b: reader set + writer string + writer-waiting marker (DistributedLock shape).
const luaReaderAcquire = `if redis.call('exists', KEYS[2]) == 1 then return 0 end
redis.call('sadd', KEYS[1], ARGV[1])
local remaining = redis.call('pttl', KEYS[1])
if remaining < tonumber(ARGV[2]) then redis.call('pexpire', KEYS[1], ARGV[2]) end
return 1`

const luaWriterAcquire = `if redis.call('scard', KEYS[1]) > 0 then
	redis.call('set', KEYS[2] .. '_WRITERWAITING', ARGV[1], 'px', ARGV[2])
	return 0
end
if redis.call('get', KEYS[2] .. '_WRITERWAITING') == ARGV[1] then
	redis.call('del', KEYS[2] .. '_WRITERWAITING')
end
if redis.call('set', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0`

const luaReaderRelease = `return redis.call('srem', KEYS[1], ARGV[1])`

// F10: fair FIFO lock, LIST queue + ZSET timeouts on a client-supplied
// clock ARGV[4] (Redisson RFairLock shape).
const luaFairAcquire = `while true do
	local firstThreadId = redis.call('lindex', KEYS[2], 0);
	if firstThreadId == false then break; end;
	local timeout = tonumber(redis.call('zscore', KEYS[3], firstThreadId));
	if timeout <= tonumber(ARGV[4]) then
		redis.call('zrem', KEYS[3], firstThreadId);
		redis.call('lpop', KEYS[2]);
	else break; end;
end;
if (redis.call('exists', KEYS[1]) == 0) and ((redis.call('exists', KEYS[2]) == 0) or (redis.call('lindex', KEYS[2], 0) == ARGV[2])) then
	redis.call('lpop', KEYS[2]);
	redis.call('zrem', KEYS[3], ARGV[2]);
	local keys = redis.call('zrange', KEYS[3], 0, -1);
	for i = 1, #keys, 1 do
		redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), keys[i]);
	end;
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
local lastThreadId = redis.call('lindex', KEYS[2], -1);
local ttl;
if lastThreadId ~= false and lastThreadId ~= ARGV[2] then
	ttl = tonumber(redis.call('zscore', KEYS[3], lastThreadId)) - tonumber(ARGV[4]);
else
	ttl = redis.call('pttl', KEYS[1]);
end;
local timeout = ttl + tonumber(ARGV[3]) + tonumber(ARGV[4]);
if redis.call('zadd', KEYS[3], timeout, ARGV[2]) == 1 then
	redis.call('rpush', KEYS[2], ARGV[2]);
end;
return ttl;`

// F11a: counter semaphore with a publish of the new value (Redisson RSemaphore shape).
const luaSemAcquire = `local value = redis.call('get', KEYS[1]);
if (value ~= false and tonumber(value) >= tonumber(ARGV[1])) then
	local val = redis.call('decrby', KEYS[1], ARGV[1]);
	return 1;
end;
return 0;`

const luaSemRelease = `local value = redis.call('incrby', KEYS[1], ARGV[1]);
redis.call(ARGV[2], KEYS[2], value);
return value;`

// F11b: lease semaphore, ZSET scored by server TIME + expiry (DistributedLock shape).
const luaLeaseSemAcquire = `redis.replicate_commands()
local nowResult = redis.call('time')
local nowMillis = (tonumber(nowResult[1]) * 1000.0) + (tonumber(nowResult[2]) / 1000.0)
redis.call('zremrangebyscore', KEYS[1], '-inf', nowMillis)
if redis.call('zcard', KEYS[1]) < tonumber(ARGV[1]) then
	redis.call('zadd', KEYS[1], nowMillis + tonumber(ARGV[3]), ARGV[2])
	local keyTtl = redis.call('pttl', KEYS[1])
	if keyTtl < tonumber(3 * ARGV[3]) then redis.call('pexpire', KEYS[1], 3 * ARGV[3]) end
	return 1
end
return 0`

const luaLeaseSemExtend = `redis.replicate_commands()
local nowResult = redis.call('time')
local nowMillis = (tonumber(nowResult[1]) * 1000.0) + (tonumber(nowResult[2]) / 1000.0)
local result = redis.call('zadd', KEYS[1], 'XX', 'CH', nowMillis + tonumber(ARGV[2]), ARGV[1])
local keyTtl = redis.call('pttl', KEYS[1])
if keyTtl < tonumber(3 * ARGV[2]) then redis.call('pexpire', KEYS[1], 3 * ARGV[2]) end
return result`

// F12: force unlock with a notice (Redisson forceUnlock shape).
const luaForceUnlock = `if (redis.call('del', KEYS[1]) == 1) then
	redis.call(ARGV[2], KEYS[2], ARGV[1]);
	return 1
else
	return 0
end`

// Deviations DESIGN.md asks for ("One key space for every client").
const (
	whySetNXSameToken = "SET NX by the current holder's token succeeds and changes nothing (redsync quorum on one cluster)"
	whyTombstone      = "a repeated compare-and-delete by the token that just released answers as the release did"
	whyLockNoAppend   = "a write that would change a lock's token is WRONGTYPE"
	whyLockNoCounter  = "a lock is not a counter, whatever its token reads"
)

func diffSequences() []sequence {
	const L, L2, C, Q, Z = "$P:lock", "$P:lock2", "$P:chan", "$P:queue", "$P:timeouts"
	return []sequence{
		{name: "F1 set-nx-px", keys: keys(L, L2), steps: []step{
			cmd("SET", L, "tok1", "NX", "PX", "10000"),
			cmd("SET", L, "tok2", "NX", "PX", "10000"),
			cmd("SET", L, "tok1", "PX", "10000", "NX").deviates("+OK", whySetNXSameToken),
			cmd("GET", L),
			cmd("PTTL", L).approxMs(),
			cmd("set", L2, "tok3", "ex", "8", "nx"),
			cmd("TTL", L2).approxTo(1),
			cmd("EXISTS", L, L2, "$P:none"),
			cmd("SET", L, "tok2", "NX", "EX", "0"),
			cmd("SET", L, "tok2", "PX", "abc", "NX"),
			cmd("SET", L, "tok2", "NX", "XX"),
		}},
		{name: "F2 compare-and-delete", keys: keys(L), steps: []step{
			cmd("SET", L, "tok1", "NX", "PX", "10000"),
			eval(luaCAD, keys(L), "other"),
			cmd("GET", L),
			evalsha(luaCAD, keys(L), "tok1"),
			cmd("GET", L),
			evalsha(luaCAD, keys(L), "tok1").deviates(":1", whyTombstone),
			evalsha(luaCAD, keys(L), "other"),
			cmd("SET", L, "tok2", "NX", "PX", "10000"),
			evalsha(luaCAD, keys(L), "other"),
		}},
		{name: "F2 redsync delete", keys: keys(L), steps: []step{
			eval(luaCADMissing, keys(L), "tok1"),
			cmd("SET", L, "tok1", "NX", "PX", "10000"),
			evalsha(luaCADMissing, keys(L), "tok2"),
			evalsha(luaCADMissing, keys(L), "tok1"),
			evalsha(luaCADMissing, keys(L), "tok1").deviates(":1", whyTombstone),
			evalsha(luaCADMissing, keys(L), "tok2"),
		}},
		{name: "F2 multi-key and publish", keys: keys(L, L2), steps: []step{
			cmd("SET", L, "tok1", "PX", "10000"),
			cmd("SET", L2, "tok1", "PX", "10000"),
			eval(luaCADMulti, keys(L, L2, "$P:none"), "tok1"),
			cmd("EXISTS", L, L2),
			cmd("SET", L, "tok1", "NX", "PX", "10000"),
			eval(luaCADPublish, keys(L, C), "other", "unlocked"),
			eval(luaCADPublish, keys(L, C), "tok1", "unlocked"),
			cmd("EXISTS", L),
		}},
		{name: "F3 compare-and-pexpire", keys: keys(L), steps: []step{
			cmd("SET", L, "tok1", "NX", "PX", "5000"),
			eval(luaCAPE, keys(L), "tok1", "20000"),
			cmd("PTTL", L).approxMs(),
			eval(luaCAPE, keys(L), "other", "1000"),
			cmd("PTTL", L).approxMs(),
			eval(luaCAPEAdd, keys(L), "tok1", "5000", "0"),
			cmd("PTTL", L).approxMs(),
			eval(luaCAPEAdd, keys(L), "tok1", "3000", "1"),
			cmd("PTTL", L).approxMs(),
			eval(luaCAPEAdd, keys(L), "other", "3000", "1"),
			eval(luaCAPE, keys("$P:none"), "tok1", "1000"),
		}},
		// An extend after the token's own release answers as Redis does
		// (0); only the repeated release keeps the tombstone's answer.
		{name: "F3 extend after release", keys: keys(L), steps: []step{
			cmd("SET", L, "tok1", "NX", "PX", "10000"),
			evalsha(luaCAD, keys(L), "tok1"),
			evalsha(luaCAPE, keys(L), "tok1", "10000"),
			cmd("EXISTS", L),
			evalsha(luaCAD, keys(L), "tok1").deviates(":1", whyTombstone),
			evalsha(luaCAPE, keys(L), "tok1", "10000"),
			cmd("PTTL", L),
		}},
		{name: "F3 no ttl", keys: keys(L), steps: []step{
			cmd("SET", L, "tok1"),
			eval(luaCAPEAdd, keys(L), "tok1", "5000", "0"),
			cmd("PTTL", L),
		}},
		{name: "F4 compare-or-create", keys: keys(L), steps: []step{
			eval(luaCompareOrCreate, keys(L), "tok1", "8000"),
			cmd("PTTL", L).approxMs(),
			evalsha(luaCompareOrCreate, keys(L), "tok1", "12000"),
			cmd("PTTL", L).approxMs(),
			evalsha(luaCompareOrCreate, keys(L), "tok2", "12000"),
			cmd("GET", L),
		}},
		{name: "F5 all-or-nothing", keys: keys(L, L2, "$P:lock3"), steps: []step{
			eval(luaAllAcquire, keys(L, L2), "tok1", "10000"),
			eval(luaAllAcquire, keys(L2, "$P:lock3"), "tok2", "10000"),
			cmd("EXISTS", "$P:lock3"),
			eval(luaAllExtend, keys(L, L2), "tok1", "20000"),
			cmd("PTTL", L2).approxMs(),
			eval(luaAllExtend, keys(L, L2), "tok2", "20000"),
			eval(luaCADMulti, keys(L, L2), "tok1"),
			eval(luaMsetnx, keys(L, L2), "tok3", "15000"),
			eval(luaMsetnx, keys(L2, "$P:lock3"), "tok4", "15000"),
			cmd("PTTL", L).approxMs(),
		}},
		{name: "F6 owned ttl", keys: keys(L, L2), steps: []step{
			cmd("SET", L, "tok1", "PX", "10000"),
			cmd("SET", L2, "tok1", "PX", "6000"),
			eval(luaOwnedTTL, keys(L, L2), "tok1").approxMs(),
			eval(luaOwnedTTL, keys(L, L2), "tok2"),
			eval(luaOwnedTTL, keys(L, "$P:none"), "tok1"),
		}},
		{name: "F7 reentrant hash lock", keys: keys(L, "$P:latch"), steps: []step{
			eval(luaHashAcquire, keys(L), "30000", "uuid:1"),
			evalsha(luaHashAcquire, keys(L), "30000", "uuid:1"),
			cmd("HGET", L, "uuid:1"),
			evalsha(luaHashAcquire, keys(L), "30000", "uuid:2").approxMs(),
			eval(luaHashRenew, keys(L), "40000", "uuid:1"),
			cmd("PTTL", L).approxMs(),
			eval(luaHashRenew, keys(L), "40000", "uuid:2"),
			eval(luaHashRelease, keys(L, C, "$P:latch"), "0", "30000", "uuid:2", "publish", "2000"),
			eval(luaHashRelease, keys(L, C, "$P:latch"), "0", "30000", "uuid:1", "publish", "2000"),
			cmd("GET", "$P:latch"),
			cmd("DEL", "$P:latch"),
			evalsha(luaHashRelease, keys(L, C, "$P:latch"), "0", "30000", "uuid:1", "publish", "2000"),
			cmd("EXISTS", L),
			cmd("GET", "$P:latch"),
			evalsha(luaHashRelease, keys(L, C, "$P:latch"), "0", "30000", "uuid:1", "publish", "2000"),
		}},
		{name: "F7 Redisson watchdog renewal", keys: keys(L, "$P:s", "$P:none"), steps: []step{
			eval(luaRedissonRenew, keys(L), "40000", "uuid:1"),
			eval(luaHashAcquire, keys(L), "30000", "uuid:1"),
			evalsha(luaRedissonRenew, keys(L), "40000", "uuid:1"),
			cmd("PTTL", L).approxMs(),
			evalsha(luaRedissonRenew, keys(L), "50000", "uuid:2"),
			cmd("PTTL", L).approxMs(),
			evalsha(luaRedissonRenew, keys(L), "abc", "uuid:1"),
			evalsha(luaRedissonRenew, keys(L), "abc", "uuid:2"),
			evalsha(luaRedissonRenew, keys("$P:none"), "40000", "uuid:1"),
			cmd("SET", "$P:s", "v"),
			evalsha(luaRedissonRenew, keys("$P:s"), "40000", "uuid:1"),
			evalsha(luaRedissonRenew, keys(L), "0", "uuid:1"),
			cmd("EXISTS", L),
		}},
		{name: "F8 fenced lock", keys: keys(L, "$P:token"), steps: []step{
			eval(luaFenced, keys(L, "$P:token"), "30000", "uuid:1"),
			eval(luaFenced, keys(L, "$P:token"), "30000", "uuid:1"),
			eval(luaFenced, keys(L, "$P:token"), "30000", "uuid:2").approxMs(),
			cmd("GET", "$P:token"),
			cmd("DEL", L),
			eval(luaFenced, keys(L, "$P:token"), "30000", "uuid:2"),
		}},
		{name: "F9a rw lock hash", keys: keys(L, "$P:rwt:uuid:1:rwlock_timeout:1", "$P:rwt:uuid:1:rwlock_timeout:2", "$P:rwt:uuid:2:rwlock_timeout:1"), steps: []step{
			eval(luaReadAcquire, keys(L, "$P:rwt:uuid:1:rwlock_timeout"), "30000", "uuid:1", "uuid:1:write"),
			eval(luaReadAcquire, keys(L, "$P:rwt:uuid:1:rwlock_timeout"), "30000", "uuid:1", "uuid:1:write"),
			eval(luaReadAcquire, keys(L, "$P:rwt:uuid:2:rwlock_timeout"), "20000", "uuid:2", "uuid:2:write"),
			cmd("PTTL", L).approxMs(),
			eval(luaWriteAcquire, keys(L), "30000", "uuid:3:write").approxMs(),
			eval(luaReadRenew, keys(L, "$P:rwt:uuid:1:rwlock_timeout"), "45000", "uuid:1"),
			cmd("PTTL", "$P:rwt:uuid:1:rwlock_timeout:2").approxMs(),
			eval(luaReadRenew, keys(L, "$P:rwt:uuid:9:rwlock_timeout"), "45000", "uuid:9"),
		}},
		{name: "F9a write then reentrant", keys: keys(L), steps: []step{
			eval(luaWriteAcquire, keys(L), "10000", "uuid:1:write"),
			eval(luaWriteAcquire, keys(L), "10000", "uuid:1:write"),
			cmd("PTTL", L).approxMs(),
			eval(luaReadAcquire, keys(L, "$P:rwt"), "10000", "uuid:2", "uuid:2:write").approxMs(),
		}},
		{name: "F9b rw lock set+string", keys: keys(L, L2, L2+"_WRITERWAITING"), steps: []step{
			eval(luaReaderAcquire, keys(L, L2), "r1", "10000"),
			eval(luaReaderAcquire, keys(L, L2), "r2", "10000"),
			eval(luaWriterAcquire, keys(L, L2), "w1", "5000"),
			cmd("GET", L2+"_WRITERWAITING"),
			eval(luaReaderRelease, keys(L), "r1"),
			eval(luaReaderRelease, keys(L), "r2"),
			eval(luaWriterAcquire, keys(L, L2), "w1", "5000"),
			eval(luaReaderAcquire, keys(L, L2), "r3", "10000"),
		}},
		{name: "F10 fair lock", keys: keys(L, Q, Z), scoreTol: diffTol, // scores derive from PTTL
			steps: []step{
				eval(luaFairAcquire, keys(L, Q, Z), "30000", "t1", "5000", "1000000"),
				eval(luaFairAcquire, keys(L, Q, Z), "30000", "t2", "5000", "1000000").approxMs(),
				eval(luaFairAcquire, keys(L, Q, Z), "30000", "t3", "5000", "1000100").approxMs(),
				eval(luaFairAcquire, keys(L, Q, Z), "30000", "t2", "5000", "1000200").approxMs(),
				cmd("LRANGE", Q, "0", "-1"),
				eval(luaFairAcquire, keys(L, Q, Z), "30000", "t1", "5000", "1000300"),
				cmd("HGET", L, "t1"),
			}},
		{name: "F11a counter semaphore", keys: keys(L), steps: []step{
			cmd("SET", L, "2"),
			eval(luaSemAcquire, keys(L), "1"),
			eval(luaSemAcquire, keys(L), "2"),
			eval(luaSemAcquire, keys(L), "1"),
			eval(luaSemAcquire, keys(L), "1"),
			eval(luaSemRelease, keys(L, C), "2", "publish"),
			eval(luaSemAcquire, keys("$P:none"), "1"),
		}},
		{name: "F11b lease semaphore", keys: keys(L), scoreTol: 1000, steps: []step{
			eval(luaLeaseSemAcquire, keys(L), "2", "h1", "10000"),
			eval(luaLeaseSemAcquire, keys(L), "2", "h2", "10000"),
			eval(luaLeaseSemAcquire, keys(L), "2", "h3", "10000"),
			cmd("ZCARD", L),
			eval(luaLeaseSemExtend, keys(L), "h1", "20000"),
			eval(luaLeaseSemExtend, keys(L), "h9", "20000"),
			cmd("ZREM", L, "h2"),
			eval(luaLeaseSemAcquire, keys(L), "2", "h3", "10000"),
		}},
		{name: "F12 force unlock", keys: keys(L), steps: []step{
			eval(luaHashAcquire, keys(L), "30000", "uuid:1"),
			eval(luaForceUnlock, keys(L, C), "0", "publish"),
			eval(luaForceUnlock, keys(L, C), "0", "publish"),
			cmd("SET", L, "tok1", "NX", "PX", "10000"),
			cmd("DEL", L),
			cmd("EXISTS", L),
		}},
		{name: "script plumbing and reply types", keys: keys(L), steps: []step{
			cmd("SCRIPT", "LOAD", "return 'loaded'"),
			cmd("EVALSHA", sha1hex("return 'loaded'"), "0"),
			cmd("SCRIPT", "EXISTS", sha1hex("return 'loaded'"), sha1hex("return 'never'")),
			cmd("EVALSHA", sha1hex("return 'never'"), "0"),
			cmd("evalsha", sha1hex("return 'never'"), "0"),
			eval("return true", nil),
			eval("return false", nil),
			eval("return nil", nil),
			eval("return 3.99", nil),
			eval("return -2.5", nil),
			eval("return {1, 'two', {3}, false, 4}", nil),
			eval("return redis.status_reply('FINE')", nil),
			eval("return redis.error_reply('MYERR custom')", nil),
			eval("return {err='ERR table error'}", nil),
			eval("return redis.pcall('incr', KEYS[1])", keys(L)),
			cmd("SET", L, "notanumber"),
			eval("return redis.pcall('incr', KEYS[1])", keys(L)),
			eval("return redis.call('incr', KEYS[1])", keys(L)).anyError(),
			eval("return redis.call('nosuchcommand')", nil).anyError(),
			eval("this is not lua", nil).anyError(),
			eval("return #KEYS + #ARGV", keys(L, L2), "a", "b", "c"),
			eval("return ARGV", nil, "x", "", "z"),
			cmd("EVAL", "return 1", "-1"),
			cmd("EVAL", "return 1", "3", "a"),
			cmd("HSET", L2, "f", "v"),
			cmd("GET", L2),
			eval("return redis.call('get', KEYS[1])", keys(L2)).anyError(),
			cmd("DEL", L2),
		}},
		{name: "script cache: LOAD, EXISTS, FLUSH, read-only scripts", keys: keys(L), steps: []step{
			cmd("SCRIPT", "LOAD", "return 'kept'"),
			cmd("SCRIPT", "EXISTS", sha1hex("return 'kept'"), sha1hex("return 'never'")),
			cmd("EVALSHA", sha1hex("return 'kept'"), "0"),
			cmd("EVALSHA", "not-a-sha", "0"),
			eval(luaSetRO, keys(L), "v1"),
			evalsha(luaSetRO, keys(L), "v2"),
			cmd("EVAL_RO", luaSetRO, "1", L, "v3"),
			cmd("EVALSHA_RO", sha1hex(luaSetRO), "1", L, "v4"),
			cmd("eval_ro", "return redis.pcall('set', KEYS[1], 'v5')", "1", L),
			cmd("EVAL_RO", "return redis.call('publish', KEYS[1], 'm')", "1", L),
			cmd("EVAL_RO", "return redis.call('get', KEYS[1])", "1", L),
			cmd("EVALSHA_RO", sha1hex("return 'kept'"), "0"),
			cmd("SCRIPT", "FLUSH", "NOW"),
			cmd("SCRIPT", "FLUSH", "ASYNC"),
			cmd("SCRIPT", "EXISTS", sha1hex("return 'kept'"), sha1hex(luaSetRO)),
			cmd("EVALSHA", sha1hex("return 'kept'"), "0"),
			cmd("EVALSHA_RO", sha1hex(luaSetRO), "1", L, "v6"),
			eval(luaSetRO, keys(L), "v7"),
			evalsha(luaSetRO, keys(L), "v8"),
			cmd("SCRIPT", "FLUSH", "sync"),
			cmd("SCRIPT", "FLUSH"),
			cmd("EVALSHA", sha1hex(luaSetRO), "1", L, "v9"),
		}},
		{name: "strings: STRLEN GETDEL APPEND INCRBYFLOAT GETEX", keys: keys(L, L2, "$P:s", "$P:f", "$P:a"), steps: []step{
			cmd("SET", "$P:s", "hello"), cmd("STRLEN", "$P:s"), cmd("STRLEN", "$P:none"), cmd("STRLEN"),
			cmd("APPEND", "$P:a", "ab"), cmd("APPEND", "$P:a", "cd"), cmd("APPEND", "$P:a", ""), cmd("GET", "$P:a"),
			cmd("GETDEL", "$P:a"), cmd("GETDEL", "$P:a"), cmd("HSET", "$P:h", "f", "v"), cmd("GETDEL", "$P:h"),
			cmd("APPEND", "$P:h", "x"), cmd("STRLEN", "$P:h"), cmd("GETEX", "$P:h"), cmd("DEL", "$P:h"),
			cmd("INCRBYFLOAT", "$P:f", "10.50"), cmd("INCRBYFLOAT", "$P:f", "0.1"), cmd("INCRBYFLOAT", "$P:f", "-5.0e3"),
			cmd("INCRBYFLOAT", "$P:f", "abc"), cmd("INCRBYFLOAT", "$P:f", "inf"), cmd("INCRBYFLOAT", "$P:f", "1e5000"),
			cmd("SET", "$P:f", "0.1"), cmd("INCRBYFLOAT", "$P:f", "0.2"), cmd("SET", "$P:f", "x"), cmd("INCRBYFLOAT", "$P:f", "1"),
			cmd("GETEX", "$P:s", "PX", "100000"), cmd("PTTL", "$P:s").approxMs(), cmd("GETEX", "$P:s", "PERSIST"),
			cmd("TTL", "$P:s"), cmd("GETEX", "$P:s", "EX", "0"), cmd("GETEX", "$P:s", "EX", "1", "PX", "1"),
			cmd("GETEX", "$P:s", "KEEPTTL"), cmd("GETEX", "$P:none", "EX", "abc"), cmd("GETEX", "$P:s", "EXAT", "1"),
			cmd("EXISTS", "$P:s"),
			// A lock key reads as a string holding the token.
			cmd("SET", L, "tok1", "NX", "PX", "10000"), cmd("STRLEN", L), cmd("GETEX", L),
			cmd("INCR", L), cmd("INCRBY", L, "2"), cmd("DECR", L), cmd("INCRBYFLOAT", L, "1"),
			cmd("GETEX", L, "PX", "20000"), cmd("PTTL", L).approxMs(),
			cmd("APPEND", L, "x").deviates("-WRONGTYPE Operation against a key holding the wrong kind of value", whyLockNoAppend),
			cmd("GETDEL", L).deviates(`"tok1"`, whyLockNoAppend), cmd("EXISTS", L),
			cmd("SET", L2, "12", "NX", "PX", "10000"),
			cmd("INCR", L2).deviates("-ERR value is not an integer or out of range", whyLockNoCounter),
			cmd("GETEX", L2, "PXAT", "1").deviates(`"12"`, whyLockNoCounter), cmd("EXISTS", L2),
		}},
		{name: "ROLE and CLIENT", steps: []step{
			cmd("ROLE"), cmd("ROLE", "x"),
			cmd("CLIENT", "NO-EVICT", "on"), cmd("CLIENT", "NO-EVICT", "OFF"), cmd("CLIENT", "NO-EVICT", "maybe"),
			cmd("CLIENT", "NO-EVICT"),
			cmd("CLIENT", "KILL", "ID", "999999999"), cmd("CLIENT", "KILL", "ID", "0"), cmd("CLIENT", "KILL", "ID", "x"),
			cmd("CLIENT", "KILL", "ID", "1", "SKIPME"), cmd("CLIENT", "KILL", "SKIPME", "maybe"),
			cmd("CLIENT", "KILL", "FOO", "bar"), cmd("CLIENT", "KILL", "TYPE", "x"), cmd("CLIENT", "KILL", "TYPE", "master"),
			cmd("CLIENT", "KILL", "USER", "nobody"), cmd("CLIENT", "KILL", "ADDR", "1.2.3.4:5", "SKIPME", "no"),
			cmd("CLIENT", "KILL", "LADDR", "1.2.3.4:5"), cmd("CLIENT", "KILL", "1.2.3.4:5"), cmd("CLIENT", "KILL"),
			cmd("CLIENT", "LIST", "TYPE", "x"), cmd("CLIENT", "LIST", "ID", "x"), cmd("CLIENT", "LIST", "foo"),
			cmd("CLIENT", "LIST", "ID", "999999999"), cmd("CLIENT", "LIST", "TYPE", "master"), cmd("CLIENT", "HELP", "x"),
			cmd("CLIENT", "NOPE"),
		}},
		// Client-side caching: the replies and errors of the tracking
		// commands (invalidation pushes: tracking_test.go).
		{name: "CLIENT TRACKING, CACHING, GETREDIR, TRACKINGINFO", steps: []step{
			cmd("CLIENT", "TRACKING"), cmd("CLIENT", "TRACKING", "maybe"), cmd("CLIENT", "TRACKING", "ON", "FOO"),
			cmd("CLIENT", "TRACKING", "ON", "PREFIX", "a"), cmd("CLIENT", "TRACKING", "ON", "REDIRECT", "x"),
			cmd("CLIENT", "TRACKING", "ON", "REDIRECT", "999999999"), cmd("CLIENT", "TRACKING", "ON", "REDIRECT"),
			cmd("CLIENT", "TRACKING", "ON", "BCAST", "OPTIN"), cmd("CLIENT", "TRACKING", "ON", "OPTIN", "OPTOUT"),
			cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "a", "PREFIX", "ab"),
			cmd("CLIENT", "TRACKING", "maybe", "BCAST", "PREFIX", "a"),
			cmd("CLIENT", "CACHING", "YES"), cmd("CLIENT", "CACHING"), cmd("CLIENT", "GETREDIR"),
			cmd("CLIENT", "GETREDIR", "x"), cmd("CLIENT", "TRACKINGINFO"), cmd("CLIENT", "TRACKINGINFO", "x"),
			cmd("CLIENT", "TRACKING", "ON", "OPTIN"), cmd("CLIENT", "CACHING", "maybe"), cmd("CLIENT", "CACHING", "NO"),
			cmd("CLIENT", "CACHING", "YES"), cmd("CLIENT", "TRACKINGINFO"),
			cmd("CLIENT", "TRACKING", "ON", "BCAST"), cmd("CLIENT", "TRACKING", "ON", "OPTOUT"),
			cmd("CLIENT", "GETREDIR"), cmd("CLIENT", "TRACKING", "off"), cmd("CLIENT", "TRACKINGINFO"),
			cmd("CLIENT", "TRACKING", "ON", "OPTOUT", "NOLOOP"), cmd("CLIENT", "CACHING", "YES"),
			cmd("CLIENT", "CACHING", "no"), cmd("CLIENT", "TRACKINGINFO"), cmd("CLIENT", "TRACKING", "OFF"),
			cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "$P:y:", "PREFIX", "$P:x:"),
			cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "$P:x:1"),
			cmd("CLIENT", "TRACKING", "ON", "BCAST", "PREFIX", "$P:z:", "PREFIX", "$P:x:"),
			cmd("CLIENT", "TRACKINGINFO"), cmd("CLIENT", "TRACKING", "ON"), cmd("CLIENT", "TRACKING", "ON", "BCAST", "NOLOOP"),
			cmd("CLIENT", "TRACKINGINFO"), cmd("CLIENT", "TRACKING", "OFF"), cmd("CLIENT", "TRACKINGINFO"),
			// RESET turns tracking off (and goes back to RESP2).
			cmd("CLIENT", "TRACKING", "ON", "OPTIN"), cmd("CLIENT", "CACHING", "YES"), cmd("RESET"),
			cmd("CLIENT", "TRACKINGINFO"),
		}},
	}
}

// luaSetRO writes: EVAL_RO and EVALSHA_RO of it fail.
const luaSetRO = "return redis.call('set', KEYS[1], ARGV[1])"
