package luaengine

import (
	"math"

	lua "github.com/locknode/locknode/internal/lua"
)

// bitLib is LuaBitOp 1.0.2, the `bit` library Redis scripts use: 32-bit
// operations on numbers, results as signed 32-bit numbers.
func bitLib(L *lua.LState) *lua.LTable {
	bin := func(op func(a, b uint32) uint32) lua.LGFunction {
		return func(L *lua.LState) int {
			b := bitArg(L, 1)
			for i := L.GetTop(); i > 1; i-- {
				b = op(b, bitArg(L, i))
			}
			return bitRet(L, b)
		}
	}
	shift := func(op func(b uint32, n uint) uint32) lua.LGFunction {
		return func(L *lua.LState) int {
			b, n := bitArg(L, 1), bitArg(L, 2)&31
			return bitRet(L, op(b, uint(n)))
		}
	}
	fns := map[string]lua.LGFunction{
		"tobit":   func(L *lua.LState) int { return bitRet(L, bitArg(L, 1)) },
		"bnot":    func(L *lua.LState) int { return bitRet(L, ^bitArg(L, 1)) },
		"band":    bin(func(a, b uint32) uint32 { return a & b }),
		"bor":     bin(func(a, b uint32) uint32 { return a | b }),
		"bxor":    bin(func(a, b uint32) uint32 { return a ^ b }),
		"lshift":  shift(func(b uint32, n uint) uint32 { return b << n }),
		"rshift":  shift(func(b uint32, n uint) uint32 { return b >> n }),
		"arshift": shift(func(b uint32, n uint) uint32 { return uint32(int32(b) >> n) }),
		"rol":     shift(func(b uint32, n uint) uint32 { return b<<n | b>>(32-n) }),
		"ror":     shift(func(b uint32, n uint) uint32 { return b>>n | b<<(32-n) }),
		"bswap": func(L *lua.LState) int {
			b := bitArg(L, 1)
			return bitRet(L, b>>24|b>>8&0xff00|b&0xff00<<8|b<<24)
		},
		"tohex": func(L *lua.LState) int {
			b := bitArg(L, 1)
			n := int32(8)
			if L.GetTop() >= 2 {
				n = int32(bitArg(L, 2))
			}
			digits := "0123456789abcdef"
			if n < 0 {
				n, digits = -n, "0123456789ABCDEF"
			}
			if n > 8 {
				n = 8
			}
			buf := make([]byte, n)
			for i := n - 1; i >= 0; i-- {
				buf[i] = digits[b&15]
				b >>= 4
			}
			L.Push(lua.LString(buf))
			return 1
		},
	}
	tb := L.CreateTable(0, len(fns))
	for name, fn := range fns {
		tb.RawSetString(name, L.NewFunction(fn))
	}
	return tb // the caller copies it in sorted order
}

// bitArg is LuaBitOp's barg: the number (or numeric string) at i reduced
// to 32 bits the way the C code does it, by adding 2^52+2^51 and keeping
// the low word (rounds to nearest even, wraps modulo 2^32).
func bitArg(L *lua.LState, i int) uint32 {
	var n float64
	ok := false
	switch v := L.Get(i).(type) {
	case lua.LNumber:
		n, ok = float64(v), true
	case lua.LString:
		if f, err := parseLuaNumber(string(v)); err == nil {
			n, ok = f, true
		}
	}
	b := uint32(math.Float64bits(n + 6755399441055744.0))
	if b == 0 && !ok {
		L.TypeError(i, lua.LTNumber)
	}
	return b
}

func bitRet(L *lua.LState, b uint32) int {
	L.Push(lua.LNumber(int32(b)))
	return 1
}
