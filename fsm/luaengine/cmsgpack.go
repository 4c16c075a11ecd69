package luaengine

import (
	"encoding/binary"
	"math"

	lua "github.com/locknode/locknode/internal/lua"
)

// cmsgpackLib is the `cmsgpack` library of Redis 7 (lua-cmsgpack 0.4.0):
// pack(...) encodes its arguments one after another; unpack, unpack_one
// and unpack_limit decode. Its encoding rules are its own (a number is an
// integer when it is one, else a float32 when that is exact, else a
// float64; a table is an array only when its keys are exactly 1..n;
// tables nested 16 deep become nil), so it is written here rather than
// taken from a general MessagePack library. A map is encoded in the
// table's own order (insertion order, the same on every node). Output and
// decoded strings are charged to the memory budget, the work to the
// step budget.
func cmsgpackLib(L *lua.LState) *lua.LTable {
	tb := L.CreateTable(0, 8)
	tb.RawSetString("pack", L.NewFunction(mpPack))
	tb.RawSetString("unpack", L.NewFunction(func(L *lua.LState) int { return mpUnpack(L, 0, 0) }))
	tb.RawSetString("unpack_one", L.NewFunction(func(L *lua.LState) int {
		offset := L.OptInt(2, 0)
		L.SetTop(1)
		return mpUnpack(L, 1, offset)
	}))
	tb.RawSetString("unpack_limit", L.NewFunction(func(L *lua.LState) int {
		limit := L.CheckInt(2)
		offset := L.OptInt(3, 0)
		L.SetTop(1)
		return mpUnpack(L, limit, offset)
	}))
	tb.RawSetString("_NAME", lua.LString("cmsgpack"))
	tb.RawSetString("_VERSION", lua.LString("lua-cmsgpack 0.4.0"))
	tb.RawSetString("_COPYRIGHT", lua.LString("Copyright (C) 2012, Salvatore Sanfilippo"))
	tb.RawSetString("_DESCRIPTION", lua.LString("MessagePack C implementation for Lua"))
	return tb
}

const mpMaxNesting = 16

type mpEnc struct {
	L       *lua.LState
	buf     []byte
	charged int
}

func mpPack(L *lua.LState) int {
	n := L.GetTop()
	if n == 0 {
		L.ArgError(0, "MessagePack pack needs input.")
	}
	e := &mpEnc{L: L}
	for i := 1; i <= n; i++ {
		e.value(L.Get(i), 0)
	}
	e.charge()
	L.Push(lua.LString(e.buf))
	return 1
}

func (e *mpEnc) charge() {
	if n := len(e.buf) - e.charged; n > 0 {
		e.L.ChargeMem(int64(n))
		e.charged = len(e.buf)
	}
}

func (e *mpEnc) value(v lua.LValue, level int) {
	e.L.ChargeSteps(1)
	if len(e.buf)-e.charged >= cjsonChunk {
		e.charge()
	}
	switch v := v.(type) {
	case lua.LString:
		e.L.ChargeMem(int64(len(v)))
		e.charged += len(v)
		e.bytes(string(v))
	case lua.LBool:
		if v {
			e.buf = append(e.buf, 0xc3)
		} else {
			e.buf = append(e.buf, 0xc2)
		}
	case lua.LNumber:
		e.number(float64(v))
	case *lua.LTable:
		if level == mpMaxNesting {
			e.buf = append(e.buf, 0xc0)
			return
		}
		if n, ok := mpArrayLen(v); ok {
			e.header(n, 0x90, 0xdc, 0xdd)
			for i := 1; i <= n; i++ {
				e.value(v.RawGetInt(i), level+1)
			}
			return
		}
		n := 0
		for k, _ := v.Next(lua.LNil); k != lua.LNil; k, _ = v.Next(k) {
			n++
		}
		e.header(n, 0x80, 0xde, 0xdf)
		for k, val := v.Next(lua.LNil); k != lua.LNil; k, val = v.Next(k) {
			e.value(k, level+1)
			e.value(val, level+1)
		}
	default:
		e.buf = append(e.buf, 0xc0)
	}
}

// mpArrayLen is table_is_an_array: every key an integer >= 1 and the
// largest equal to their count.
func mpArrayLen(t *lua.LTable) (int, bool) {
	count, max := 0, 0.0
	for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
		n, ok := k.(lua.LNumber)
		if !ok || n <= 0 || float64(n) != math.Trunc(float64(n)) || n > math.MaxInt32 {
			return 0, false
		}
		max = math.Max(max, float64(n))
		count++
	}
	return count, float64(count) == max
}

func (e *mpEnc) header(n int, fix, b16, b32 byte) {
	switch {
	case n <= 15:
		e.buf = append(e.buf, fix|byte(n))
	case n <= 0xffff:
		e.buf = binary.BigEndian.AppendUint16(append(e.buf, b16), uint16(n))
	default:
		e.buf = binary.BigEndian.AppendUint32(append(e.buf, b32), uint32(n))
	}
}

