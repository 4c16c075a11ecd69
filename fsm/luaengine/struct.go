package luaengine

import (
	"encoding/binary"
	"math"
	"strings"

	lua "github.com/locknode/locknode/internal/lua"
)

// structLib is the `struct` library of Redis 7 (Roberto Ierusalimschy's
// struct, as Redis ships it): pack, unpack and size of binary records
// described by a format string, for an x86-64 machine (little-endian by
// default, long and size_t of 8 bytes, at most 8-byte alignment).
func structLib(L *lua.LState) *lua.LTable {
	tb := L.CreateTable(0, 3)
	tb.RawSetString("pack", L.NewFunction(structPack))
	tb.RawSetString("unpack", L.NewFunction(structUnpack))
	tb.RawSetString("size", L.NewFunction(structSize))
	return tb
}

const (
	structMaxIntSize = 32
	structMaxAlign   = 8
	structMaxResults = 8000 // Lua's C stack limit (LUAI_MAXCSTACK)
)

// structFmt walks a format string.
type structFmt struct {
	L     *lua.LState
	f     string
	i     int
	big   bool // endianness: false is little (x86-64's native order)
	align int
}

func newStructFmt(L *lua.LState, f string) *structFmt {
	return &structFmt{L: L, f: f, align: 1}
}

func (s *structFmt) more() bool { return s.i < len(s.f) }

func (s *structFmt) getnum(df int) int {
	if s.i >= len(s.f) || s.f[s.i] < '0' || s.f[s.i] > '9' {
		return df
	}
	a := 0
	for s.i < len(s.f) && s.f[s.i] >= '0' && s.f[s.i] <= '9' {
		d := int(s.f[s.i] - '0')
		if a > math.MaxInt32/10 || a*10 > math.MaxInt32-d {
			s.L.RaiseError("integral size overflow")
		}
		a = a*10 + d
		s.i++
	}
	return a
}

// optsize is the size of option opt (reading its digits).
func (s *structFmt) optsize(opt byte) int {
	switch opt {
	case 'B', 'b':
		return 1
	case 'H', 'h':
		return 2
	case 'L', 'l', 'T', 'd':
		return 8
	case 'f':
		return 4
	case 'x':
		return 1
	case 'c':
		return s.getnum(1)
	case 'i', 'I':
		sz := s.getnum(4)
		if sz > structMaxIntSize {
			s.L.RaiseError("integral size %d is larger than limit of %d", sz, structMaxIntSize)
		}
		return sz
	}
	return 0
}

func (s *structFmt) toalign(n, opt, size int) int {
	if size == 0 || opt == 'c' {
		return 0
	}
	if size > s.align {
		size = s.align
	}
	return (size - (n & (size - 1))) & (size - 1)
}

// control handles the options that are not data: spaces, endianness and
// alignment; anything else is an invalid option.
func (s *structFmt) control(opt byte) {
	switch opt {
	case ' ':
	case '>':
		s.big = true
	case '<':
		s.big = false
	case '!':
		a := s.getnum(structMaxAlign)
		if a <= 0 || a&(a-1) != 0 {
			s.L.RaiseError("alignment %d is not a power of 2", a)
		}
		s.align = a
	default:
		s.L.ArgError(1, "invalid format option '"+string(opt)+"'")
	}
}

func (s *structFmt) putInt(b []byte, n float64, size int) []byte {
	var v uint64
	if n < 0 {
		v = uint64(luaToInt(n))
	} else {
		v = luaToUint(n)
	}
	buf := make([]byte, size)
	for k := 0; k < size; k++ {
		idx := k
		if s.big {
			idx = size - 1 - k
		}
		buf[idx] = byte(v)
		v >>= 8
	}
	return append(b, buf...)
}

func (s *structFmt) getInt(data string, signed bool, size int) float64 {
	var l uint64
	for k := 0; k < size; k++ {
		idx := size - 1 - k
		if s.big {
			idx = k
		}
		l = l<<8 | uint64(data[idx])
	}
	if !signed {
		return float64(l)
	}
	if size*8-1 < 64 {
		mask := ^uint64(0) << (size*8 - 1)
		if l&mask != 0 {
			l |= mask
		}
	}
	return float64(int64(l))
}

