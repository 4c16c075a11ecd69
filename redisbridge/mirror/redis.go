package mirror

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/locknode/locknode/fsm"
)

// The Redis side of the mirror. Layout under KeyPrefix P, for a lock K:
//
//	P K              string: the holder's owner token (the first holder's
//	                 for shared and semaphore locks), PX = remaining lease
//	                 (the latest-ending holder's)
//	P {K}:meta       hash: owner, fence, mode, holders (count), owners
//	                 (JSON array, grant order), waiters (count), permits,
//	                 deadline_ms (cluster clock), index (table index the
//	                 state was read at), granted_ms (cluster clock of the
//	                 first holder's grant), meta (the first holder's
//	                 metadata, a JSON object); same PX as the string
//	P __locknode_mirror
//	                 hash: index (every change in entries <= index is in
//	                 Redis), gen (token of the last resync started)
//
// The braces make K and its meta share a Redis Cluster hash slot, but the
// mirror needs one Redis (or a Sentinel-managed master): a batch updates
// many keys in one script.

// mirrorStateKey is the mirror's bookkeeping hash, after KeyPrefix.
const mirrorStateKey = "__locknode_mirror"

// lockState is what the mirror writes for one lock key.
type lockState struct {
	key      string
	held     bool     // false: the key is deleted from Redis
	holders  []string // owner tokens, grant order
	mode     string
	fence    uint64
	waiters  int
	permits  int
	px       int64 // ms left on the latest-ending hold; > 0 when held
	deadline int64 // cluster ms at which that hold ends
	index    uint64
	granted  int64    // cluster ms of the first holder's grant
	meta     fsm.Meta // the first holder's metadata (shared: never changed)
}

// mirrorScript applies one batch atomically. Modes:
//
//	batch   stream step: skip if the stored index >= upto (replay), fail
//	        with gap if it is < base, else apply and set index = upto
//	verify  compare every key and rewrite only the ones that differ
//	resync  apply if the stored gen is still ours (no concurrent resync)
//	begin   start a resync: gen = ours, index removed
//	finish  end a resync: index = upto if gen is still ours
//
// Every op counts a conflict when Redis shows a write the mirror did not
// make: the string differs from the owner the mirror last put in the
// meta hash (or exists without it, or vanished while the meta is there),
// or either key has the wrong type. It checks types before reading so
// that no command can fail half-way: Redis does not roll back a script.
var mirrorScript = redis.NewScript(`
local st, mode, gen = KEYS[1], ARGV[1], ARGV[2]
local stt = redis.call('TYPE', st)['ok']
if mode == 'begin' then
  if stt ~= 'hash' and stt ~= 'none' then redis.call('DEL', st) end
  redis.call('HSET', st, 'gen', gen)
  redis.call('HDEL', st, 'index')
  return {'ok', '', 0}
end
local idx = false
if stt == 'hash' then idx = redis.call('HGET', st, 'index') end
if mode == 'resync' or mode == 'finish' then
  if stt ~= 'hash' or redis.call('HGET', st, 'gen') ~= gen then
    return {'superseded', idx or '', 0}
  end
  if mode == 'finish' then
    redis.call('HSET', st, 'index', ARGV[4])
    return {'ok', ARGV[4], 0}
  end
else
  if not idx then return {'missing', '', 0} end
  if mode == 'batch' then
    local s = tonumber(idx)
    if s >= tonumber(ARGV[4]) then return {'replay', idx, 0} end
    if s < tonumber(ARGV[3]) then return {'gap', idx, 0} end
  end
end
local conflicts = 0
local per = 13
for i = 1, (#KEYS - 1) / 2 do
  local k, mk = KEYS[2*i], KEYS[2*i+1]
  local a = 4 + (i-1)*per
  local op, val, px = ARGV[a+1], ARGV[a+2], ARGV[a+3]
  local kt, mt = redis.call('TYPE', k)['ok'], redis.call('TYPE', mk)['ok']
  local cur, prev, foreign = false, false, false
  if kt == 'string' then cur = redis.call('GET', k) elseif kt ~= 'none' then foreign = true end
  if mt == 'hash' then prev = redis.call('HGET', mk, 'owner') elseif mt ~= 'none' then foreign = true end
  if cur ~= prev then foreign = true end
  if foreign then conflicts = conflicts + 1 end
  local write = true
  if mode == 'verify' and not foreign then
    if op == 'D' then
      write = kt ~= 'none' or mt ~= 'none'
    elseif cur == val then
      local f = redis.call('HMGET', mk, 'fence', 'mode', 'owners', 'deadline_ms', 'granted_ms', 'meta')
      write = not (f[1] == ARGV[a+4] and f[2] == ARGV[a+5] and f[3] == ARGV[a+7] and f[4] == ARGV[a+10]
        and f[5] == ARGV[a+12] and f[6] == ARGV[a+13])
    end
  end
  if write then
    if kt ~= 'none' or mt ~= 'none' then redis.call('DEL', k, mk) end
    if op == 'S' then
      redis.call('SET', k, val, 'PX', px)
      redis.call('HSET', mk, 'owner', val, 'fence', ARGV[a+4], 'mode', ARGV[a+5],
        'holders', ARGV[a+6], 'owners', ARGV[a+7], 'waiters', ARGV[a+8],
        'permits', ARGV[a+9], 'deadline_ms', ARGV[a+10], 'index', ARGV[a+11],
        'granted_ms', ARGV[a+12], 'meta', ARGV[a+13])
      redis.call('PEXPIRE', mk, px)
    end
  end
end
if mode == 'batch' then
  redis.call('HSET', st, 'index', ARGV[4])
  return {'ok', ARGV[4], conflicts}
end
return {'ok', idx or '', conflicts}
`)

