package luaengine

import (
	"fmt"
	"math"
	"strconv"

	lua "github.com/locknode/locknode/internal/lua"
)

// cjsonLib is the `cjson` library of Redis 7 (lua-cjson as Redis ships
// it, 2.1.0, with its defaults: numbers as %.14g, NaN and Inf refused on
// encode and read on decode, excessively sparse arrays refused, 1000
// levels of nesting). Objects are encoded in the table's own order, which
// is insertion order here and the same on every node (Redis' is its hash
// order, so a multi-key object can list its keys differently). The
// configuration functions (encode_sparse_array, encode_max_depth,
// decode_max_depth, encode_number_precision, encode_keep_buffer,
// encode_invalid_numbers, decode_invalid_numbers) change the settings for
// the rest of the script only: in Redis they would outlive it, state
// that is not replicated. Every byte encoded or
// decoded is charged to the script's memory budget and its work to the
// step budget.
func (vm *luaVM) cjsonLib() *lua.LTable {
	return vm.cjsonTable(&vm.run.cjson)
}

// cjsonChunk: encode output is charged in chunks of this many bytes.
const cjsonChunk = 4096

// cjsonTable is a cjson module whose functions use the settings in c
// (cjson.new makes another with its own).
func (vm *luaVM) cjsonTable(c *cjsonConfig) *lua.LTable {
	L := vm.L
	tb := L.CreateTable(0, 16)
	set := func(name string, fn lua.LGFunction) { tb.RawSetString(name, L.NewFunction(fn)) }
	set("encode", func(L *lua.LState) int { return vm.cjsonEncode(L, c) })
	set("decode", func(L *lua.LState) int { return vm.cjsonDecode(L, c) })
	set("new", func(L *lua.LState) int {
		// A new instance with its own settings, from the defaults.
		L.ChargeMem(2048) // a table and its functions
		nc := new(cjsonConfig)
		*nc = cjsonDefaults
		L.Push(vm.cjsonTable(nc))
		return 1
	})
	set("encode_sparse_array", func(L *lua.LState) int {
		cjsonArgInit(L, 3)
		cjsonEnumOption(L, 1, &c.sparseConvert, nil)
		cjsonIntOption(L, 2, &c.sparseRatio, 0, math.MaxInt32)
		cjsonIntOption(L, 3, &c.sparseSafe, 0, math.MaxInt32)
		return 3
	})
	set("encode_max_depth", func(L *lua.LState) int {
		cjsonArgInit(L, 1)
		cjsonIntOption(L, 1, &c.maxDepth, 1, math.MaxInt32)
		return 1
	})
	set("decode_max_depth", func(L *lua.LState) int {
		cjsonArgInit(L, 1)
		cjsonIntOption(L, 1, &c.decodeMaxDepth, 1, math.MaxInt32)
		return 1
	})
	set("encode_number_precision", func(L *lua.LState) int {
		cjsonArgInit(L, 1)
		cjsonIntOption(L, 1, &c.precision, 1, 14)
		return 1
	})
	set("encode_keep_buffer", func(L *lua.LState) int {
		cjsonArgInit(L, 1)
		cjsonEnumOption(L, 1, &c.keepBuffer, nil)
		return 1
	})
	set("encode_invalid_numbers", func(L *lua.LState) int {
		cjsonArgInit(L, 1)
		cjsonEnumOption(L, 1, &c.encInvalid, []string{"off", "on", "null"})
		return 1
	})
	set("decode_invalid_numbers", func(L *lua.LState) int {
		cjsonArgInit(L, 1)
		cjsonEnumOption(L, 1, &c.decInvalid, nil)
		return 1
	})
	tb.RawSetString("null", vm.null)
	tb.RawSetString("_NAME", lua.LString("cjson"))
	tb.RawSetString("_VERSION", lua.LString("2.1.0"))
	return tb
}

// cjsonConfig is the cjson settings of one script run (reset by
// luaVM.begin to Redis' defaults).
type cjsonConfig struct {
	sparseConvert  int // 0 or 1
	sparseRatio    int
	sparseSafe     int
	maxDepth       int
	decodeMaxDepth int
	precision      int
	keepBuffer     int // accepted and reported; nothing to keep here
	encInvalid     int // 0 off (refuse), 1 on (inf, nan), 2 null
	decInvalid     int // 0 or 1: read hex, inf, nan, leading zeros, +
}

