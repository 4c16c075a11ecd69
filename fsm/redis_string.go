package fsm

import (
	"bytes"
	"math"
	"strconv"
	"strings"

	"github.com/locknode/locknode/fsm/reply"
)

// Keys, strings and the lock-as-a-string view (see redis.go).

func cmdGet(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	v := t.lookup(c, string(args[1]))
	if v == nil {
		return reply.Null
	}
	s, has, ok := t.stringOf(v)
	if !ok {
		return wrongType
	}
	if !has {
		return reply.Null
	}
	return reply.NewBulk(s)
}

// setOpts are SET's parsed options.
type setOpts struct {
	nx, xx, get, keepTTL bool
	ex, px, exat, pxat   bool
	expire               []byte
	ifeq                 []byte // non-nil: IFEQ value (Redis 8.4)
}

// parseSet follows Redis 7.0 parseExtendedStringArgumentsOrReply: options
// in any order and case; a repeated option is accepted, conflicting ones
// are a syntax error.
func parseSet(args [][]byte) (o setOpts, ok bool) {
	for j := 3; j < len(args); j++ {
		opt := strings.ToLower(string(args[j]))
		hasNext := j+1 < len(args)
		anyExp := o.ex || o.px || o.exat || o.pxat
		switch {
		case opt == "nx" && !o.xx && o.ifeq == nil:
			o.nx = true
		case opt == "xx" && !o.nx && o.ifeq == nil:
			o.xx = true
		case opt == "get":
			o.get = true
		case opt == "keepttl" && !anyExp:
			o.keepTTL = true
		case opt == "ex" && !o.keepTTL && !o.px && !o.exat && !o.pxat && hasNext:
			o.ex, o.expire = true, args[j+1]
			j++
		case opt == "px" && !o.keepTTL && !o.ex && !o.exat && !o.pxat && hasNext:
			o.px, o.expire = true, args[j+1]
			j++
		case opt == "exat" && !o.keepTTL && !o.ex && !o.px && !o.pxat && hasNext:
			o.exat, o.expire = true, args[j+1]
			j++
		case opt == "pxat" && !o.keepTTL && !o.ex && !o.px && !o.exat && hasNext:
			o.pxat, o.expire = true, args[j+1]
			j++
		case opt == "ifeq" && !o.nx && !o.xx && hasNext:
			o.ifeq = args[j+1]
			j++
		default:
			return o, false
		}
	}
	return o, true
}

// expireAt converts an EX/PX/EXAT/PXAT argument to an absolute FSM ms
// time as Redis' getExpireMillisecondsOrReply does (positive only).
func expireAt(b []byte, seconds, relative bool, now int64, cmd string) (int64, reply.Reply, bool) {
	ms, ok := parseInt(b)
	if !ok {
		return 0, reply.NewError(errNotInt), false
	}
	if ms <= 0 || (seconds && ms > math.MaxInt64/1000) {
		return 0, badExpire(cmd), false
	}
	if seconds {
		ms *= 1000
	}
	if relative {
		if addOverflows(ms, now) {
			return 0, badExpire(cmd), false
		}
		ms += now
	}
	return ms, reply.Reply{}, true
}

// badExpire is the error reply to an expire time out of range, built only
// when it is one: every SET PX of a lock cycle passes here.
func badExpire(cmd string) reply.Reply {
	return reply.NewError("ERR invalid expire time in '" + cmd + "' command")
}

// leaseOverLimit is the error reply to a Redis command that asks for a
// lock lease of ttl ms over MaxTTL: refused, never shortened, so a Redis
// client is never told it holds a lock longer than it does.
func (t *redisTable) leaseOverLimit(ttl int64) reply.Reply {
	return reply.NewError("ERR locknode: ttl " + strconv.FormatInt(ttl, 10) + " ms is over the limit of " +
		strconv.FormatInt(t.cfg.MaxTTL, 10) + " ms")
}

