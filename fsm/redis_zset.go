package fsm

import (
	"math"
	"sort"
	"strings"

	"github.com/locknode/locknode/fsm/reply"
)

// Sorted sets. Value.ZSet is a plain map; ordered operations sort it
// (score, then member bytes), which is cheap at lock-script sizes.

type zEntry struct {
	member string
	score  float64
}

func zsorted(m map[string]float64) []zEntry {
	out := make([]zEntry, 0, len(m))
	for k, s := range m {
		out = append(out, zEntry{k, s})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].score != out[j].score {
			return out[i].score < out[j].score
		}
		return out[i].member < out[j].member
	})
	return out
}

func scoreReply(f float64) reply.Reply {
	return reply.Reply{Kind: reply.Double, Str: fmtScore(f)}
}

func cmdZadd(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	return t.zadd(c, args, 2, false)
}

func cmdZincrby(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	return t.zadd(c, args, 2, true)
}

// zadd is Redis 7.0 zaddGenericCommand: options, then score/member pairs;
// every score is parsed before anything changes.
func (t *redisTable) zadd(c *applyCtx, args [][]byte, idx int, incr bool) reply.Reply {
	o := zaddOpts{incr: incr}
	if !incr {
		idx = o.parse(args, idx)
	}
	n := len(args) - idx
	if n%2 != 0 || n == 0 {
		return reply.NewError(errSyntax)
	}
	n /= 2
	if r, ok := o.check(n); !ok {
		return r
	}
	scores := make([]float64, n)
	for j := range scores {
		f, ok := parseFloat(args[idx+2*j])
		if !ok {
			return reply.NewError(errNotFloat)
		}
		scores[j] = f
	}
	key := string(args[1])
	v, bad := t.typed(c, key, KindZSet)
	if bad {
		return wrongType
	}
	if t.overMemory() && !o.xx && (v == nil || !t.zsetHasAll(v, args, idx, n)) {
		return oomReply
	}
	var res zaddResult
	if v == nil && !o.xx {
		var r reply.Reply
		var ok bool
		if v, r, ok = t.create(c, key, KindZSet); !ok {
			return r
		}
	}
	if v != nil {
		var ok bool
		if res, ok = t.zaddPairs(c, key, v, args[idx:], scores, o); !ok {
			return reply.NewError(errNaN)
		}
	}
	if o.incr {
		if res.processed > 0 {
			return scoreReply(res.score)
		}
		return reply.Null
	}
	if o.ch {
		return reply.NewInt(res.added + res.updated)
	}
	return reply.NewInt(res.added)
}

// zaddOpts are ZADD's options.
type zaddOpts struct {
	nx, xx, ch, gt, lt, incr bool
}

// parse reads the options from args[idx] and returns the index of the
// first argument that is not one.
func (o *zaddOpts) parse(args [][]byte, idx int) int {
	for ; idx < len(args); idx++ {
		switch strings.ToLower(string(args[idx])) {
		case "nx":
			o.nx = true
		case "xx":
			o.xx = true
		case "ch":
			o.ch = true
		case "incr":
			o.incr = true
		case "gt":
			o.gt = true
		case "lt":
			o.lt = true
		default:
			return idx
		}
	}
	return idx
}

// check refuses options that do not go together, or INCR with more than
// one of the n pairs.
func (o zaddOpts) check(n int) (reply.Reply, bool) {
	switch {
	case o.nx && o.xx:
		return reply.NewError("ERR XX and NX options at the same time are not compatible"), false
	case (o.gt && o.nx) || (o.lt && o.nx) || (o.gt && o.lt):
		return reply.NewError("ERR GT, LT, and/or NX options at the same time are not compatible"), false
	case o.incr && n > 1:
		return reply.NewError("ERR INCR option supports a single increment-element pair"), false
	}
	return reply.Reply{}, true
}

// zaddResult counts what ZADD did; score is the last pair's score (with
// INCR, the new score).
type zaddResult struct {
	added, updated, processed int64
	score                     float64
}