var cjsonDefaults = cjsonConfig{sparseRatio: 2, sparseSafe: 10, maxDepth: 1000, decodeMaxDepth: 1000,
	precision: 14, keepBuffer: 1, decInvalid: 1}

// cjsonArgInit is json_arg_init: at most n arguments, missing ones nil.
func cjsonArgInit(L *lua.LState, n int) {
	if L.GetTop() > n {
		L.ArgError(n+1, "found too many arguments")
	}
	for L.GetTop() < n {
		L.Push(lua.LNil)
	}
}

// cjsonIntOption is json_integer_option (its range error names argument
// 1 whichever it checks, as lua-cjson does).
func cjsonIntOption(L *lua.LState, i int, setting *int, lo, hi int) {
	if L.Get(i) != lua.LNil {
		v := L.CheckInt(i)
		if v < lo || v > hi {
			L.ArgError(1, fmt.Sprintf("expected integer between %d and %d", lo, hi))
		}
		*setting = v
	}
	L.Push(lua.LNumber(*setting))
}

// cjsonEnumOption is json_enum_option: options nil means "off"/"on" or a
// boolean, reported as a boolean; else one of options (true is the
// second), reported by name.
func cjsonEnumOption(L *lua.LState, i int, setting *int, options []string) {
	isBool := options == nil
	if isBool {
		options = []string{"off", "on"}
	}
	if v := L.Get(i); v != lua.LNil {
		if b, ok := v.(lua.LBool); ok {
			*setting = 0
			if b {
				*setting = 1
			}
		} else {
			name := luaCheckLString(L, i)
			found := -1
			for k, o := range options {
				if o == name {
					found = k
				}
			}
			if found < 0 {
				L.ArgError(i, "invalid option '"+name+"'")
			}
			*setting = found
		}
	}
	switch {
	case isBool:
		L.Push(lua.LBool(*setting != 0))
	case *setting == 0:
		L.Push(lua.LFalse) // Redis' lua-cjson reports the first option as false
	default:
		L.Push(lua.LString(options[*setting]))
	}
}

// cjsonEnc is one cjson.encode call.
type cjsonEnc struct {
	L       *lua.LState
	cfg     *cjsonConfig
	null    lua.LValue
	buf     []byte
	charged int
	depth   int
}

func (vm *luaVM) cjsonEncode(L *lua.LState, c *cjsonConfig) int {
	if L.GetTop() != 1 {
		L.ArgError(1, "expected 1 argument")
	}
	e := &cjsonEnc{L: L, null: vm.null, cfg: c}
	e.value(L.Get(1))
	e.charge()
	L.Push(lua.LString(e.buf))
	return 1
}

// charge charges the output built so far, in chunks, so a huge table
// hits the memory limit while it is being encoded.
func (e *cjsonEnc) charge() {
	if n := len(e.buf) - e.charged; n > 0 {
		e.L.ChargeMem(int64(n))
		e.charged = len(e.buf)
	}
}

func (e *cjsonEnc) fail(v lua.LValue, reason string) {
	e.L.RaiseError("Cannot serialise %s: %s", luaTypeName(v), reason)
}

func (e *cjsonEnc) value(v lua.LValue) {
	e.L.ChargeSteps(1)
	if len(e.buf)-e.charged >= cjsonChunk {
		e.charge()
	}
	switch v := v.(type) {
	case lua.LString:
		e.str(string(v))
	case lua.LNumber:
		e.num(v)
	case lua.LBool:
		if v {
			e.buf = append(e.buf, "true"...)
		} else {
			e.buf = append(e.buf, "false"...)
		}
	case *lua.LTable:
		if n := e.arrayLen(v); n > 0 {
			e.array(v, n)
		} else {
			e.object(v)
		}
	default:
		if v == lua.LNil || v == e.null {
			e.buf = append(e.buf, "null"...)
			return
		}
		e.fail(v, "type not supported")
	}
}

