package luaengine

import (
	"fmt"
)

// luaSyntaxError checks script with Lua 5.1's lexer and parser rules
// (llex.c, lparser.c, without code generation) and returns the first
// error as Lua 5.1 words it ("user_script:1: '=' expected near 'x'"), or
// "" when it finds none. gopher-lua's yacc parser decides whether a
// script compiles; this only gives its refusal Redis' words.
func luaSyntaxError(script []byte) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			e, ok := r.(luaSynErr)
			if !ok {
				panic(r)
			}
			msg = string(e)
		}
	}()
	p := &luaParser{lx: luaLexer{src: script, line: 1}}
	p.lx.p = p
	p.next()
	p.fs = &luaFuncState{vararg: true}
	p.chunk()
	p.check(tkEOS)
	return ""
}

type luaSynErr string

// luaSyntaxErr is a script Lua 5.1's grammar refuses, in Lua's words.
type luaSyntaxErr string

func (e luaSyntaxErr) Error() string { return string(e) }

type luaFuncState struct {
	vararg bool
	loops  int // enclosing loops (break is allowed inside one)
}

type luaParser struct {
	lx       luaLexer
	t        int // current token
	ahead    int // lookahead token, or 0
	aheadTxt string
	lastline int
	levels   int
	fs       *luaFuncState
}

func (p *luaParser) next() {
	p.lastline = p.lx.line
	if p.ahead != 0 {
		p.t, p.ahead = p.ahead, 0
		p.lx.buf = append(p.lx.buf[:0], p.aheadTxt...)
		return
	}
	p.t = p.lx.lex()
}

func (p *luaParser) lookahead() int {
	cur := append([]byte(nil), p.lx.buf...)
	p.ahead = p.lx.lex()
	p.aheadTxt = string(p.lx.buf)
	p.lx.buf = cur
	return p.ahead
}

func (p *luaParser) syntaxError(msg string) { p.lx.lexError(msg, p.t) }

func (p *luaParser) errorExpected(tok int) {
	p.syntaxError("'" + luaToken2Str(tok) + "' expected")
}

func (p *luaParser) testNext(c int) bool {
	if p.t == c {
		p.next()
		return true
	}
	return false
}

func (p *luaParser) check(c int) {
	if p.t != c {
		p.errorExpected(c)
	}
}

func (p *luaParser) checkNext(c int) { p.check(c); p.next() }

func (p *luaParser) checkMatch(what, who, where int) {
	if !p.testNext(what) {
		if where == p.lx.line {
			p.errorExpected(what)
		}
		p.syntaxError(fmt.Sprintf("'%s' expected (to close '%s' at line %d)", luaToken2Str(what), luaToken2Str(who), where))
	}
}

func (p *luaParser) checkName() { p.check(tkName); p.next() }

func (p *luaParser) enter() {
	if p.levels++; p.levels > 200 {
		p.lx.lexError("chunk has too many syntax levels", 0)
	}
}

func (p *luaParser) leave() { p.levels-- }

func blockFollow(t int) bool {
	switch t {
	case tkElse, tkElseif, tkEnd, tkUntil, tkEOS:
		return true
	}
	return false
}

func (p *luaParser) chunk() {
	p.enter()
	last := false
	for !last && !blockFollow(p.t) {
		last = p.statement()
		p.testNext(';')
	}
	p.leave()
}

func (p *luaParser) block() { p.chunk() }

func (p *luaParser) loopBlock() {
	p.fs.loops++
	p.block()
	p.fs.loops--
}

func (p *luaParser) statement() bool {
	line := p.lx.line
	switch p.t {
	case tkIf:
		p.testThenBlock()
		for p.t == tkElseif {
			p.testThenBlock()
		}
		if p.testNext(tkElse) {
			p.block()
		}
		p.checkMatch(tkEnd, tkIf, line)
	case tkWhile:
		p.next()
		p.expr()
		p.checkNext(tkDo)
		p.loopBlock()
		p.checkMatch(tkEnd, tkWhile, line)
	case tkDo:
		p.next()
		p.block()
		p.checkMatch(tkEnd, tkDo, line)
	case tkFor:
		p.next()
		p.checkName()
		switch p.t {
		case '=':
			p.next()
			p.expr()
			p.checkNext(',')
			p.expr()
			if p.testNext(',') {
				p.expr()
			}
		case ',', tkIn:
			for p.testNext(',') {
				p.checkName()
			}
			p.checkNext(tkIn)
			p.exprList()
		default:
			p.syntaxError("'=' or 'in' expected")
		}
		p.checkNext(tkDo)
		p.loopBlock()
		p.checkMatch(tkEnd, tkFor, line)
	case tkRepeat:
		p.next()
		p.fs.loops++
		p.chunk()
		p.fs.loops--
		p.checkMatch(tkUntil, tkRepeat, line)
		p.expr()
	case tkFunction:
		p.next()
		p.checkName()
		for p.t == '.' {
			p.next()
			p.checkName()
		}
		if p.t == ':' {
			p.next()
			p.checkName()
		}
		p.body(line)
	case tkLocal:
		p.next()
		if p.testNext(tkFunction) {
			p.checkName()
			p.body(line)
			break
		}
		for {
			p.checkName()
			if !p.testNext(',') {
				break
			}
		}
		if p.testNext('=') {
			p.exprList()
		}
	case tkReturn:
		p.next()
		if !blockFollow(p.t) && p.t != ';' {
			p.exprList()
		}
		return true
	case tkBreak:
		p.next()
		if p.fs.loops == 0 {
			p.syntaxError("no loop to break")
		}
		return true
	default:
		if k := p.primaryExp(); k != expCall {
			p.assignment(k)
		}
	}
	return false
}

