package fsm

import (
	"fmt"
	"math"
	"strconv"
	"strings"

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

// JSON decoding: lua-cjson's tokenizer and recursive parser, with its
// error texts ("Expected <what> but found <token> at character <n>").

type cjsonTok uint8

const (
	tObjBegin cjsonTok = iota
	tObjEnd
	tArrBegin
	tArrEnd
	tString
	tNumber
	tBoolean
	tNull
	tColon
	tComma
	tEnd
	tWhitespace
	tError
	tUnknown
)

var cjsonTokName = [...]string{"T_OBJ_BEGIN", "T_OBJ_END", "T_ARR_BEGIN", "T_ARR_END", "T_STRING",
	"T_NUMBER", "T_BOOLEAN", "T_NULL", "T_COLON", "T_COMMA", "T_END", "T_WHITESPACE", "T_ERROR", "T_UNKNOWN"}

type cjsonToken struct {
	typ   cjsonTok
	index int
	str   string
	num   float64
	b     bool
	err   string // for tError
}

type cjsonDec struct {
	L        *lua.LState
	refuse   bool // decode_invalid_numbers off
	maxDepth int
	null     lua.LValue
	data     string // input up to its first NUL, which ends it (C string)
	i        int
	depth    int
}

func (vm *luaVM) cjsonDecode(L *lua.LState, c *cjsonConfig) int {
	if L.GetTop() != 1 {
		L.ArgError(1, "expected 1 argument")
	}
	s := L.CheckString(1)
	if len(s) >= 2 && (s[0] == 0 || s[1] == 0) {
		L.RaiseError("JSON parser does not support UTF-16 or UTF-32")
	}
	if i := strings.IndexByte(s, 0); i >= 0 {
		s = s[:i]
	}
	L.ChargeSteps(int64(len(s) / 16))
	d := &cjsonDec{L: L, null: vm.null, data: s, refuse: c.decInvalid == 0, maxDepth: c.decodeMaxDepth}
	var tok cjsonToken
	d.next(&tok)
	v := d.value(&tok)
	d.next(&tok)
	if tok.typ != tEnd {
		d.fail("the end", &tok)
	}
	L.Push(v)
	return 1
}

func (d *cjsonDec) at(i int) byte {
	if i < len(d.data) {
		return d.data[i]
	}
	return 0
}

func (d *cjsonDec) fail(exp string, tok *cjsonToken) {
	found := cjsonTokName[tok.typ]
	if tok.typ == tError {
		found = tok.err
	}
	d.L.RaiseError("Expected %s but found %s at character %d", exp, found, tok.index+1)
}

func (d *cjsonDec) tokErr(tok *cjsonToken, msg string) {
	tok.typ, tok.index, tok.err = tError, d.i, msg
}

func cjsonCharTok(c byte) cjsonTok {
	switch c {
	case '{':
		return tObjBegin
	case '}':
		return tObjEnd
	case '[':
		return tArrBegin
	case ']':
		return tArrEnd
	case ',':
		return tComma
	case ':':
		return tColon
	case 0:
		return tEnd
	case ' ', '\t', '\n', '\r':
		return tWhitespace
	case 'f', 'i', 'I', 'n', 'N', 't', '"', '+', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return tUnknown
	}
	return tError
}

func (d *cjsonDec) next(tok *cjsonToken) {
	d.L.ChargeSteps(1)
	tok.typ = cjsonCharTok(d.at(d.i))
	for tok.typ == tWhitespace {
		d.i++
		tok.typ = cjsonCharTok(d.at(d.i))
	}
	tok.index = d.i
	switch tok.typ {
	case tError:
		d.tokErr(tok, "invalid token")
		return
	case tEnd:
		return
	case tUnknown:
	default:
		d.i++
		return
	}
	rest := d.data[d.i:]
	switch c := d.at(d.i); {
	case c == '"':
		d.stringTok(tok)
	case c == '-' || c >= '0' && c <= '9':
		if d.refuse && cjsonInvalidNumber(rest) {
			d.tokErr(tok, "invalid number")
			return
		}
		d.numberTok(tok)
	case strings.HasPrefix(rest, "true"):
		tok.typ, tok.b = tBoolean, true
		d.i += 4
	case strings.HasPrefix(rest, "false"):
		tok.typ, tok.b = tBoolean, false
		d.i += 5
	case strings.HasPrefix(rest, "null"):
		tok.typ = tNull
		d.i += 4
	case !d.refuse && cjsonInvalidNumber(rest):
		d.numberTok(tok)
	default:
		d.tokErr(tok, "invalid token")
	}
}

// cjsonInvalidNumber is json_is_invalid_number: text strtod reads but
// JSON does not allow (a leading +, hex, leading zeros, inf, nan).
func cjsonInvalidNumber(s string) bool {
	i := 0
	at := func(i int) byte {
		if i < len(s) {
			return s[i]
		}
		return 0
	}
	if at(0) == '+' {
		return true
	}
	if at(0) == '-' {
		i++
	}
	if at(i) == '0' {
		c := at(i + 1)
		return c|0x20 == 'x' || c >= '0' && c <= '9'
	}
	if at(i) <= '9' {
		return false
	}
	r := strings.ToLower(s[i:min(len(s), i+3)])
	return r == "inf" || r == "nan"
}

func (d *cjsonDec) numberTok(tok *cjsonToken) {
	f, n := cStrtod(d.data[d.i:])
	if n == 0 {
		d.tokErr(tok, "invalid number")
		return
	}
	tok.typ, tok.num = tNumber, f
	d.i += n
}

func (d *cjsonDec) stringTok(tok *cjsonToken) {
	d.i++ // the opening quote
	var b []byte
	for {
		c := d.at(d.i)
		if c == '"' {
			break
		}
		if c == 0 {
			d.tokErr(tok, "unexpected end of string")
			return
		}
		if c == '\\' {
			switch e := d.at(d.i + 1); e {
			case '"', '\\', '/':
				c = e
			case 'b':
				c = '\b'
			case 't':
				c = '\t'
			case 'n':
				c = '\n'
			case 'f':
				c = '\f'
			case 'r':
				c = '\r'
			case 'u':
				var ok bool
				if b, ok = d.unicodeEscape(b); !ok {
					d.tokErr(tok, "invalid unicode escape code")
					return
				}
				continue
			default:
				d.tokErr(tok, "invalid escape code")
				return
			}
			d.i++
		}
		b = append(b, c)
		d.i++
	}
	d.i++
	d.L.ChargeMem(int64(len(b)))
	tok.typ, tok.str = tString, string(b)
}

func (d *cjsonDec) hex4(i int) int {
	v := 0
	for k := 0; k < 4; k++ {
		c := d.at(i + k)
		var x int
		switch {
		case c >= '0' && c <= '9':
			x = int(c - '0')
		case c|0x20 >= 'a' && c|0x20 <= 'f':
			x = int(c|0x20-'a') + 10
		default:
			return -1
		}
		v = v<<4 | x
	}
	return v
}

// unicodeEscape is json_append_unicode_escape: \uXXXX (a surrogate pair
// as two escapes) appended as UTF-8.
func (d *cjsonDec) unicodeEscape(b []byte) ([]byte, bool) {
	cp := d.hex4(d.i + 2)
	if cp < 0 {
		return b, false
	}
	n := 6
	if cp&0xF800 == 0xD800 {
		if cp&0x400 != 0 || d.at(d.i+6) != '\\' || d.at(d.i+7) != 'u' {
			return b, false
		}
		lo := d.hex4(d.i + 8)
		if lo < 0 || lo&0xFC00 != 0xDC00 {
			return b, false
		}
		cp = ((cp&0x3FF)<<10 | lo&0x3FF) + 0x10000
		n = 12
	}
	switch {
	case cp <= 0x7F:
		b = append(b, byte(cp))
	case cp <= 0x7FF:
		b = append(b, byte(cp>>6|0xC0), byte(cp&0x3F|0x80))
	case cp <= 0xFFFF:
		b = append(b, byte(cp>>12|0xE0), byte(cp>>6&0x3F|0x80), byte(cp&0x3F|0x80))
	default:
		b = append(b, byte(cp>>18|0xF0), byte(cp>>12&0x3F|0x80), byte(cp>>6&0x3F|0x80), byte(cp&0x3F|0x80))
	}
	d.i += n
	return b, true
}

func (d *cjsonDec) value(tok *cjsonToken) lua.LValue {
	switch tok.typ {
	case tString:
		return lua.LString(tok.str)
	case tNumber:
		return lua.LNumber(tok.num)
	case tBoolean:
		return lua.LBool(tok.b)
	case tObjBegin:
		return d.object()
	case tArrBegin:
		return d.array()
	case tNull:
		return d.null
	}
	d.fail("value", tok)
	return nil
}

// descend is json_decode_descend: at most decode_max_depth levels.
func (d *cjsonDec) descend() {
	d.depth++
	if d.depth > d.maxDepth {
		d.L.RaiseError("Found too many nested data structures (%d) at character %d", d.depth, d.i)
	}
}

func (d *cjsonDec) object() lua.LValue {
	d.descend()
	t := d.L.NewTable()
	var tok cjsonToken
	d.next(&tok)
	if tok.typ == tObjEnd {
		d.depth--
		return t
	}
	for {
		if tok.typ != tString {
			d.fail("object key string", &tok)
		}
		key := tok.str
		d.next(&tok)
		if tok.typ != tColon {
			d.fail("colon", &tok)
		}
		d.next(&tok)
		t.RawSetString(key, d.value(&tok))
		d.next(&tok)
		if tok.typ == tObjEnd {
			d.depth--
			return t
		}
		if tok.typ != tComma {
			d.fail("comma or object end", &tok)
		}
		d.next(&tok)
	}
}

func (d *cjsonDec) array() lua.LValue {
	d.descend()
	t := d.L.NewTable()
	var tok cjsonToken
	d.next(&tok)
	if tok.typ == tArrEnd {
		d.depth--
		return t
	}
	for i := 1; ; i++ {
		t.RawSetInt(i, d.value(&tok))
		d.next(&tok)
		if tok.typ == tArrEnd {
			d.depth--
			return t
		}
		if tok.typ != tComma {
			d.fail("comma or array end", &tok)
		}
		d.next(&tok)
	}
}

// cStrtod is glibc's strtod on the front of s: the value and how many
// bytes it read (0: none). Decimal and hexadecimal forms, inf, infinity
// and nan, each with an optional sign.
func cStrtod(s string) (float64, int) {
	i := 0
	neg := false
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		neg = s[i] == '-'
		i++
	}
	sign := func(f float64) float64 {
		if neg {
			return -f
		}
		return f
	}
	low := strings.ToLower(s[i:min(len(s), i+8)])
	switch {
	case strings.HasPrefix(low, "infinity"):
		return sign(math.Inf(1)), i + 8
	case strings.HasPrefix(low, "inf"):
		return sign(math.Inf(1)), i + 3
	case strings.HasPrefix(low, "nan"):
		n := i + 3
		if n < len(s) && s[n] == '(' {
			if j := strings.IndexByte(s[n:], ')'); j >= 0 {
				n += j + 1
			}
		}
		return math.NaN(), n
	}
	digits := func(j int, hex bool) int {
		for j < len(s) && (s[j] >= '0' && s[j] <= '9' || hex && (s[j]|0x20 >= 'a' && s[j]|0x20 <= 'f')) {
			j++
		}
		return j
	}
	if i+1 < len(s) && s[i] == '0' && s[i+1]|0x20 == 'x' {
		j := digits(i+2, true)
		k := j
		if k < len(s) && s[k] == '.' {
			k = digits(k+1, true)
		}
		if k == i+2 || k == i+3 && s[i+2] == '.' { // "0x" alone reads as 0
			return 0, i + 1
		}
		mant := s[i+2 : k]
		e := k
		if e < len(s) && s[e]|0x20 == 'p' {
			x := e + 1
			if x < len(s) && (s[x] == '+' || s[x] == '-') {
				x++
			}
			if y := digits(x, false); y > x {
				e = y
			}
		}
		text := "0x" + mant + "p0"
		if e > k {
			text = "0x" + mant + s[k:e]
		}
		f, _ := strconv.ParseFloat(text, 64)
		return sign(f), e
	}
	j := digits(i, false)
	k := j
	if k < len(s) && s[k] == '.' {
		k = digits(k+1, false)
	}
	if k == i || k == i+1 && s[i] == '.' {
		return 0, 0
	}
	e := k
	if e < len(s) && s[e]|0x20 == 'e' {
		x := e + 1
		if x < len(s) && (s[x] == '+' || s[x] == '-') {
			x++
		}
		if y := digits(x, false); y > x {
			e = y
		}
	}
	f, err := strconv.ParseFloat(s[i:e], 64)
	if err != nil && !strings.Contains(err.Error(), "range") {
		return 0, 0
	}
	return sign(f), e
}
