package luaengine

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	lua "github.com/locknode/locknode/internal/lua"
)

// luaFormat is Lua 5.1's string.format (lstrlib.c str_format), which
// Redis runs. gopher-lua hands the arguments to Go's fmt.Sprintf, which
// prints a table or function as its memory address (different on every
// node), booleans and nil as words, "%!s(MISSING)" for a missing
// argument, and %g, %c, %q and byte widths differently from C. Here %s
// takes only strings and numbers and everything else is refused with
// Lua's error text, so no address can reach a reply or the key space.
func luaFormat(L *lua.LState) int {
	top := L.GetTop()
	if top < 1 {
		luaArgErr(L, 1, "string expected, got no value")
	}
	fs, ok := luaCheckString(L, 1)
	if !ok {
		luaArgErr(L, 1, "string expected, got "+L.Get(1).Type().String())
	}
	b := make([]byte, 0, len(fs)+16)
	L.ChargeMem(int64(cap(b)))
	charged := cap(b) // bytes of b charged to the script's memory budget
	arg := 1
	for i := 0; i < len(fs); i++ {
		// Each conversion adds at most a few hundred bytes (width and
		// precision have two digits) except %s and %q, charged before
		// they append; the rest is charged as it comes.
		if len(b) > charged {
			L.ChargeMem(int64(len(b) - charged))
			charged = len(b)
		}
		if fs[i] != '%' {
			b = append(b, fs[i])
			continue
		}
		i++
		if i < len(fs) && fs[i] == '%' {
			b = append(b, '%')
			continue
		}
		arg++
		if arg > top {
			luaArgErr(L, arg, "no value")
		}
		var spec string
		var conv byte
		spec, conv, i = formatSpec(L, fs, i)
		var more int
		b, more = appendFormatted(L, b, spec, conv, arg)
		charged += more
	}
	if len(b) > charged {
		L.ChargeMem(int64(len(b) - charged))
	}
	L.Push(lua.LString(b))
	return 1
}

// formatSpec reads the flags, width and precision of a conversion that
// starts at fs[i] (after its '%'): it returns them, the conversion
// character (0 at the end of fs) and its index.
func formatSpec(L *lua.LState, fs string, i int) (spec string, conv byte, at int) {
	start := i
	for i < len(fs) && strings.IndexByte("-+ #0", fs[i]) >= 0 {
		i++
	}
	if i-start >= 6 {
		L.RaiseError("invalid format (repeated flags)")
	}
	i = skipDigits(fs, i, 2)
	if i < len(fs) && fs[i] == '.' {
		i = skipDigits(fs, i+1, 2)
	}
	if i < len(fs) && fs[i] >= '0' && fs[i] <= '9' {
		L.RaiseError("invalid format (width or precision too long)")
	}
	if i < len(fs) {
		conv = fs[i]
	}
	return fs[start:i], conv, i
}

// appendFormatted appends argument arg converted by conv with spec, as C
// would. charged is what it charged to the script's memory budget before
// appending (%s and %q, whose length has no bound).
func appendFormatted(L *lua.LState, b []byte, spec string, conv byte, arg int) (out []byte, charged int) {
	switch conv {
	case 'c':
		b = append(b, cPad(spec, string([]byte{byte(luaToInt(luaCheckNumber(L, arg)))}))...)
	case 'd', 'i':
		b = fmt.Appendf(b, "%"+spec+"d", luaToInt(luaCheckNumber(L, arg)))
	case 'o', 'u', 'x', 'X':
		u := luaToUint(luaCheckNumber(L, arg))
		if u == 0 {
			spec = strings.ReplaceAll(spec, "#", "") // C prints 0, not 0x0
		}
		verb := string(conv)
		if conv == 'u' {
			verb = "d"
		}
		b = fmt.Appendf(b, "%"+spec+verb, u)
	case 'e', 'E', 'f', 'g', 'G':
		f := luaCheckNumber(L, arg)
		if math.IsInf(f, 0) || math.IsNaN(f) {
			b = append(b, cNonFinite(spec, conv, f)...)
			break
		}
		if (conv == 'g' || conv == 'G') && !strings.Contains(spec, ".") {
			spec += ".6" // C's default precision; Go's is "shortest"
		}
		b = fmt.Appendf(b, "%"+spec+string(conv), f)
	case 'q':
		s, ok := luaCheckString(L, arg)
		if !ok {
			luaArgErr(L, arg, "string expected, got "+L.Get(arg).Type().String())
		}
		L.ChargeMem(4*int64(len(s)) + 2) // "\0" becomes four bytes
		charged = 4*len(s) + 2
		b = appendQuoted(b, s)
	case 's':
		s, ok := luaCheckString(L, arg)
		if !ok {
			luaArgErr(L, arg, "string expected, got "+L.Get(arg).Type().String())
		}
		L.ChargeMem(int64(len(s)) + 100)
		charged = len(s) + 100
		if !strings.Contains(spec, ".") && len(s) >= 100 {
			b = append(b, s...) // Lua adds long strings whole
		} else {
			b = append(b, cPad(spec, s)...)
		}
	default:
		L.RaiseError("invalid option '%%%c' to 'format'", conv)
	}
	return b, charged
}

