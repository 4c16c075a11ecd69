package luaengine

import (
	"fmt"
	"strconv"
)

// Token kinds: single characters are their byte value; the rest follow.
const (
	tkAnd = 257 + iota
	tkBreak
	tkDo
	tkElse
	tkElseif
	tkEnd
	tkFalse
	tkFor
	tkFunction
	tkIf
	tkIn
	tkLocal
	tkNil
	tkNot
	tkOr
	tkRepeat
	tkReturn
	tkThen
	tkTrue
	tkUntil
	tkWhile
	tkConcat
	tkDots
	tkEq
	tkGE
	tkLE
	tkNE
	tkNumber
	tkName
	tkString
	tkEOS
)

var luaTokenText = []string{"and", "break", "do", "else", "elseif", "end", "false", "for", "function",
	"if", "in", "local", "nil", "not", "or", "repeat", "return", "then", "true", "until", "while",
	"..", "...", "==", ">=", "<=", "~=", "<number>", "<name>", "<string>", "<eof>"}

var luaReserved = func() map[string]int {
	m := map[string]int{}
	for i := tkAnd; i <= tkWhile; i++ {
		m[luaTokenText[i-tkAnd]] = i
	}
	return m
}()

func luaToken2Str(t int) string {
	if t < tkAnd {
		if t < 32 || t == 127 {
			return fmt.Sprintf("char(%d)", t)
		}
		return string([]byte{byte(t)})
	}
	return luaTokenText[t-tkAnd]
}

type luaLexer struct {
	p    *luaParser
	src  []byte
	pos  int
	line int
	buf  []byte // the text of the token being read (luaZ_buffer)
}

func (lx *luaLexer) cur() int {
	if lx.pos < len(lx.src) {
		return int(lx.src[lx.pos])
	}
	return -1
}

