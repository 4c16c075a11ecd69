package luaengine

import (
	"math"
	"strconv"
	"strings"

	lua "github.com/locknode/locknode/internal/lua"
)

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
