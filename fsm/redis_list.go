package fsm

import (
	"bytes"

	"github.com/locknode/locknode/fsm/reply"
)

// Lists (Value.List, head first).

func cmdLpush(t *redisTable, c *applyCtx, args [][]byte) reply.Reply { return t.push(c, args, true) }
func cmdRpush(t *redisTable, c *applyCtx, args [][]byte) reply.Reply { return t.push(c, args, false) }

func (t *redisTable) push(c *applyCtx, args [][]byte, head bool) reply.Reply {
	key := string(args[1])
	v, bad := t.typed(c, key, KindList)
	if bad {
		return wrongType
	}
	if t.overMemory() {
		return oomReply
	}
	if v == nil {
		var r reply.Reply
		var ok bool
		if v, r, ok = t.create(c, key, KindList); !ok {
			return r
		}
	}
	for _, e := range args[2:] {
		e = bytes.Clone(e)
		t.grow(v, memListItem+int64(len(e)))
		if head {
			v.List = append([][]byte{e}, v.List...)
		} else {
			v.List = append(v.List, e)
		}
	}
	t.touch(c, key, v)
	if head {
		c.notify(NotifyLpush, key)
	} else {
		c.notify(NotifyRpush, key)
	}
	return reply.NewInt(int64(len(v.List)))
}

func cmdLpop(t *redisTable, c *applyCtx, args [][]byte) reply.Reply { return t.pop(c, args, true) }
func cmdRpop(t *redisTable, c *applyCtx, args [][]byte) reply.Reply { return t.pop(c, args, false) }

// pop is Redis 7.0 popGenericCommand: LPOP key [count].
func (t *redisTable) pop(c *applyCtx, args [][]byte, head bool) reply.Reply {
	if len(args) > 3 {
		return errArity(lowerName(args[0]))
	}
	hasCount := len(args) == 3
	var count int64
	if hasCount {
		n, ok := parseInt(args[2])
		if !ok || n < 0 {
			return reply.NewError(errPositive)
		}
		count = n
	}
	key := string(args[1])
	v, bad := t.typed(c, key, KindList)
	if bad {
		return wrongType
	}
	if v == nil {
		if hasCount {
			return reply.Reply{Kind: reply.NilArray}
		}
		return reply.Null
	}
	if hasCount && count == 0 {
		return reply.NewArray()
	}
	take := func() string {
		var e []byte
		if head {
			e, v.List = v.List[0], v.List[1:]
		} else {
			e, v.List = v.List[len(v.List)-1], v.List[:len(v.List)-1]
		}
		t.grow(v, -memListItem-int64(len(e)))
		return string(e)
	}
	var r reply.Reply
	if !hasCount {
		r = reply.NewBulk(take())
	} else {
		var out []string
		for ; count > 0 && len(v.List) > 0; count-- {
			out = append(out, take())
		}
		r = bulkArray(out)
	}
	event := NotifyRpop
	if head {
		event = NotifyLpop
	}
	t.emptied(c, key, v, len(v.List), event)
	return r
}

func cmdLindex(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	i, ok := parseInt(args[2])
	if !ok {
		return reply.NewError(errNotInt)
	}
	v, bad := t.typed(c, string(args[1]), KindList)
	if bad {
		return wrongType
	}
	if v == nil {
		return reply.Null
	}
	n := int64(len(v.List))
	if i < 0 {
		i += n
	}
	if i < 0 || i >= n {
		return reply.Null
	}
	return reply.NewBulk(string(v.List[i]))
}

func cmdLrange(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	start, ok1 := parseInt(args[2])
	end, ok2 := parseInt(args[3])
	if !ok1 || !ok2 {
		return reply.NewError(errNotInt)
	}
	v, bad := t.typed(c, string(args[1]), KindList)
	if bad {
		return wrongType
	}
	if v == nil {
		return reply.NewArray()
	}
	start, end, ok := rangeIndices(start, end, int64(len(v.List)))
	if !ok {
		return reply.NewArray()
	}
	out := make([]string, 0, end-start+1)
	for _, e := range v.List[start : end+1] {
		out = append(out, string(e))
	}
	return bulkArray(out)
}

// rangeIndices applies Redis' LRANGE/ZRANGE index rules to start..end
// over n elements (negative counts from the end, clamped to the ends); ok
// is false when the range is empty.
func rangeIndices(start, end, n int64) (lo, hi int64, ok bool) {
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	start = max(start, 0)
	if start > end || start >= n {
		return 0, 0, false
	}
	if end >= n {
		end = n - 1
	}
	return start, end, true
}

// cmdLrem removes count occurrences: from the head when count > 0, from
// the tail when count < 0, all when 0.
func cmdLrem(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	count, ok := parseInt(args[2])
	if !ok {
		return reply.NewError(errNotInt)
	}
	key := string(args[1])
	v, bad := t.typed(c, key, KindList)
	if bad {
		return wrongType
	}
	if v == nil {
		return reply.NewInt(0)
	}
	elem := args[3]
	limit := count
	if limit < 0 {
		limit = -limit
	}
	keep := make([]bool, len(v.List))
	var removed int64
	visit := func(i int) {
		if bytes.Equal(v.List[i], elem) && (limit == 0 || removed < limit) {
			removed++
			return
		}
		keep[i] = true
	}
	if count >= 0 {
		for i := range v.List {
			visit(i)
		}
	} else {
		for i := len(v.List) - 1; i >= 0; i-- {
			visit(i)
		}
	}
	if removed == 0 {
		return reply.NewInt(0)
	}
	out := v.List[:0:0]
	for i, e := range v.List {
		if keep[i] {
			out = append(out, e)
		} else {
			t.grow(v, -memListItem-int64(len(e)))
		}
	}
	v.List = out
	t.emptied(c, key, v, len(v.List), NotifyLrem)
	return reply.NewInt(removed)
}

func cmdLlen(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	return t.card(c, args[1], KindList, func(v *Value) int { return len(v.List) })
}