func (lx *luaLexer) advance()    { lx.pos++ }
func (lx *luaLexer) saveNext()   { lx.buf = append(lx.buf, byte(lx.cur())); lx.advance() }
func (lx *luaLexer) save(c byte) { lx.buf = append(lx.buf, c) }
func isNewline(c int) bool       { return c == '\n' || c == '\r' }
func isDigit(c int) bool         { return c >= '0' && c <= '9' }
func isAlpha(c int) bool         { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isAlnumU(c int) bool        { return isAlpha(c) || isDigit(c) || c == '_' }
func (lx *luaLexer) skipNewline() {
	old := lx.cur()
	lx.advance()
	if c := lx.cur(); isNewline(c) && c != old {
		lx.advance()
	}
	lx.line++
}

// lexError is luaX_lexerror: with a token, " near '<its text>'".
func (lx *luaLexer) lexError(msg string, tok int) {
	m := luaChunkName + ":" + strconv.Itoa(lx.line) + ": " + msg
	if tok != 0 {
		m += " near '" + lx.txtToken(tok) + "'"
	}
	panic(luaSynErr(m))
}

func (lx *luaLexer) txtToken(tok int) string {
	switch tok {
	case tkName, tkString, tkNumber:
		return string(lx.buf)
	}
	return luaToken2Str(tok)
}

// skipSep reads a long bracket's '=' run: its count if the bracket is
// well formed, else -count-1.
func (lx *luaLexer) skipSep() int {
	count := 0
	s := lx.cur()
	lx.saveNext()
	for lx.cur() == '=' {
		lx.saveNext()
		count++
	}
	if lx.cur() == s {
		return count
	}
	return -count - 1
}

func (lx *luaLexer) longString(isString bool, sep int) {
	lx.saveNext() // the second '['
	if isNewline(lx.cur()) {
		lx.skipNewline()
	}
	for {
		switch c := lx.cur(); {
		case c < 0:
			if isString {
				lx.lexError("unfinished long string", tkEOS)
			}
			lx.lexError("unfinished long comment", tkEOS)
		case c == ']':
			if lx.skipSep() == sep {
				lx.saveNext()
				return
			}
		case isNewline(c):
			lx.save('\n')
			lx.skipNewline()
			if !isString {
				lx.buf = lx.buf[:0]
			}
		default:
			if isString {
				lx.saveNext()
			} else {
				lx.advance()
			}
		}
	}
}

func (lx *luaLexer) readString(del int) {
	lx.saveNext()
	for lx.cur() != del {
		switch c := lx.cur(); {
		case c < 0:
			lx.lexError("unfinished string", tkEOS)
		case isNewline(c):
			lx.lexError("unfinished string", tkString)
		case c == '\\':
			lx.advance()
			switch e := lx.cur(); {
			case e < 0:
				continue // the next round reports the unfinished string
			case isNewline(e):
				lx.save('\n')
				lx.skipNewline()
			case isDigit(e):
				n := 0
				for i := 0; i < 3 && isDigit(lx.cur()); i++ {
					n = n*10 + lx.cur() - '0'
					lx.advance()
				}
				if n > 255 {
					lx.lexError("escape sequence too large", tkString)
				}
				lx.save(byte(n))
			default:
				lx.save(byte(e))
				lx.advance()
			}
		default:
			lx.saveNext()
		}
	}
	lx.saveNext()
}

func (lx *luaLexer) readNumeral() {
	for isDigit(lx.cur()) || lx.cur() == '.' {
		lx.saveNext()
	}
	if c := lx.cur(); c == 'e' || c == 'E' {
		lx.saveNext()
		if c := lx.cur(); c == '+' || c == '-' {
			lx.saveNext()
		}
	}
	for isAlnumU(lx.cur()) {
		lx.saveNext()
	}
	if _, err := parseLuaNumber(string(lx.buf)); err != nil {
		lx.lexError("malformed number", tkNumber)
	}
}

// lex is llex: the next token's kind (its text is in buf).
func (lx *luaLexer) lex() int {
	lx.buf = lx.buf[:0]
	for {
		c := lx.cur()
		switch {
		case c < 0:
			return tkEOS
		case isNewline(c):
			lx.skipNewline()
		case c == '-':
			lx.advance()
			if lx.cur() != '-' {
				return '-'
			}
			lx.advance()
			if lx.cur() == '[' {
				if sep := lx.skipSep(); sep >= 0 {
					lx.longString(false, sep)
					lx.buf = lx.buf[:0]
					continue
				}
				lx.buf = lx.buf[:0]
			}
			for c := lx.cur(); c >= 0 && !isNewline(c); c = lx.cur() {
				lx.advance()
			}
		case c == '[':
			sep := lx.skipSep()
			if sep >= 0 {
				lx.longString(true, sep)
				return tkString
			}
			if sep != -1 {
				lx.lexError("invalid long string delimiter", tkString)
			}
			return '['
		case c == '=' || c == '<' || c == '>' || c == '~':
			lx.advance()
			if lx.cur() != '=' {
				return c
			}
			lx.advance()
			return map[int]int{'=': tkEq, '<': tkLE, '>': tkGE, '~': tkNE}[c]
		case c == '"' || c == '\'':
			lx.readString(c)
			return tkString
		case c == '.':
			lx.saveNext()
			if lx.cur() == '.' {
				lx.advance()
				if lx.cur() == '.' {
					lx.advance()
					return tkDots
				}
				return tkConcat
			}
			if !isDigit(lx.cur()) {
				return '.'
			}
			lx.readNumeral()
			return tkNumber
		case c == ' ' || c == '\t' || c == '\f' || c == '\v':
			lx.advance()
		case isDigit(c):
			lx.readNumeral()
			return tkNumber
		case isAlpha(c) || c == '_':
			for isAlnumU(lx.cur()) {
				lx.saveNext()
			}
			if r, ok := luaReserved[string(lx.buf)]; ok {
				return r
			}
			return tkName
		default:
			lx.advance()
			return c
		}
	}
}