// zaddPairs applies the score/member pairs (pairs[2j+1] is the member of
// scores[j]) to the sorted set v at key. ok is false when INCR made the
// score NaN (an infinity added to its opposite): the caller refuses it.
func (t *redisTable) zaddPairs(c *applyCtx, key string, v *Value, pairs [][]byte, scores []float64, o zaddOpts) (res zaddResult, ok bool) {
	for j := range scores {
		res.score = scores[j]
		m := string(pairs[2*j+1])
		cur, exists := v.ZSet[m]
		switch {
		case exists && o.nx:
			continue
		case exists:
			if o.incr {
				res.score += cur
				if math.IsNaN(res.score) {
					if len(v.ZSet) == 0 {
						t.del(c, key, ReasonForced)
					}
					return res, false
				}
			}
			if (o.lt && res.score >= cur) || (o.gt && res.score <= cur) {
				continue
			}
			if res.score != cur {
				v.ZSet[m] = res.score
				res.updated++
			}
			res.processed++
		case !o.xx:
			v.ZSet[m] = res.score
			t.grow(v, memZSetMember+int64(len(m)))
			res.added++
			res.processed++
		}
	}
	if res.added+res.updated > 0 {
		t.touch(c, key, v)
		if o.incr {
			c.notify(NotifyZincr, key)
		} else {
			c.notify(NotifyZadd, key)
		}
	}
	return res, true
}

// zsetHasAll reports whether every member of ZADD's n score/member pairs
// from args[idx] is in v already.
func (t *redisTable) zsetHasAll(v *Value, args [][]byte, idx, n int) bool {
	for j := 0; j < n; j++ {
		if _, ok := v.ZSet[string(args[idx+2*j+1])]; !ok {
			return false
		}
	}
	return true
}

func cmdZrem(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	return removeMembers(t, c, args, KindZSet, NotifyZrem, func(v *Value) map[string]float64 { return v.ZSet })
}

func cmdZcard(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	return t.card(c, args[1], KindZSet, func(v *Value) int { return len(v.ZSet) })
}

func cmdZscore(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	v, bad := t.typed(c, string(args[1]), KindZSet)
	if bad {
		return wrongType
	}
	if v != nil {
		if s, ok := v.ZSet[string(args[2])]; ok {
			return scoreReply(s)
		}
	}
	return reply.Null
}

func cmdZrank(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	v, bad := t.typed(c, string(args[1]), KindZSet)
	if bad {
		return wrongType
	}
	if v == nil {
		return reply.Null
	}
	m := string(args[2])
	if _, ok := v.ZSet[m]; !ok {
		return reply.Null
	}
	for i, e := range zsorted(v.ZSet) {
		if e.member == m {
			return reply.NewInt(int64(i))
		}
	}
	return reply.Null
}

// scoreRange is a parsed score interval (zslParseRange).
type scoreRange struct {
	min, max     float64
	minex, maxex bool
}

func parseScoreBound(b []byte) (float64, bool, bool) {
	ex := false
	if len(b) > 0 && b[0] == '(' {
		ex = true
		b = b[1:]
	}
	f, ok := parseFloat(b)
	return f, ex, ok
}

func parseScoreRange(lo, hi []byte) (scoreRange, bool) {
	var r scoreRange
	var ok1, ok2 bool
	r.min, r.minex, ok1 = parseScoreBound(lo)
	r.max, r.maxex, ok2 = parseScoreBound(hi)
	return r, ok1 && ok2
}

func (r scoreRange) gteMin(s float64) bool {
	if r.minex {
		return s > r.min
	}
	return s >= r.min
}

func (r scoreRange) lteMax(s float64) bool {
	if r.maxex {
		return s < r.max
	}
	return s <= r.max
}

func cmdZrange(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	return t.zrange(c, args, false)
}

func cmdZrangebyscore(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	return t.zrange(c, args, true)
}