func (e *mpEnc) bytes(s string) {
	switch n := len(s); {
	case n < 32:
		e.buf = append(e.buf, 0xa0|byte(n))
	case n <= 0xff:
		e.buf = append(e.buf, 0xd9, byte(n))
	case n <= 0xffff:
		e.buf = binary.BigEndian.AppendUint16(append(e.buf, 0xda), uint16(n))
	default:
		e.buf = binary.BigEndian.AppendUint32(append(e.buf, 0xdb), uint32(n))
	}
	e.buf = append(e.buf, s...)
}

func (e *mpEnc) number(f float64) {
	// IS_INT64_EQUIVALENT: (int64_t)f == f, which on x86-64 fails for
	// values out of range (the cast gives INT64_MIN) and for NaN.
	if !math.IsInf(f, 0) && !math.IsNaN(f) && f >= -9.223372036854775808e18 && f < 9.223372036854775808e18 && float64(int64(f)) == f {
		e.int(int64(f))
		return
	}
	if f32 := float32(f); float64(f32) == f {
		e.buf = binary.BigEndian.AppendUint32(append(e.buf, 0xca), math.Float32bits(f32))
		return
	}
	e.buf = binary.BigEndian.AppendUint64(append(e.buf, 0xcb), math.Float64bits(f))
}

func (e *mpEnc) int(n int64) {
	b := e.buf
	switch {
	case n >= 0 && n <= 127:
		b = append(b, byte(n))
	case n >= 0 && n <= 0xff:
		b = append(b, 0xcc, byte(n))
	case n >= 0 && n <= 0xffff:
		b = binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(n))
	case n >= 0 && n <= 0xffffffff:
		b = binary.BigEndian.AppendUint32(append(b, 0xce), uint32(n))
	case n >= 0:
		b = binary.BigEndian.AppendUint64(append(b, 0xcf), uint64(n))
	case n >= -32:
		b = append(b, byte(n))
	case n >= -128:
		b = append(b, 0xd0, byte(n))
	case n >= -32768:
		b = binary.BigEndian.AppendUint16(append(b, 0xd1), uint16(n))
	case n >= -2147483648:
		b = binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(n))
	default:
		b = binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(n))
	}
	e.buf = b
}

// mpCur is the decoder's cursor; err is mpEOF or mpBadFmt once decoding
// failed.
type mpCur struct {
	L     *lua.LState
	s     string
	err   int
	depth int
}

// mpMaxDepth bounds the nesting unpack follows (Lua's C stack limit,
// where lua-cmsgpack's recursion ends in Redis).
const mpMaxDepth = 1000

const (
	mpEOF = 1 + iota
	mpBadFmt
)

// mpUnpack is mp_unpack_full: with limit and offset both 0 it decodes
// everything and returns the values; else at most limit values from
// offset, preceded by the offset to continue from (-1 at the end).
func mpUnpack(L *lua.LState, limit, offset int) int {
	s := L.CheckString(1)
	all := limit == 0 && offset == 0
	if offset < 0 || limit < 0 {
		L.RaiseError("Invalid request to unpack with offset of %d and limit of %d.", offset, len(s))
	}
	if offset > len(s) {
		L.RaiseError("Start offset %d greater than input length %d.", offset, len(s))
	}
	if all {
		limit = math.MaxInt
	}
	L.ChargeSteps(int64(len(s)-offset) / 64)
	c := &mpCur{L: L, s: s[offset:]}
	base := L.GetTop()
	cnt := 0
	for ; len(c.s) > 0 && cnt < limit; cnt++ {
		v := c.value()
		switch c.err {
		case mpEOF:
			L.RaiseError("Missing bytes in input.")
		case mpBadFmt:
			L.RaiseError("Bad data format in input.")
		}
		L.Push(v)
	}
	if all {
		return cnt
	}
	next := len(s) - len(c.s)
	if len(c.s) == 0 {
		next = -1
	}
	L.Insert(lua.LNumber(next), base+1)
	return cnt + 1
}

func (c *mpCur) need(n int) bool {
	if len(c.s) < n {
		c.err = mpEOF
		return false
	}
	return true
}

// str returns the n bytes after a hdr-byte header, consumed.
func (c *mpCur) str(hdr, n int) lua.LValue {
	if !c.need(hdr + n) {
		return lua.LNil
	}
	c.L.ChargeMem(int64(n))
	v := lua.LString(c.s[hdr : hdr+n])
	c.s = c.s[hdr+n:]
	return v
}

func (c *mpCur) num(n int, f float64) lua.LValue {
	c.s = c.s[n:]
	return lua.LNumber(f)
}

