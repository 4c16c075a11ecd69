package fsm

import (
	"math/big"
	"strings"

	"github.com/locknode/locknode/fsm/reply"
)

// STRLEN, GETDEL, APPEND, INCRBYFLOAT and GETEX, as Redis 7.0 has them. On
// a lock key they keep the lock rules of redis.go: reads see the holder's
// token; GETDEL is a forced release, as DEL; GETEX EX/PX/EXAT/PXAT is an
// extend, as PEXPIRE (refused past MaxTTL), and GETEX PERSIST changes
// nothing, as PERSIST; APPEND is WRONGTYPE, as every other write; and the
// counters refuse a lock as Redis refuses a string that is not a number.

const (
	errValGrowsLong = "ERR locknode: value would be longer than MaxValueBytes"
	errIncrNaN      = "ERR increment would produce NaN or Infinity"
)

func cmdStrlen(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	v := t.lookup(c, string(args[1]))
	if v == nil {
		return reply.NewInt(0)
	}
	s, _, ok := t.stringOf(v)
	if !ok {
		return wrongType
	}
	return reply.NewInt(int64(len(s)))
}

func cmdGetdel(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	key := string(args[1])
	v := t.lookup(c, key)
	if v == nil {
		return reply.Null
	}
	s, has, ok := t.stringOf(v)
	if !ok {
		return wrongType
	}
	r := reply.Null
	if has {
		r = reply.NewBulk(s)
	}
	t.del(c, key, ReasonForced)
	c.notify(NotifyDel, key)
	return r
}

// cmdAppend keeps the key's TTL, as Redis does. The result is bounded by
// MaxValueBytes like any stored string: appending is how a string would
// otherwise outgrow it.
func cmdAppend(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	key, add := string(args[1]), args[2]
	v := t.lookup(c, key)
	if v == nil {
		if r, ok := t.canCreate(key); !ok {
			return r
		}
		if t.overMemory() {
			return oomReply
		}
		t.put(c, key, &Value{valueData: &valueData{kind: KindString, Str: append([]byte(nil), add...)}})
		c.notify(NotifyAppend, key)
		return reply.NewInt(int64(len(add)))
	}
	if v.Kind() != KindString {
		return wrongType
	}
	n := len(v.Str) + len(add)
	if n > t.cfg.MaxValueBytes {
		return reply.NewError(errValGrowsLong)
	}
	if len(add) > 0 && t.overMemory() {
		return oomReply
	}
	// A fresh slice: the old one may be shared with a reply or a snapshot.
	s := make([]byte, 0, n)
	s = append(append(s, v.Str...), add...)
	t.mem += int64(len(add))
	v.Str = s
	t.touch(c, key, v)
	c.notify(NotifyAppend, key)
	return reply.NewInt(int64(n))
}

// Redis computes INCRBYFLOAT in C long double: on the x86-64 and arm64
// servers clients meet, the x87 80-bit format with a 64-bit significand
// (arm64 has 113 bits; x86-64 is what the differential test runs on).
// big.Float with 64 bits of precision and round-half-even rounds every
// sum exactly as that hardware does, on any platform, which float64
// arithmetic would not (0.1+0.2 must read "0.3").
const (
	ldPrec   = 64
	ldMaxExp = 16384  // 2^16384 overflows long double
	ldMinExp = -16444 // below the smallest subnormal strtold gives 0 with ERANGE
	// ldMaxChars is Redis' MAX_LONG_DOUBLE_CHARS: longer input is refused.
	ldMaxChars = 5 * 1024
)

// parseLongDouble is Redis' string2ld: strtold over the whole string, no
// leading space, NaN and out-of-range refused, "inf" accepted. Hex input,
// which strtold also reads, is refused here (a documented difference).
func parseLongDouble(b []byte) (*big.Float, bool) {
	if len(b) == 0 || len(b) >= ldMaxChars {
		return nil, false
	}
	s := string(b)
	body := strings.TrimLeft(s, "+-")
	if len(s)-len(body) > 1 {
		return nil, false
	}
	switch strings.ToLower(body) {
	case "inf", "infinity":
		return new(big.Float).SetInf(s[0] == '-'), true
	}
	for i := 0; i < len(body); i++ {
		ch := body[i]
		if !(ch >= '0' && ch <= '9' || ch == '.' || ch == 'e' || ch == 'E' || ch == '+' || ch == '-') {
			return nil, false
		}
	}
	f, _, err := new(big.Float).SetPrec(ldPrec).SetMode(big.ToNearestEven).Parse(s, 10)
	if err != nil {
		return nil, false
	}
	switch {
	case f.IsInf():
		return nil, false // overflow: strtold's ERANGE with HUGE_VAL
	case f.Sign() == 0:
		// An underflow to zero is ERANGE too; a written zero is not.
		mant, _, _ := strings.Cut(strings.ToLower(body), "e")
		if strings.Trim(mant, "0.") != "" {
			return nil, false
		}
	default:
		if e := f.MantExp(nil); e > ldMaxExp || e < ldMinExp {
			return nil, false
		}
	}
	return f, true
}

