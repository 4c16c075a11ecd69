package fsm

import (
	"bytes"
	"strconv"

	"github.com/locknode/locknode/fsm/reply"
)

// Hashes and sets. Whole-collection replies are sorted (determinism).

// typed looks key up for a command on kind: v is nil when absent; bad is
// true (reply WRONGTYPE) when the key holds another kind, a lock included.
func (t *redisTable) typed(c *applyCtx, key string, kind Kind) (v *Value, bad bool) {
	v = t.lookup(c, key)
	if v != nil && v.Kind() != kind {
		return nil, true
	}
	return v, false
}

// create stores a new empty value of kind at key, after the limits.
func (t *redisTable) create(c *applyCtx, key string, kind Kind) (*Value, reply.Reply, bool) {
	if r, ok := t.canCreate(key); !ok {
		return nil, r, false
	}
	v := newValue(kind)
	switch kind {
	case KindHash:
		v.Hash = map[string][]byte{}
	case KindSet:
		v.Set = map[string]struct{}{}
	case KindZSet:
		v.ZSet = map[string]float64{}
	}
	t.put(c, key, v)
	return v, reply.Reply{}, true
}

// emptied emits event (the removal's keyspace event), then deletes key
// when its collection became empty ("del"), as Redis does; otherwise it
// marks it changed.
func (t *redisTable) emptied(c *applyCtx, key string, v *Value, n int, event string) {
	c.notify(event, key)
	if n == 0 {
		t.del(c, key, ReasonForced)
		c.notify(NotifyDel, key)
		return
	}
	t.touch(c, key, v)
}

// removeMembers is HDEL, SREM and ZREM: it deletes the named members from
// the collection coll picks out of the kind-typed value at args[1], replies
// how many were present, and deletes the key when that emptied it.
func removeMembers[V any](t *redisTable, c *applyCtx, args [][]byte, kind Kind, event string, coll func(*Value) map[string]V) reply.Reply {
	key := string(args[1])
	v, bad := t.typed(c, key, kind)
	if bad {
		return wrongType
	}
	if v == nil {
		return reply.NewInt(0)
	}
	m := coll(v)
	var n int64
	for _, f := range args[2:] {
		if old, ok := m[string(f)]; ok {
			delete(m, string(f))
			t.grow(v, -memberBytes(kind, f, old))
			n++
		}
	}
	if n > 0 {
		t.emptied(c, key, v, len(m), event)
	}
	return reply.NewInt(n)
}

// memberBytes is what one member of a hash, set or sorted set costs
// (memory.go); val is a hash field's value.
func memberBytes[V any](kind Kind, member []byte, val V) int64 {
	switch kind {
	case KindHash:
		b, _ := any(val).([]byte)
		return memHashField + int64(len(member)+len(b))
	case KindSet:
		return memSetMember + int64(len(member))
	}
	return memZSetMember + int64(len(member))
}

// card is HLEN, SCARD, ZCARD and LLEN: size of the kind-typed value at
// key, 0 when absent.
func (t *redisTable) card(c *applyCtx, key []byte, kind Kind, size func(*Value) int) reply.Reply {
	v, bad := t.typed(c, string(key), kind)
	if bad {
		return wrongType
	}
	if v == nil {
		return reply.NewInt(0)
	}
	return reply.NewInt(int64(size(v)))
}

func cmdHget(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	v, bad := t.typed(c, string(args[1]), KindHash)
	if bad {
		return wrongType
	}
	if v != nil {
		if f, ok := v.Hash[string(args[2])]; ok {
			return reply.NewBulk(string(f))
		}
	}
	return reply.Null
}

func cmdHset(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	if len(args)%2 != 0 {
		return errArity("hset")
	}
	return t.hset(c, args, false)
}

func cmdHmset(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	if len(args)%2 != 0 {
		return errArity("hmset")
	}
	return t.hset(c, args, true)
}

func (t *redisTable) hset(c *applyCtx, args [][]byte, status bool) reply.Reply {
	key := string(args[1])
	v, bad := t.typed(c, key, KindHash)
	if bad {
		return wrongType
	}
	if t.overMemory() && hashGrows(v, args[2:]) {
		return oomReply
	}
	if v == nil {
		var r reply.Reply
		var ok bool
		if v, r, ok = t.create(c, key, KindHash); !ok {
			return r
		}
	}
	var added int64
	for i := 2; i < len(args); i += 2 {
		if t.hsetField(v, args[i], args[i+1]) {
			added++
		}
	}
	t.touch(c, key, v)
	c.notify(NotifyHset, key)
	if status {
		return reply.OK
	}
	return reply.NewInt(added)
}

// hashGrows reports whether setting the field/value pairs on the hash v
// (nil: absent) would grow the key space: a new field or a longer value.
func hashGrows(v *Value, pairs [][]byte) bool {
	if v == nil {
		return true
	}
	for i := 0; i+1 < len(pairs); i += 2 {
		if old, ok := v.Hash[string(pairs[i])]; !ok || len(pairs[i+1]) > len(old) {
			return true
		}
	}
	return false
}

// hsetField sets field f of the hash v to a copy of val, keeping the
// accounted size; it reports whether the field is new.
func (t *redisTable) hsetField(v *Value, f, val []byte) bool {
	old, exists := v.Hash[string(f)]
	if exists {
		t.grow(v, int64(len(val)-len(old)))
	} else {
		t.grow(v, memHashField+int64(len(f)+len(val)))
	}
	v.Hash[string(f)] = bytes.Clone(val)
	return !exists
}