func structPack(L *lua.LState) int {
	s := newStructFmt(L, L.CheckString(1))
	arg := 2
	// b_pack pushes a nil to mark the end of its arguments, which a
	// missing first argument then reads as ("got nil").
	L.Push(lua.LNil)
	var b []byte
	charged := 0
	for s.more() {
		L.ChargeSteps(1)
		opt := s.f[s.i]
		s.i++
		size := s.optsize(opt)
		for pad := s.toalign(len(b), int(opt), size); pad > 0; pad-- {
			b = append(b, 0)
		}
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			b = s.putInt(b, float64(L.CheckNumber(arg)), size)
			arg++
		case 'x':
			b = append(b, 0)
		case 'f':
			bits := math.Float32bits(float32(L.CheckNumber(arg)))
			arg++
			if s.big {
				b = binary.BigEndian.AppendUint32(b, bits)
			} else {
				b = binary.LittleEndian.AppendUint32(b, bits)
			}
		case 'd':
			bits := math.Float64bits(float64(L.CheckNumber(arg)))
			arg++
			if s.big {
				b = binary.BigEndian.AppendUint64(b, bits)
			} else {
				b = binary.LittleEndian.AppendUint64(b, bits)
			}
		case 'c', 's':
			str := luaCheckLString(L, arg)
			arg++
			if size == 0 {
				size = len(str)
			}
			if len(str) < size {
				L.ArgError(arg, "string too short")
			}
			L.ChargeMem(int64(size))
			charged += size
			b = append(b, str[:size]...)
			if opt == 's' {
				b = append(b, 0)
			}
		default:
			s.control(opt)
		}
		if len(b)-charged > cjsonChunk {
			L.ChargeMem(int64(len(b) - charged))
			charged = len(b)
		}
	}
	if len(b) > charged {
		L.ChargeMem(int64(len(b) - charged))
	}
	L.Push(lua.LString(b))
	return 1
}

// luaCheckLString is luaL_checklstring: a string, or a number as Lua
// prints it.
func luaCheckLString(L *lua.LState, n int) string {
	if s, ok := luaCheckString(L, n); ok {
		return s
	}
	L.TypeError(n, lua.LTString)
	return ""
}

func structUnpack(L *lua.LState) int {
	s := newStructFmt(L, L.CheckString(1))
	data := luaCheckLString(L, 2)
	pos := L.OptInt(3, 1)
	if pos <= 0 {
		L.ArgError(3, "offset must be 1 or greater")
	}
	pos--
	L.SetTop(2)
	n := 0
	push := func(v lua.LValue) {
		if n >= structMaxResults {
			L.RaiseError("stack overflow (too many results)")
		}
		L.Push(v)
		n++
	}
	for s.more() {
		L.ChargeSteps(1)
		opt := s.f[s.i]
		s.i++
		size := s.optsize(opt)
		pos += s.toalign(pos, int(opt), size)
		if size > len(data) || pos > len(data)-size {
			L.ArgError(2, "data string too short")
		}
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			push(lua.LNumber(s.getInt(data[pos:], opt >= 'a', size)))
		case 'x':
		case 'f':
			bits := binary.LittleEndian.Uint32([]byte(data[pos : pos+4]))
			if s.big {
				bits = binary.BigEndian.Uint32([]byte(data[pos : pos+4]))
			}
			push(lua.LNumber(math.Float32frombits(bits)))
		case 'd':
			bits := binary.LittleEndian.Uint64([]byte(data[pos : pos+8]))
			if s.big {
				bits = binary.BigEndian.Uint64([]byte(data[pos : pos+8]))
			}
			push(lua.LNumber(math.Float64frombits(bits)))
		case 'c':
			if size == 0 {
				prev, ok := L.Get(-1).(lua.LNumber)
				if n == 0 || !ok {
					L.RaiseError("format 'c0' needs a previous size")
				}
				size = int(luaToInt(float64(prev)))
				L.Pop(1)
				n--
				if size < 0 || size > len(data) || pos > len(data)-size {
					L.ArgError(2, "data string too short")
				}
			}
			L.ChargeMem(int64(size))
			push(lua.LString(data[pos : pos+size]))
		case 's':
			e := strings.IndexByte(data[pos:], 0)
			if e < 0 {
				L.RaiseError("unfinished string in data")
			}
			size = e + 1
			L.ChargeMem(int64(e))
			push(lua.LString(data[pos : pos+e]))
		default:
			s.control(opt)
		}
		pos += size
	}
	L.Push(lua.LNumber(pos + 1))
	return n + 1
}

func structSize(L *lua.LState) int {
	s := newStructFmt(L, L.CheckString(1))
	pos := 0
	for s.more() {
		L.ChargeSteps(1)
		opt := s.f[s.i]
		s.i++
		size := s.optsize(opt)
		pos += s.toalign(pos, int(opt), size)
		if opt == 's' {
			L.ArgError(1, "option 's' has no fixed size")
		} else if opt == 'c' && size == 0 {
			L.ArgError(1, "option 'c0' has no fixed size")
		}
		if !(opt >= '0' && opt <= '9' || opt >= 'a' && opt <= 'z' || opt >= 'A' && opt <= 'Z') {
			s.control(opt)
		}
		pos += size
	}
	L.Push(lua.LNumber(pos))
	return 1
}