func cmdSet(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	o, ok := parseSet(args)
	if !ok {
		return reply.NewError(errSyntax)
	}
	sc := setCall{setOpts: o, key: string(args[1]), val: args[2], hasExp: o.expire != nil}
	if sc.hasExp {
		var r reply.Reply
		if sc.at, r, ok = expireAt(o.expire, o.ex || o.exat, o.ex || o.px, c.now, "set"); !ok {
			return r
		}
	}
	sc.v = t.lookup(c, sc.key)
	// With GET the reply is the old value whatever happens next.
	sc.okReply, sc.abortReply = reply.OK, reply.Null
	if o.get {
		old := reply.Null
		if sc.v != nil {
			s, has, isStr := t.stringOf(sc.v)
			if !isStr {
				return wrongType
			}
			if has {
				old = reply.NewBulk(s)
			}
		}
		sc.okReply, sc.abortReply = old, old
	}
	if o.ifeq != nil {
		if r, done := t.setIfEq(c, &sc); done {
			return r
		}
	}
	if o.xx && sc.v == nil {
		return sc.abortReply
	}
	if o.nx {
		return t.setNX(c, &sc)
	}
	return t.setStore(c, &sc)
}

// setCall is one SET being applied: its options and arguments, the
// expiry asked (at, when hasExp), the value at the key (v, nil when none)
// and its two answers, for done and for not done (the old value with GET).
type setCall struct {
	setOpts
	key                 string
	val                 []byte
	hasExp              bool
	at                  int64
	v                   *Value
	okReply, abortReply reply.Reply
}

// setIfEq checks IFEQ: done with abortReply when the key does not hold
// that string, done after extending a lock's lease natively when the
// value is the lock's token; not done when the SET goes on.
func (t *redisTable) setIfEq(c *applyCtx, sc *setCall) (r reply.Reply, done bool) {
	if sc.v == nil {
		return sc.abortReply, true
	}
	s, has, isStr := t.stringOf(sc.v)
	if !isStr {
		return wrongType, true
	}
	if !has || s != string(sc.ifeq) {
		return sc.abortReply, true
	}
	// SET lock token IFEQ token PX ms is StackExchange.Redis'
	// LockExtend: extend the lease natively instead of turning the
	// lock into a string.
	if sc.v.Kind() == KindLock && bytes.Equal(sc.val, sc.ifeq) {
		switch {
		case sc.hasExp && sc.at-c.now > t.cfg.MaxTTL:
			return t.leaseOverLimit(sc.at - c.now), true
		case sc.hasExp && sc.at > c.now:
			c.notify(NotifySet, sc.key)
			t.locks.redisLockExpire(c, sc.key, sc.at)
			return sc.okReply, true
		case sc.keepTTL:
			return sc.okReply, true
		}
	}
	return reply.Reply{}, false
}

// setNX applies SET NX: on an absent key (or by the holder of a lock) it
// is a lock acquisition (DESIGN.md, "One key space").
func (t *redisTable) setNX(c *applyCtx, sc *setCall) reply.Reply {
	v := sc.v
	if v != nil && v.Kind() != KindLock {
		return sc.abortReply
	}
	var ttl int64
	if sc.hasExp {
		ttl = sc.at - c.now
		if ttl <= 0 {
			// Set and already expired: Redis replies OK and the key is gone.
			if v == nil {
				return sc.okReply
			}
			return sc.abortReply
		}
		if ttl > t.cfg.MaxTTL {
			return t.leaseOverLimit(ttl)
		}
	}
	if len(sc.val) > t.cfg.MaxOwnerBytes {
		return reply.NewError(errValTooLong)
	}
	if v == nil {
		if r, ok := t.canCreate(sc.key); !ok {
			return r
		}
		if t.overMemory() {
			return oomReply
		}
	}
	if t.locks.redisSetNX(c, sc.key, sc.val, ttl) {
		return sc.okReply
	}
	return sc.abortReply
}

// setStore applies a SET that stores its string: a new expiry, the one
// kept (KEEPTTL, a lock's lease included), or none.
func (t *redisTable) setStore(c *applyCtx, sc *setCall) reply.Reply {
	v := sc.v
	if r, ok := t.canCreate(sc.key); !ok {
		return r
	}
	var deadline int64
	switch {
	case sc.hasExp:
		deadline = sc.at
	case sc.keepTTL && v != nil && v.Kind() == KindLock:
		if p := t.redisLockPTTL(v.lock(), c.now); p > 0 {
			deadline = c.now + p
		}
	case sc.keepTTL && v != nil:
		deadline = v.deadline()
	}
	if t.overMemory() && (deadline == 0 || deadline > c.now) && t.stringGrows(sc.key, len(sc.val)) {
		return oomReply
	}
	t.storeString(c, sc.key, v, sc.val, deadline, sc.hasExp)
	return sc.okReply
}

// stringGrows reports whether storing a string of n bytes at key would
// grow the key space: a new key, or more than what is there now.
func (t *redisTable) stringGrows(key string, n int) bool {
	old := t.keys[key]
	return old == nil || memRedisValue+int64(len(key)+n) > valueBytes(key, old)
}