func (e *cjsonEnc) num(v lua.LNumber) {
	f := float64(v)
	if math.IsInf(f, 0) || math.IsNaN(f) {
		switch e.cfg.encInvalid {
		case 0:
			e.fail(v, "must not be NaN or Inf")
		case 2:
			e.buf = append(e.buf, "null"...)
		default:
			e.buf = append(e.buf, cNonFinite("", 'g', math.Abs(f))...)
			if f < 0 {
				e.buf = append(e.buf[:len(e.buf)-3], "-inf"...)
			}
		}
		return
	}
	e.buf = append(e.buf, fixExp(strconv.AppendFloat(nil, f, 'g', e.cfg.precision, 64))...)
}

// str appends s quoted with lua-cjson's escapes (which include "/" and
// DEL; bytes from 0x80 pass through).
func (e *cjsonEnc) str(s string) {
	e.L.ChargeMem(int64(len(s)))
	e.L.ChargeSteps(int64(len(s) / 64))
	e.buf = append(e.buf, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			e.buf = append(e.buf, '\\', '"')
		case '\\':
			e.buf = append(e.buf, '\\', '\\')
		case '/':
			e.buf = append(e.buf, '\\', '/')
		case '\b':
			e.buf = append(e.buf, '\\', 'b')
		case '\f':
			e.buf = append(e.buf, '\\', 'f')
		case '\n':
			e.buf = append(e.buf, '\\', 'n')
		case '\r':
			e.buf = append(e.buf, '\\', 'r')
		case '\t':
			e.buf = append(e.buf, '\\', 't')
		default:
			if c < 0x20 || c == 0x7f {
				e.buf = append(e.buf, '\\', 'u', '0', '0', hexLower[c>>4], hexLower[c&15])
			} else {
				e.buf = append(e.buf, c)
			}
		}
	}
	e.buf = append(e.buf, '"')
}

const hexLower = "0123456789abcdef"

// arrayLen is lua_array_length: the largest key when every key is an
// integer >= 1 (0 for an empty table), -1 for an object; an excessively
// sparse array is an error.
func (e *cjsonEnc) arrayLen(t *lua.LTable) int {
	max, items := 0.0, 0
	for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
		n, ok := k.(lua.LNumber)
		if !ok || n == 0 || math.Floor(float64(n)) != float64(n) || n < 1 {
			return -1
		}
		if float64(n) > max {
			max = float64(n)
		}
		items++
	}
	if c := e.cfg; c.sparseRatio > 0 && max > float64(items)*float64(c.sparseRatio) && max > float64(c.sparseSafe) {
		if c.sparseConvert == 0 {
			e.fail(t, "excessively sparse array")
		}
		return -1
	}
	if max > math.MaxInt32 {
		return -1
	}
	return int(max)
}

func (e *cjsonEnc) descend() {
	e.depth++
	if e.depth > e.cfg.maxDepth {
		e.L.RaiseError("Cannot serialise, excessive nesting (%d)", e.depth)
	}
}

func (e *cjsonEnc) array(t *lua.LTable, n int) {
	e.descend()
	e.buf = append(e.buf, '[')
	for i := 1; i <= n; i++ {
		if i > 1 {
			e.buf = append(e.buf, ',')
		}
		e.value(t.RawGetInt(i))
	}
	e.buf = append(e.buf, ']')
	e.depth--
}

func (e *cjsonEnc) object(t *lua.LTable) {
	e.descend()
	e.buf = append(e.buf, '{')
	first := true
	for k, v := t.Next(lua.LNil); k != lua.LNil; k, v = t.Next(k) {
		if !first {
			e.buf = append(e.buf, ',')
		}
		first = false
		switch k := k.(type) {
		case lua.LNumber:
			e.buf = append(e.buf, '"')
			e.num(k)
			e.buf = append(e.buf, '"', ':')
		case lua.LString:
			e.str(string(k))
			e.buf = append(e.buf, ':')
		default:
			e.fail(k, "table key must be a number or string")
		}
		e.value(v)
	}
	e.buf = append(e.buf, '}')
	e.depth--
}

// luaTypeName is lua_typename of v's type.
func luaTypeName(v lua.LValue) string {
	if _, ok := v.(*lua.LUserData); ok {
		return "userdata"
	}
	return v.Type().String()
}