func cmdHsetnx(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	key := string(args[1])
	v, bad := t.typed(c, key, KindHash)
	if bad {
		return wrongType
	}
	if v != nil {
		if _, ok := v.Hash[string(args[2])]; ok {
			return reply.NewInt(0)
		}
	}
	if t.overMemory() {
		return oomReply
	}
	if v == nil {
		var r reply.Reply
		var ok bool
		if v, r, ok = t.create(c, key, KindHash); !ok {
			return r
		}
	}
	t.hsetField(v, args[2], args[3])
	t.touch(c, key, v)
	c.notify(NotifyHset, key)
	return reply.NewInt(1)
}

func cmdHexists(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	v, bad := t.typed(c, string(args[1]), KindHash)
	if bad {
		return wrongType
	}
	if v != nil {
		if _, ok := v.Hash[string(args[2])]; ok {
			return reply.NewInt(1)
		}
	}
	return reply.NewInt(0)
}

func cmdHincrby(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	//lint:ignore SA6001 field is kept as a string: it is used as a map key twice below
	key, field := string(args[1]), string(args[2])
	incr, ok := parseInt(args[3])
	if !ok {
		return reply.NewError(errNotInt)
	}
	v, bad := t.typed(c, key, KindHash)
	if bad {
		return wrongType
	}
	var cur int64
	if v != nil {
		if f, ok := v.Hash[field]; ok {
			if cur, ok = parseInt(f); !ok {
				return reply.NewError(errHashNotInt)
			}
		}
	}
	if addOverflows(cur, incr) {
		return reply.NewError(errOverflow)
	}
	cur += incr
	val := []byte(strconv.FormatInt(cur, 10))
	if t.overMemory() && hashGrows(v, [][]byte{args[2], val}) {
		return oomReply
	}
	if v == nil {
		var r reply.Reply
		if v, r, ok = t.create(c, key, KindHash); !ok {
			return r
		}
	}
	t.hsetField(v, args[2], val)
	t.touch(c, key, v)
	c.notify(NotifyHincrby, key)
	return reply.NewInt(cur)
}

func cmdHdel(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	return removeMembers(t, c, args, KindHash, NotifyHdel, func(v *Value) map[string][]byte { return v.Hash })
}

func cmdHlen(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	return t.card(c, args[1], KindHash, func(v *Value) int { return len(v.Hash) })
}

// hashReply renders a hash's fields, values or both in field order.
func (t *redisTable) hashReply(c *applyCtx, key []byte, fields, vals bool) reply.Reply {
	v, bad := t.typed(c, string(key), KindHash)
	if bad {
		return wrongType
	}
	kind := reply.Array
	if fields && vals {
		kind = reply.Map
	}
	if v == nil {
		return reply.Reply{Kind: kind, Arr: []reply.Reply{}}
	}
	var out []reply.Reply
	for _, f := range sortedKeys(v.Hash) {
		if fields {
			out = append(out, reply.NewBulk(f))
		}
		if vals {
			out = append(out, reply.NewBulk(string(v.Hash[f])))
		}
	}
	if out == nil {
		out = []reply.Reply{}
	}
	return reply.Reply{Kind: kind, Arr: out}
}

func cmdHkeys(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	return t.hashReply(c, args[1], true, false)
}
func cmdHvals(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	return t.hashReply(c, args[1], false, true)
}
func cmdHgetall(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	return t.hashReply(c, args[1], true, true)
}

func cmdHmget(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	v, bad := t.typed(c, string(args[1]), KindHash)
	if bad {
		return wrongType
	}
	out := make([]reply.Reply, 0, len(args)-2)
	for _, f := range args[2:] {
		r := reply.Null
		if v != nil {
			if b, ok := v.Hash[string(f)]; ok {
				r = reply.NewBulk(string(b))
			}
		}
		out = append(out, r)
	}
	return reply.NewArray(out...)
}

func cmdSadd(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	key := string(args[1])
	v, bad := t.typed(c, key, KindSet)
	if bad {
		return wrongType
	}
	if t.overMemory() && (v == nil || !hasAll(v.Set, args[2:])) {
		return oomReply
	}
	if v == nil {
		var r reply.Reply
		var ok bool
		if v, r, ok = t.create(c, key, KindSet); !ok {
			return r
		}
	}
	var n int64
	for _, m := range args[2:] {
		if _, ok := v.Set[string(m)]; !ok {
			v.Set[string(m)] = struct{}{}
			t.grow(v, memberBytes[struct{}](KindSet, m, struct{}{}))
			n++
		}
	}
	if n > 0 {
		t.touch(c, key, v)
		c.notify(NotifySadd, key)
	}
	return reply.NewInt(n)
}

// hasAll reports whether every member is in m already (so adding them
// does not grow the key space).
func hasAll[V any](m map[string]V, members [][]byte) bool {
	for _, x := range members {
		if _, ok := m[string(x)]; !ok {
			return false
		}
	}
	return true
}

func cmdSrem(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	return removeMembers(t, c, args, KindSet, NotifySrem, func(v *Value) map[string]struct{} { return v.Set })
}

func cmdSismember(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	v, bad := t.typed(c, string(args[1]), KindSet)
	if bad {
		return wrongType
	}
	if v != nil {
		if _, ok := v.Set[string(args[2])]; ok {
			return reply.NewInt(1)
		}
	}
	return reply.NewInt(0)
}

func cmdScard(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	return t.card(c, args[1], KindSet, func(v *Value) int { return len(v.Set) })
}

func cmdSmembers(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	v, bad := t.typed(c, string(args[1]), KindSet)
	if bad {
		return wrongType
	}
	if v == nil {
		return reply.Reply{Kind: reply.Set, Arr: []reply.Reply{}}
	}
	r := bulkArray(sortedKeys(v.Set))
	r.Kind = reply.Set
	return r
}