// storeString replaces whatever is at key (old, as looked up) with the
// string val. A lock there is force-released first, so its waiters see
// the key taken by a foreign value. It emits "set", then "expire" when
// expire is set (SET's EX/PX/EXAT/PXAT); a deadline already past deletes
// the key at once, which Redis 7 reports as the key set, given its expiry
// and expired.
func (t *redisTable) storeString(c *applyCtx, key string, old *Value, val []byte, deadline int64, expire bool) {
	if old != nil && old.Kind() == KindLock {
		t.del(c, key, ReasonForced)
	}
	if deadline != 0 && deadline <= c.now {
		t.del(c, key, ReasonExpired)
		if old == nil {
			c.notify(NotifyNew, key)
		}
		c.notify(NotifySet, key)
		if expire {
			c.notify(NotifyExpire, key)
		}
		c.notify(NotifyExpired, key)
		return
	}
	t.putValue(c, key, &Value{valueData: &valueData{kind: KindString, Str: bytes.Clone(val), expireAt: deadline}}, old == nil)
	c.notify(NotifySet, key)
	if expire {
		c.notify(NotifyExpire, key)
	}
}

func cmdDel(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	var n int64
	for _, k := range args[1:] {
		key := string(k)
		if t.lookup(c, key) != nil {
			t.del(c, key, ReasonForced)
			c.notify(NotifyDel, key)
			n++
		}
	}
	return reply.NewInt(n)
}

// cmdDelex is Redis 8.4's DELEX key [IFEQ v | IFNE v]. On a lock, IFEQ by
// the holder's token is a release by that owner (StackExchange.Redis'
// LockRelease), which leaves the Redlock tombstone.
func cmdDelex(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	key := string(args[1])
	var cond string
	var cmp []byte
	switch len(args) {
	case 2:
	case 4:
		cond = strings.ToLower(string(args[2]))
		if cond != "ifeq" && cond != "ifne" {
			return reply.NewError(errSyntax)
		}
		cmp = args[3]
	default:
		return reply.NewError(errSyntax)
	}
	v := t.lookup(c, key)
	if v == nil {
		return reply.NewInt(0)
	}
	if cond != "" {
		s, has, ok := t.stringOf(v)
		if !ok {
			return wrongType
		}
		eq := has && s == string(cmp)
		if eq != (cond == "ifeq") {
			return reply.NewInt(0)
		}
		if v.Kind() == KindLock && cond == "ifeq" {
			if t.locks.redisReleaseByToken(c, key, s) {
				return reply.NewInt(1)
			}
			return reply.NewInt(0)
		}
	}
	t.del(c, key, ReasonForced)
	c.notify(NotifyDel, key)
	return reply.NewInt(1)
}

func cmdExists(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	var n int64
	for _, k := range args[1:] {
		if t.lookup(c, string(k)) != nil {
			n++
		}
	}
	return reply.NewInt(n)
}

func cmdPexpire(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	return t.expireGeneric(c, args, c.now, false)
}
func cmdExpire(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	return t.expireGeneric(c, args, c.now, true)
}
func cmdPexpireat(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	return t.expireGeneric(c, args, 0, false)
}
func cmdExpireat(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	return t.expireGeneric(c, args, 0, true)
}