// scriptResult is the script's answer.
type scriptResult struct {
	status    string // ok, replay, gap, missing, superseded
	stored    uint64 // the stored index (ok: after the step); 0 if none
	hasStored bool
	conflicts int64
}

// mirrorRedis writes the mirror's layout into one Redis.
type mirrorRedis struct {
	c       *redis.Client
	prefix  string        // KeyPrefix
	filter  string        // lock-name prefix mirrored
	timeout time.Duration // per call
}

func (r *mirrorRedis) stateKey() string       { return r.prefix + mirrorStateKey }
func (r *mirrorRedis) strKey(k string) string { return r.prefix + k }
func (r *mirrorRedis) metaKey(k string) string {
	return r.prefix + "{" + k + "}:meta"
}

// mirrorable reports whether lock key k is mirrored: it passes the filter
// and its Redis name cannot collide with the mirror's own keys (a lock
// named like a meta key or the state key is left out).
func mirrorable(filter, k string) bool {
	if !strings.HasPrefix(k, filter) || k == mirrorStateKey {
		return false
	}
	return !(strings.HasPrefix(k, "{") && strings.HasSuffix(k, "}:meta"))
}

// run executes one script call with ops (nil for begin/finish).
func (r *mirrorRedis) run(ctx context.Context, mode, gen string, base, upto uint64, ops []lockState) (scriptResult, error) {
	keys := make([]string, 0, 1+2*len(ops))
	keys = append(keys, r.stateKey())
	args := make([]any, 0, 4+13*len(ops))
	args = append(args, mode, gen, strconv.FormatUint(base, 10), strconv.FormatUint(upto, 10))
	for _, s := range ops {
		keys = append(keys, r.strKey(s.key), r.metaKey(s.key))
		if !s.held || s.px <= 0 {
			args = append(args, "D", "", "0", "", "", "", "", "", "", "", "", "", "")
			continue
		}
		owners, err := json.Marshal(s.holders)
		if err != nil {
			return scriptResult{}, fmt.Errorf("mirror: encode owners: %w", err)
		}
		meta := []byte("{}")
		if len(s.meta) > 0 {
			// A map encodes with its names sorted: the same text for
			// the same metadata, so verify compares it as a string.
			if meta, err = json.Marshal(s.meta.Map()); err != nil {
				return scriptResult{}, fmt.Errorf("mirror: encode meta: %w", err)
			}
		}
		args = append(args, "S", s.holders[0], strconv.FormatInt(s.px, 10),
			strconv.FormatUint(s.fence, 10), s.mode, strconv.Itoa(len(s.holders)), string(owners),
			strconv.Itoa(s.waiters), strconv.Itoa(s.permits), strconv.FormatInt(s.deadline, 10),
			strconv.FormatUint(s.index, 10), strconv.FormatInt(s.granted, 10), string(meta))
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	v, err := mirrorScript.Run(ctx, r.c, keys, args...).Slice()
	if err != nil {
		return scriptResult{}, err
	}
	return parseScriptResult(v)
}

func parseScriptResult(v []any) (scriptResult, error) {
	if len(v) != 3 {
		return scriptResult{}, fmt.Errorf("mirror: script answered %d values", len(v))
	}
	var res scriptResult
	var ok bool
	if res.status, ok = v[0].(string); !ok {
		return scriptResult{}, fmt.Errorf("mirror: script status %T", v[0])
	}
	if s, _ := v[1].(string); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return scriptResult{}, fmt.Errorf("mirror: stored index %q: %w", s, err)
		}
		res.stored, res.hasStored = n, true
	}
	res.conflicts, _ = v[2].(int64)
	return res, nil
}