func (p *luaParser) testThenBlock() {
	p.next()
	p.expr()
	p.checkNext(tkThen)
	p.block()
}

func (p *luaParser) body(line int) {
	outer := p.fs
	p.fs = &luaFuncState{}
	p.checkNext('(')
	if p.t != ')' {
		for {
			switch p.t {
			case tkName:
				p.next()
			case tkDots:
				p.next()
				p.fs.vararg = true
			default:
				p.syntaxError("<name> or '...' expected")
			}
			if p.fs.vararg || !p.testNext(',') {
				break
			}
		}
	}
	p.checkNext(')')
	p.chunk()
	p.checkMatch(tkEnd, tkFunction, line)
	p.fs = outer
}

// assignment: each target must be a variable (Lua's check_condition
// "syntax error"), more targets after commas, then '=' and the values.
func (p *luaParser) assignment(k expKind) {
	if k != expVar {
		p.syntaxError("syntax error")
	}
	if p.testNext(',') {
		p.assignment(p.primaryExp())
		return
	}
	p.checkNext('=')
	p.exprList()
}

type expKind int

const (
	expVar expKind = iota
	expCall
	expOther
)

func (p *luaParser) prefixExp() expKind {
	switch p.t {
	case '(':
		line := p.lx.line
		p.next()
		p.expr()
		p.checkMatch(')', '(', line)
		return expOther
	case tkName:
		p.next()
		return expVar
	}
	p.syntaxError("unexpected symbol")
	return expOther
}

func (p *luaParser) primaryExp() expKind {
	k := p.prefixExp()
	for {
		switch p.t {
		case '.':
			p.next()
			p.checkName()
			k = expVar
		case '[':
			p.next()
			p.expr()
			p.checkNext(']')
			k = expVar
		case ':':
			p.next()
			p.checkName()
			p.funcArgs()
			k = expCall
		case '(', tkString, '{':
			p.funcArgs()
			k = expCall
		default:
			return k
		}
	}
}

func (p *luaParser) funcArgs() {
	line := p.lx.line
	switch p.t {
	case '(':
		if line != p.lastline {
			p.syntaxError("ambiguous syntax (function call x new statement)")
		}
		p.next()
		if p.t != ')' {
			p.exprList()
		}
		p.checkMatch(')', '(', line)
	case tkString:
		p.next()
	case '{':
		p.constructor()
	default:
		p.syntaxError("function arguments expected")
	}
}

func (p *luaParser) constructor() {
	line := p.lx.line
	p.checkNext('{')
	for p.t != '}' {
		switch p.t {
		case tkName:
			if p.lookahead() != '=' {
				p.expr()
			} else {
				p.next()
				p.checkNext('=')
				p.expr()
			}
		case '[':
			p.next()
			p.expr()
			p.checkNext(']')
			p.checkNext('=')
			p.expr()
		default:
			p.expr()
		}
		if !p.testNext(',') && !p.testNext(';') {
			break
		}
	}
	p.checkMatch('}', '{', line)
}

func (p *luaParser) simpleExp() {
	switch p.t {
	case tkNumber, tkString, tkNil, tkTrue, tkFalse:
		p.next()
	case tkDots:
		if !p.fs.vararg {
			p.syntaxError("cannot use '...' outside a vararg function")
		}
		p.next()
	case '{':
		p.constructor()
	case tkFunction:
		line := p.lx.line
		p.next()
		p.body(line)
	default:
		p.primaryExp()
	}
}

func isBinOp(t int) bool {
	switch t {
	case '+', '-', '*', '/', '%', '^', tkConcat, tkNE, tkEq, '<', tkLE, '>', tkGE, tkAnd, tkOr:
		return true
	}
	return false
}

func (p *luaParser) subExpr() {
	p.enter()
	if p.t == tkNot || p.t == '-' || p.t == '#' {
		p.next()
		p.subExpr()
	} else {
		p.simpleExp()
	}
	for isBinOp(p.t) {
		p.next()
		p.subExpr()
	}
	p.leave()
}

func (p *luaParser) expr() { p.subExpr() }

func (p *luaParser) exprList() {
	p.expr()
	for p.testNext(',') {
		p.expr()
	}
}