// expireGeneric is Redis 7.0 expireGenericCommand: options NX|XX|GT|LT,
// then the time (negative allowed: a time in the past deletes the key).
func (t *redisTable) expireGeneric(c *applyCtx, args [][]byte, base int64, seconds bool) reply.Reply {
	var nx, xx, gt, lt bool
	for _, a := range args[3:] {
		switch strings.ToLower(string(a)) {
		case "nx":
			nx = true
		case "xx":
			xx = true
		case "gt":
			gt = true
		case "lt":
			lt = true
		default:
			return reply.NewError("ERR Unsupported option " + string(a))
		}
	}
	if nx && (xx || gt || lt) {
		return reply.NewError("ERR NX and XX, GT or LT options at the same time are not compatible")
	}
	if gt && lt {
		return reply.NewError("ERR GT and LT options at the same time are not compatible")
	}
	name := strings.ToLower(string(args[0]))
	when, ok := parseInt(args[2])
	if !ok {
		return reply.NewError(errNotInt)
	}
	bad := reply.NewError("ERR invalid expire time in '" + name + "' command")
	if seconds {
		if when > math.MaxInt64/1000 || when < math.MinInt64/1000 {
			return bad
		}
		when *= 1000
	}
	if when > math.MaxInt64-base {
		return bad
	}
	when += base
	key := string(args[1])
	v := t.lookup(c, key)
	if v == nil {
		return reply.NewInt(0)
	}
	cur := int64(-1) // current absolute deadline, -1 = none
	if v.Kind() == KindLock {
		if p := t.redisLockPTTL(v.lock(), c.now); p >= 0 {
			cur = c.now + p
		}
	} else if v.deadline() != 0 {
		cur = v.deadline()
	}
	switch {
	case nx && cur != -1,
		xx && cur == -1,
		gt && (when <= cur || cur == -1),
		lt && cur != -1 && when >= cur:
		return reply.NewInt(0)
	}
	if when <= c.now {
		t.del(c, key, ReasonForced)
		c.notify(NotifyDel, key)
		return reply.NewInt(1)
	}
	if v.Kind() == KindLock {
		if when-c.now > t.cfg.MaxTTL {
			return t.leaseOverLimit(when - c.now)
		}
		t.locks.redisLockExpire(c, key, when)
		return reply.NewInt(1)
	}
	t.setDeadline(c, key, v, when)
	c.notify(NotifyExpire, key)
	return reply.NewInt(1)
}

// pttlOf is PTTL's answer for key at c.now: -2 absent, -1 no deadline.
func (t *redisTable) pttlOf(c *applyCtx, key string) int64 {
	v := t.lookup(c, key)
	switch {
	case v == nil:
		return -2
	case v.Kind() == KindLock:
		return t.redisLockPTTL(v.lock(), c.now)
	case v.deadline() == 0:
		return -1
	}
	return max(v.deadline()-c.now, 0)
}

func cmdPttl(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	return reply.NewInt(t.pttlOf(c, string(args[1])))
}

func cmdTTL(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	p := t.pttlOf(c, string(args[1]))
	if p < 0 {
		return reply.NewInt(p)
	}
	return reply.NewInt((p + 500) / 1000)
}

// cmdPersist: a lock's lease cannot be made endless, so PERSIST on a lock
// changes nothing and replies 0.
func cmdPersist(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	key := string(args[1])
	v := t.lookup(c, key)
	if v == nil || v.Kind() == KindLock || v.deadline() == 0 {
		return reply.NewInt(0)
	}
	t.setDeadline(c, key, v, 0)
	c.notify(NotifyPersist, key)
	return reply.NewInt(1)
}

func cmdType(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	v := t.lookup(c, string(args[1]))
	if v == nil {
		return reply.NewStatus("none")
	}
	return reply.NewStatus(kindName(v.Kind()))
}

func cmdGetrange(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	start, ok1 := parseInt(args[2])
	end, ok2 := parseInt(args[3])
	if !ok1 || !ok2 {
		return reply.NewError(errNotInt)
	}
	v := t.lookup(c, string(args[1]))
	if v == nil {
		return reply.NewBulk("")
	}
	s, _, ok := t.stringOf(v)
	if !ok {
		return wrongType
	}
	n := int64(len(s))
	if start < 0 && end < 0 && start > end {
		return reply.NewBulk("")
	}
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	start, end = max(start, 0), max(end, 0)
	if end >= n {
		end = n - 1
	}
	if start > end || n == 0 {
		return reply.NewBulk("")
	}
	return reply.NewBulk(s[start : end+1])
}

func cmdMget(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	out := make([]reply.Reply, 0, len(args)-1)
	for _, k := range args[1:] {
		r := reply.Null
		if v := t.lookup(c, string(k)); v != nil {
			if s, has, ok := t.stringOf(v); ok && has {
				r = reply.NewBulk(s)
			}
		}
		out = append(out, r)
	}
	return reply.NewArray(out...)
}

// canCreateAll checks the limits for storing values at every key of keys
// at once, so a multi-key write is refused before it changes anything.
func (t *redisTable) canCreateAll(keys []string) (reply.Reply, bool) {
	fresh := map[string]bool{}
	for _, k := range keys {
		if len(k) > t.cfg.MaxKeyBytes {
			return reply.NewError(errKeyTooLong), false
		}
		if _, ok := t.keys[k]; !ok {
			fresh[k] = true
		}
	}
	if len(fresh) > 0 && len(t.keys)+len(fresh) > t.cfg.MaxKeys {
		return reply.NewError(errKeysFull), false
	}
	return reply.Reply{}, true
}