func (c *mpCur) value() lua.LValue {
	c.L.ChargeSteps(1)
	if !c.need(1) {
		return lua.LNil
	}
	switch b := c.s[0]; b {
	case 0xcc, 0xd0, 0xcd, 0xd1, 0xce, 0xd2, 0xcf, 0xd3, 0xca, 0xcb:
		return c.number(b)
	case 0xd9, 0xda, 0xdb, 0xdc, 0xdd, 0xde, 0xdf:
		return c.sized(b)
	case 0xc0:
		c.s = c.s[1:]
		return lua.LNil
	case 0xc3, 0xc2:
		c.s = c.s[1:]
		return lua.LBool(b == 0xc3)
	default:
		return c.fixed(b)
	}
}

// The big-endian integers after the format byte at c.s[0]; the caller
// has checked that they are there.
func (c *mpCur) be16() int    { return int(binary.BigEndian.Uint16([]byte(c.s[1:3]))) }
func (c *mpCur) be32() uint32 { return binary.BigEndian.Uint32([]byte(c.s[1:5])) }
func (c *mpCur) be64() uint64 { return binary.BigEndian.Uint64([]byte(c.s[1:9])) }

// number decodes the integer or float of format byte b.
func (c *mpCur) number(b byte) lua.LValue {
	s := c.s
	switch b {
	case 0xcc:
		if c.need(2) {
			return c.num(2, float64(s[1]))
		}
	case 0xd0:
		if c.need(2) {
			return c.num(2, float64(int8(s[1])))
		}
	case 0xcd:
		if c.need(3) {
			return c.num(3, float64(c.be16()))
		}
	case 0xd1:
		if c.need(3) {
			return c.num(3, float64(int16(c.be16())))
		}
	case 0xce:
		if c.need(5) {
			return c.num(5, float64(c.be32()))
		}
	case 0xd2:
		if c.need(5) {
			return c.num(5, float64(int32(c.be32())))
		}
	case 0xcf:
		if c.need(9) {
			return c.num(9, float64(c.be64()))
		}
	case 0xd3:
		if c.need(9) {
			return c.num(9, float64(int64(c.be64())))
		}
	case 0xca:
		if c.need(5) {
			return c.num(5, float64(math.Float32frombits(c.be32())))
		}
	case 0xcb:
		if c.need(9) {
			return c.num(9, math.Float64frombits(c.be64()))
		}
	}
	return lua.LNil
}

// sized decodes the string, array or map of format byte b, whose length
// follows it in 1, 2 or 4 bytes.
func (c *mpCur) sized(b byte) lua.LValue {
	s := c.s
	switch b {
	case 0xd9:
		if c.need(2) {
			return c.str(2, int(s[1]))
		}
	case 0xda:
		if c.need(3) {
			return c.str(3, c.be16())
		}
	case 0xdb:
		if c.need(5) {
			return c.str(5, int(c.be32()))
		}
	case 0xdc:
		if c.need(3) {
			n := c.be16()
			c.s = s[3:]
			return c.array(n)
		}
	case 0xdd:
		if c.need(5) {
			n := int(c.be32())
			c.s = s[5:]
			return c.array(n)
		}
	case 0xde:
		if c.need(3) {
			n := c.be16()
			c.s = s[3:]
			return c.hash(n)
		}
	case 0xdf:
		if c.need(5) {
			n := int(c.be32())
			c.s = s[5:]
			return c.hash(n)
		}
	}
	return lua.LNil
}

// fixed decodes a format byte b that carries its value or length: a
// small integer, a short string, array or map; else the format is bad.
func (c *mpCur) fixed(b byte) lua.LValue {
	switch {
	case b&0x80 == 0:
		return c.num(1, float64(b))
	case b&0xe0 == 0xe0:
		return c.num(1, float64(int8(b)))
	case b&0xe0 == 0xa0:
		return c.str(1, int(b&0x1f))
	case b&0xf0 == 0x90:
		c.s = c.s[1:]
		return c.array(int(b & 0xf))
	case b&0xf0 == 0x80:
		c.s = c.s[1:]
		return c.hash(int(b & 0xf))
	}
	c.err = mpBadFmt
	return lua.LNil
}

func (c *mpCur) descend() {
	if c.depth++; c.depth > mpMaxDepth {
		c.L.RaiseError("stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)")
	}
}

func (c *mpCur) array(n int) lua.LValue {
	c.descend()
	defer func() { c.depth-- }()
	t := c.L.NewTable()
	for i := 1; i <= n; i++ {
		v := c.value()
		if c.err != 0 {
			return t
		}
		if v != lua.LNil {
			t.RawSetInt(i, v)
		}
	}
	return t
}

func (c *mpCur) hash(n int) lua.LValue {
	c.descend()
	defer func() { c.depth-- }()
	t := c.L.NewTable()
	for ; n > 0; n-- {
		k := c.value()
		if c.err != 0 {
			return t
		}
		v := c.value()
		if c.err != 0 {
			return t
		}
		switch kk := k.(type) {
		case *lua.LNilType:
			c.L.Error(lua.LString("table index is nil"), 0)
		case lua.LNumber:
			if kk != kk {
				c.L.Error(lua.LString("table index is NaN"), 0)
			}
		}
		if v != lua.LNil {
			t.RawSet(k, v)
		}
	}
	return t
}