// zrange is Redis 7.0 zrangeGenericCommand for ranks and scores (BYLEX is
// not supported: a syntax error).
func (t *redisTable) zrange(c *applyCtx, args [][]byte, byScore bool) reply.Reply {
	var withScores, rev, revSet bool
	offset, limit := int64(0), int64(-1)
	limitSet := false
	for j := 4; j < len(args); j++ {
		left := len(args) - j - 1
		switch opt := strings.ToLower(string(args[j])); {
		case opt == "withscores":
			withScores = true
		case opt == "limit" && left >= 2:
			o, ok1 := parseInt(args[j+1])
			l, ok2 := parseInt(args[j+2])
			if !ok1 || !ok2 {
				return reply.NewError(errNotInt)
			}
			offset, limit, limitSet = o, l, true
			j += 2
		case opt == "rev" && !revSet && !strings.EqualFold(string(args[0]), "zrangebyscore"):
			rev, revSet = true, true
		case opt == "byscore" && !byScore:
			byScore = true
		default:
			return reply.NewError(errSyntax)
		}
	}
	if limitSet && !byScore {
		return reply.NewError("ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
	}
	lo, hi := args[2], args[3]
	if rev && byScore {
		lo, hi = hi, lo
	}
	var start, end int64
	var sr scoreRange
	if byScore {
		var ok bool
		if sr, ok = parseScoreRange(lo, hi); !ok {
			return reply.NewError(errMinMax)
		}
	} else {
		var ok1, ok2 bool
		start, ok1 = parseInt(lo)
		end, ok2 = parseInt(hi)
		if !ok1 || !ok2 {
			return reply.NewError(errNotInt)
		}
	}
	v, bad := t.typed(c, string(args[1]), KindZSet)
	if bad {
		return wrongType
	}
	if v == nil {
		return reply.NewArray()
	}
	all := zsorted(v.ZSet)
	if rev {
		for i, j := 0, len(all)-1; i < j; i, j = i+1, j-1 {
			all[i], all[j] = all[j], all[i]
		}
	}
	var sel []zEntry
	if byScore {
		for _, e := range all {
			if sr.gteMin(e.score) && sr.lteMax(e.score) {
				sel = append(sel, e)
			}
		}
		// Redis skips offset elements (a negative offset skips them all)
		// and then returns limit of them (a negative limit: all).
		switch {
		case offset < 0 || offset >= int64(len(sel)):
			sel = nil
		default:
			sel = sel[offset:]
		}
		if limit >= 0 && limit < int64(len(sel)) {
			sel = sel[:limit]
		}
	} else {
		lo, hi, ok := rangeIndices(start, end, int64(len(all)))
		if !ok {
			return reply.NewArray()
		}
		sel = all[lo : hi+1]
	}
	out := make([]reply.Reply, 0, len(sel)*2)
	for _, e := range sel {
		out = append(out, reply.NewBulk(e.member))
		if withScores {
			out = append(out, scoreReply(e.score))
		}
	}
	if withScores {
		return reply.Reply{Kind: reply.Pairs, Arr: out}
	}
	return reply.NewArray(out...)
}

func cmdZremrangebyscore(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	sr, ok := parseScoreRange(args[2], args[3])
	if !ok {
		return reply.NewError(errMinMax)
	}
	key := string(args[1])
	v, bad := t.typed(c, key, KindZSet)
	if bad {
		return wrongType
	}
	if v == nil {
		return reply.NewInt(0)
	}
	var n int64
	for _, e := range zsorted(v.ZSet) {
		if sr.gteMin(e.score) && sr.lteMax(e.score) {
			delete(v.ZSet, e.member)
			t.grow(v, -memZSetMember-int64(len(e.member)))
			n++
		}
	}
	if n > 0 {
		t.emptied(c, key, v, len(v.ZSet), NotifyZremByScore)
	}
	return reply.NewInt(n)
}
