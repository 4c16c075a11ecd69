package luaengine

import (
	"bytes"
	"errors"
	"strconv"
	"strings"

	lua "github.com/locknode/locknode/internal/lua"
	"github.com/locknode/locknode/internal/lua/parse"
)

// Error texts of scripts in Redis 7.0's words. The runtime messages
// themselves are Lua 5.1's (internal/lua errnames.go); here are the parts
// Redis adds: the compile error prefix, the "script: <sha>, on
// @user_script:<line>." suffix whose line comes from the innermost Lua
// function when the error was raised (Redis' __redis__err__handler), and
// Lua 5.1's error() (a position for numbers too, none past the script's
// own frame).

// compileErrText is Redis' reply to a script that does not compile. The
// text of a syntax error comes from the Lua 5.1 syntax check
// (syntax.go). gopher-lua's yacc parser knows the token it stopped at
// but not what Lua's parser expected there: should it refuse a script the
// check passed (the grammars differ), the error reads "unexpected symbol
// near '<token>'".
func compileErrText(err error, script []byte) string {
	const prefix = "ERR Error compiling script (new function): "
	var se luaSyntaxErr
	if errors.As(err, &se) {
		return prefix + string(se)
	}
	var pe *parse.Error
	if errors.As(err, &pe) {
		line, near := pe.Pos.Line, pe.Token
		if line == parse.EOF {
			line, near = luaLastLine(script), "<eof>"
		}
		what := "unexpected symbol"
		switch {
		case strings.Contains(pe.Message, "multiline string"):
			what = "unfinished long string"
		case strings.Contains(pe.Message, "unterminated string"):
			what = "unfinished string"
		}
		return prefix + luaChunkName + ":" + strconv.Itoa(line) + ": " + what + " near '" + near + "'"
	}
	return prefix + oneLine(strings.TrimSpace(err.Error()))
}

// luaLastLine is the line Lua's lexer is on at the end of script: one
// more than its line breaks (\n, \r, \r\n and \n\r each count once).
func luaLastLine(script []byte) int {
	line := 1
	for i := 0; i < len(script); i++ {
		if c := script[i]; c == '\n' || c == '\r' {
			if i+1 < len(script) && (script[i+1] == '\n' || script[i+1] == '\r') && script[i+1] != c {
				i++
			}
			line++
		}
	}
	return line
}

// errHandler runs where Redis' __redis__err__handler does, while the
// frames of the failed script are still there: it records the current
// line of the function that raised the error (of its Lua caller when a Go
// function raised it, such as error or redis.call).
func (r *luaRun) errHandler(L *lua.LState) int {
	r.errLine = 0
	for level := 1; level <= 2; level++ {
		dbg, ok := L.GetStack(level)
		if !ok {
			break
		}
		if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil {
			break
		}
		if dbg.CurrentLine < 0 { // a Go function
			continue
		}
		if dbg.CurrentLine > 0 {
			r.errLine = dbg.CurrentLine
		}
		break
	}
	L.Push(L.Get(1))
	return 1
}

// luaError is Lua 5.1's error(message [, level]): a string or number
// message gets the position of the function at level (1: the caller of
// error), or none when that is not a Lua function.
func luaError(L *lua.LState) int {
	v := L.Get(1)
	level := L.OptInt(2, 1)
	switch m := v.(type) {
	case lua.LString, lua.LNumber:
		if level > 0 {
			s := luaValueString(m)
			v = lua.LString(luaWhere(L, level) + s)
		}
	}
	L.Error(v, 0)
	return 0
}

// luaWhere is luaL_where: "user_script:<line>: " for a Lua function at
// level, else "".
func luaWhere(L *lua.LState, level int) string {
	dbg, ok := L.GetStack(level)
	if !ok {
		return ""
	}
	if _, err := L.GetInfo("Sl", dbg, lua.LNil); err != nil || dbg.CurrentLine <= 0 {
		return ""
	}
	return dbg.Source + ":" + strconv.Itoa(dbg.CurrentLine) + ": "
}

// luaValueString is Lua 5.1's tostring of a non-table value.
func luaValueString(v lua.LValue) string {
	if n, ok := v.(lua.LNumber); ok {
		return luaNumberString(float64(n))
	}
	return v.String()
}

// oneLine replaces the line breaks of an error text, which RESP cannot
// carry in an error reply.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return string(bytes.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, []byte(s)))
}