func msetKeys(args [][]byte) []string {
	keys := make([]string, 0, len(args)/2)
	for i := 1; i < len(args); i += 2 {
		keys = append(keys, string(args[i]))
	}
	return keys
}

// msetGrows reports whether MSET's pairs would grow the key space: some
// key new or given a longer value.
func (t *redisTable) msetGrows(keys []string, args [][]byte) bool {
	for i, k := range keys {
		if t.stringGrows(k, len(args[2+2*i])) {
			return true
		}
	}
	return false
}

func cmdMset(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	if len(args)%2 != 1 {
		return errArity("mset")
	}
	keys := msetKeys(args)
	if r, ok := t.canCreateAll(keys); !ok {
		return r
	}
	if t.overMemory() && t.msetGrows(keys, args) {
		return oomReply
	}
	for i, k := range keys {
		t.storeString(c, k, t.lookup(c, k), args[2+2*i], 0, false)
	}
	return reply.OK
}

func cmdMsetnx(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	if len(args)%2 != 1 {
		return errArity("msetnx")
	}
	keys := msetKeys(args)
	for _, k := range keys {
		if t.lookup(c, k) != nil {
			return reply.NewInt(0)
		}
	}
	if r, ok := t.canCreateAll(keys); !ok {
		return r
	}
	if t.overMemory() {
		return oomReply // every key is new
	}
	for i, k := range keys {
		t.storeString(c, k, t.lookup(c, k), args[2+2*i], 0, false)
	}
	return reply.NewInt(1)
}

func cmdIncr(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	return t.incrBy(c, string(args[1]), 1)
}
func cmdDecr(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	return t.incrBy(c, string(args[1]), -1)
}
func cmdIncrby(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	n, ok := parseInt(args[2])
	if !ok {
		return reply.NewError(errNotInt)
	}
	return t.incrBy(c, string(args[1]), n)
}
func cmdDecrby(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	n, ok := parseInt(args[2])
	if !ok {
		return reply.NewError(errNotInt)
	}
	if n == math.MinInt64 {
		return reply.NewError("ERR decrement would overflow")
	}
	return t.incrBy(c, string(args[1]), -n)
}

// incrBy adds delta to the integer string at key; the key keeps its TTL.
// A lock reads as a string, its holder's token, and is not a counter:
// Redis' answer to a string that is not an integer, even for a token of
// digits.
func (t *redisTable) incrBy(c *applyCtx, key string, delta int64) reply.Reply {
	v := t.lookup(c, key)
	var cur int64
	if v != nil {
		if v.Kind() == KindLock {
			return reply.NewError(errNotInt)
		}
		if v.Kind() != KindString {
			return wrongType
		}
		var ok bool
		if cur, ok = parseInt(v.Str); !ok {
			return reply.NewError(errNotInt)
		}
	}
	if addOverflows(cur, delta) {
		return reply.NewError(errOverflow)
	}
	cur += delta
	s := []byte(strconv.FormatInt(cur, 10))
	if t.overMemory() && (v == nil || len(s) > len(v.Str)) {
		return oomReply
	}
	if v != nil {
		t.mem += int64(len(s) - len(v.Str))
		v.Str = s
		t.touch(c, key, v)
		c.notify(NotifyIncrby, key)
		return reply.NewInt(cur)
	}
	if r, ok := t.canCreate(key); !ok {
		return r
	}
	t.put(c, key, &Value{valueData: &valueData{kind: KindString, Str: s}})
	c.notify(NotifyIncrby, key)
	return reply.NewInt(cur)
}

// cmdTime answers from the command's time (the FSM clock), never a local
// clock: seconds and microseconds.
func cmdTime(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	sec := c.now / 1000
	usec := (c.now % 1000) * 1000
	return bulkArray([]string{strconv.FormatInt(sec, 10), strconv.FormatInt(usec, 10)})
}

func cmdPing(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	switch len(args) {
	case 1:
		return reply.NewStatus("PONG")
	case 2:
		return reply.NewBulk(string(args[1]))
	}
	return errArity("ping")
}

// cmdPublish emits the message as an event; each node delivers it to its
// own subscribers when it applies the entry, so the receiver count is not
// known here and the reply is always 0.
func cmdPublish(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	c.emit(Event{Kind: EvPublish, Channel: string(args[1]), Message: string(args[2])})
	return reply.NewInt(0)
}