// readIndex returns the stored index; ok is false when there is none
// (fresh, flushed or restarted Redis, or a resync in progress).
func (r *mirrorRedis) readIndex(ctx context.Context) (idx uint64, ok bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	s, err := r.c.HGet(ctx, r.stateKey(), "index").Result()
	if err == redis.Nil {
		return 0, false, nil
	}
	if err != nil {
		// A foreign non-hash value at the state key reads as "no index"
		// so that a resync (whose begin step replaces it) repairs it.
		if strings.HasPrefix(err.Error(), "WRONGTYPE") {
			return 0, false, nil
		}
		return 0, false, err
	}
	n, perr := strconv.ParseUint(s, 10, 64)
	if perr != nil {
		return 0, false, nil
	}
	return n, true, nil
}

// runID returns the Redis server's run_id (it changes on every restart).
func (r *mirrorRedis) runID(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	info, err := r.c.Info(ctx, "server").Result()
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
			return v, nil
		}
	}
	return "", nil
}

// newGen returns a fresh resync token.
func newGen() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go >= 1.24)
	return hex.EncodeToString(b[:])
}

// globEscape quotes the glob metacharacters of s for SCAN MATCH.
func globEscape(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch c {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// stale lists the mirrored lock names present in Redis but not in keep.
// A name counts as mirrored when its meta hash exists; with a non-empty
// KeyPrefix every string under the prefix (and filter) is the mirror's
// too, so foreign keys written there are removed as well. With an empty
// prefix, keys without a meta hash are left alone: they may belong to
// other users of that Redis.
func (r *mirrorRedis) stale(ctx context.Context, keep map[string]struct{}) ([]string, error) {
	found := make(map[string]struct{})
	var out []string
	add := func(name string) {
		if _, ok := keep[name]; ok {
			return
		}
		if _, ok := found[name]; ok || !mirrorable(r.filter, name) {
			return
		}
		found[name] = struct{}{}
		out = append(out, name)
	}
	metaPat := globEscape(r.prefix) + "{" + globEscape(r.filter) + "*}:meta"
	if err := r.scan(ctx, metaPat, func(k string) {
		name := strings.TrimSuffix(strings.TrimPrefix(k, r.prefix+"{"), "}:meta")
		add(name)
	}); err != nil {
		return nil, err
	}
	if r.prefix != "" {
		if err := r.scan(ctx, globEscape(r.prefix)+globEscape(r.filter)+"*", func(k string) {
			add(strings.TrimPrefix(k, r.prefix))
		}); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (r *mirrorRedis) scan(ctx context.Context, match string, fn func(string)) error {
	var cursor uint64
	for {
		cctx, cancel := context.WithTimeout(ctx, r.timeout)
		keys, next, err := r.c.Scan(cctx, cursor, match, 1000).Result()
		cancel()
		if err != nil {
			return err
		}
		for _, k := range keys {
			fn(k)
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}