// fmtLongDouble is Redis' ld2string in LD_STR_HUMAN mode: %.17Lf with the
// trailing zeros (and a bare point) cut, and "-0" written "0".
func fmtLongDouble(f *big.Float) string {
	s := f.Text('f', 17)
	if strings.IndexByte(s, '.') >= 0 {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

func cmdIncrbyfloat(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	key := string(args[1])
	v := t.lookup(c, key)
	cur := new(big.Float).SetPrec(ldPrec)
	if v != nil {
		switch v.Kind() {
		case KindString:
			var ok bool
			if cur, ok = parseLongDouble(v.Str); !ok {
				return reply.NewError(errNotFloat)
			}
		case KindLock:
			// A lock reads as its holder's token: not a number.
			return reply.NewError(errNotFloat)
		default:
			return wrongType
		}
	}
	incr, ok := parseLongDouble(args[2])
	if !ok {
		return reply.NewError(errNotFloat)
	}
	if cur.IsInf() || incr.IsInf() {
		return reply.NewError(errIncrNaN)
	}
	sum := new(big.Float).SetPrec(ldPrec).SetMode(big.ToNearestEven).Add(cur, incr)
	if sum.Sign() != 0 && sum.MantExp(nil) > ldMaxExp {
		return reply.NewError(errIncrNaN)
	}
	s := []byte(fmtLongDouble(sum))
	if len(s) > t.cfg.MaxValueBytes {
		return reply.NewError(errValGrowsLong)
	}
	if v == nil {
		if r, ok := t.canCreate(key); !ok {
			return r
		}
		if t.overMemory() {
			return oomReply
		}
		t.put(c, key, &Value{valueData: &valueData{kind: KindString, Str: s}})
		c.notify(NotifyIncrbyFloat, key)
		return reply.NewBulk(string(s))
	}
	if len(s) > len(v.Str) && t.overMemory() {
		return oomReply
	}
	t.mem += int64(len(s) - len(v.Str))
	v.Str = s
	t.touch(c, key, v)
	c.notify(NotifyIncrbyFloat, key)
	return reply.NewBulk(string(s))
}

// getexOpts are GETEX's parsed options: at most one of EX, PX, EXAT,
// PXAT and PERSIST (a repeat of the same one is accepted, as Redis does).
type getexOpts struct {
	ex, px, exat, pxat, persist bool
	expire                      []byte
}

func (o getexOpts) anyExp() bool { return o.ex || o.px || o.exat || o.pxat }

// parseGetex follows Redis 7.0 parseExtendedStringArgumentsOrReply for
// COMMAND_GET.
func parseGetex(args [][]byte) (o getexOpts, ok bool) {
	for j := 2; j < len(args); j++ {
		opt := strings.ToLower(string(args[j]))
		hasNext := j+1 < len(args)
		switch {
		case opt == "persist" && !o.anyExp():
			o.persist = true
		case opt == "ex" && !o.persist && !o.px && !o.exat && !o.pxat && hasNext:
			o.ex, o.expire = true, args[j+1]
			j++
		case opt == "px" && !o.persist && !o.ex && !o.exat && !o.pxat && hasNext:
			o.px, o.expire = true, args[j+1]
			j++
		case opt == "exat" && !o.persist && !o.ex && !o.px && !o.pxat && hasNext:
			o.exat, o.expire = true, args[j+1]
			j++
		case opt == "pxat" && !o.persist && !o.ex && !o.px && !o.exat && hasNext:
			o.pxat, o.expire = true, args[j+1]
			j++
		default:
			return o, false
		}
	}
	return o, true
}

// cmdGetex: Redis checks the options, then the key (absent: nil; another
// type: WRONGTYPE), then the time; the reply is the value before any
// change.
func cmdGetex(t *redisTable, c *applyCtx, args [][]byte) reply.Reply {
	o, ok := parseGetex(args)
	if !ok {
		return reply.NewError(errSyntax)
	}
	key := string(args[1])
	v := t.lookup(c, key)
	if v == nil {
		return reply.Null
	}
	s, has, isStr := t.stringOf(v)
	if !isStr {
		return wrongType
	}
	var at int64
	if o.anyExp() {
		var r reply.Reply
		if at, r, ok = expireAt(o.expire, o.ex || o.exat, o.ex || o.px, c.now, "getex"); !ok {
			return r
		}
	}
	out := reply.Null
	if has {
		out = reply.NewBulk(s)
	}
	switch {
	case o.anyExp() && at <= c.now:
		// Only EXAT/PXAT can name a time already past: the key goes.
		t.del(c, key, ReasonForced)
		c.notify(NotifyDel, key)
	case o.anyExp() && v.Kind() == KindLock:
		if at-c.now > t.cfg.MaxTTL {
			return t.leaseOverLimit(at - c.now)
		}
		t.locks.redisLockExpire(c, key, at)
	case o.anyExp():
		t.setDeadline(c, key, v, at)
		c.notify(NotifyExpire, key)
	case o.persist && v.Kind() != KindLock && v.deadline() != 0:
		// A lock's lease cannot be made endless: PERSIST leaves it.
		t.setDeadline(c, key, v, 0)
		c.notify(NotifyPersist, key)
	}
	return out
}

// getexChanges reports whether GETEX args would change the key's expiry
// (for the NoForce rule; PERSIST never changes a lock).
func getexChanges(args [][]byte) bool {
	o, ok := parseGetex(args)
	return ok && o.anyExp()
}