func luaArgErr(L *lua.LState, n int, msg string) {
	L.RaiseError("bad argument #%d to 'format' (%s)", n, msg)
}

func skipDigits(s string, i, max int) int {
	for n := 0; n < max && i < len(s) && s[i] >= '0' && s[i] <= '9'; n++ {
		i++
	}
	return i
}

// luaCheckString is luaL_checklstring: a string, or a number as Lua
// prints it (%.14g).
func luaCheckString(L *lua.LState, n int) (string, bool) {
	switch v := L.Get(n).(type) {
	case lua.LString:
		return string(v), true
	case lua.LNumber:
		return luaNumberString(float64(v)), true
	}
	return "", false
}

// luaNumberString is Lua 5.1's lua_number2str ("%.14g").
func luaNumberString(f float64) string {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return cNonFinite("", 'g', f)
	}
	return string(fixExp([]byte(strconv.FormatFloat(f, 'g', 14, 64))))
}

// luaCheckNumber is luaL_checknumber: a number, or a string that reads
// as one.
func luaCheckNumber(L *lua.LState, n int) float64 {
	switch v := L.Get(n).(type) {
	case lua.LNumber:
		return float64(v)
	case lua.LString:
		if f, err := parseLuaNumber(string(v)); err == nil {
			return f
		}
	}
	luaArgErr(L, n, "number expected, got "+L.Get(n).Type().String())
	return 0
}

// luaToUint is C's (unsigned long) cast of a double on x86-64.
func luaToUint(f float64) uint64 {
	if f >= 9.223372036854775807e18 && f < 1.8446744073709551615e19 {
		return uint64(f)
	}
	return uint64(luaToInt(f))
}

// cPad pads s to the width in spec (C's %s: widths and precisions count
// bytes, not runes as Go's do).
func cPad(spec, s string) string {
	left := strings.Contains(spec, "-")
	spec = strings.TrimLeft(spec, "-+ #0")
	w, p, hasP := spec, "", false
	if i := strings.IndexByte(spec, '.'); i >= 0 {
		w, p, hasP = spec[:i], spec[i+1:], true
	}
	if hasP {
		if n, _ := strconv.Atoi(p); n < len(s) {
			s = s[:n]
		}
	}
	width, _ := strconv.Atoi(w)
	if pad := width - len(s); pad > 0 {
		if left {
			return s + strings.Repeat(" ", pad)
		}
		return strings.Repeat(" ", pad) + s
	}
	return s
}

// cNonFinite is glibc's inf/nan text, with sign flags and width.
func cNonFinite(spec string, conv byte, f float64) string {
	s := "inf"
	if math.IsNaN(f) {
		s = "nan"
	}
	switch {
	case math.Signbit(f):
		s = "-" + s
	case strings.Contains(spec, "+"):
		s = "+" + s
	case strings.Contains(spec, " "):
		s = " " + s
	}
	if conv == 'E' || conv == 'G' {
		s = strings.ToUpper(s)
	}
	if i := strings.IndexByte(spec, '.'); i >= 0 {
		spec = spec[:i] // precision does not shorten inf or nan
	}
	return cPad(spec, s)
}

// appendQuoted is Lua 5.1's addquoted (%q).
func appendQuoted(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\', '\n':
			b = append(b, '\\', c)
		case '\r':
			b = append(b, '\\', 'r')
		case 0:
			b = append(b, '\\', '0', '0', '0')
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}
