package lua

import "strconv"

// Lua 5.1's runtime error texts (ldebug.c luaG_typeerror, getobjname,
// luaG_concaterror, luaG_aritherror, luaG_ordererror), which Redis users
// and clients see: "attempt to index local 'x' (a nil value)" where
// upstream gopher-lua says "attempt to index a non-table object(nil) with
// key 'y'". The operand's name comes from the running instruction and a
// scan of the code before it (symbolic execution, as Lua does).

// typeErrorText is luaG_typeerror: op is "index", "call", "perform
// arithmetic on", "concatenate" or "get length of"; reg is the register
// of the running Lua function that holds v, or -1 (a constant, or not in
// a register), in which case the value has no name.
func (ls *LState) typeErrorText(op string, v LValue, reg int) string {
	if kind, name := ls.regName(v, reg); kind != "" {
		return "attempt to " + op + " " + kind + " '" + name + "' (a " + v.Type().String() + " value)"
	}
	return "attempt to " + op + " a " + v.Type().String() + " value"
}

// runningInst returns the running Lua function's prototype, the index of
// the instruction it is executing and that instruction.
func (ls *LState) runningInst() (*callFrame, uint32, bool) {
	cf := ls.currentFrame
	if cf == nil || cf.Fn == nil || cf.Fn.IsG || cf.Pc < 1 || cf.Pc > len(cf.Fn.Proto.Code) {
		return nil, 0, false
	}
	return cf, cf.Fn.Proto.Code[cf.Pc-1], true
}

// regName is getobjname for register reg, provided it still holds v
// (luaG_typeerror's isinstack: values outside the frame have no name).
func (ls *LState) regName(v LValue, reg int) (kind, name string) {
	cf, _, ok := ls.runningInst()
	if !ok || reg < 0 || opIsK(reg) || cf.LocalBase+reg >= ls.reg.Top() {
		return "", ""
	}
	if ls.reg.Get(cf.LocalBase+reg) != v {
		return "", ""
	}
	return objName(cf.Fn, cf.Pc-1, reg, 0)
}

// indexedReg is the register the running instruction indexes, or -1.
func (ls *LState) indexedReg() int {
	_, inst, ok := ls.runningInst()
	if !ok {
		return -1
	}
	switch opGetOpCode(inst) {
	case OP_GETTABLE, OP_GETTABLEKS, OP_SELF:
		return opGetArgB(inst)
	case OP_SETTABLE, OP_SETTABLEKS:
		return opGetArgA(inst)
	}
	return -1
}

// calledReg is the register the running instruction calls, or -1.
func (ls *LState) calledReg() int {
	_, inst, ok := ls.runningInst()
	if !ok {
		return -1
	}
	switch opGetOpCode(inst) {
	case OP_CALL, OP_TAILCALL:
		return opGetArgA(inst)
	}
	return -1
}

// arithErrorText is luaG_aritherror: the first operand that is not a
// number (or a string that reads as one) is blamed.
func (ls *LState) arithErrorText(lhs, rhs LValue) string {
	blameLeft := !canArith(lhs)
	v := rhs
	if blameLeft {
		v = lhs
	}
	reg := -1
	if _, inst, ok := ls.runningInst(); ok {
		switch op := opGetOpCode(inst); op {
		case OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MOD, OP_POW:
			if blameLeft {
				reg = opGetArgB(inst)
			} else {
				reg = opGetArgC(inst)
			}
		case OP_UNM:
			reg = opGetArgB(inst)
		}
	}
	return ls.typeErrorText("perform arithmetic on", v, reg)
}

func canArith(v LValue) bool {
	switch v := v.(type) {
	case LNumber:
		return true
	case LString:
		_, err := parseNumber(string(v))
		return err == nil
	}
	return false
}

// concatErrorText is luaG_concaterror for the pair lhs..rhs, lhs in
// absolute register lhsAbs and rhs the value of absolute register rhsAbs
// (or a partial result, rhsAbs < 0).
func (ls *LState) concatErrorText(lhs, rhs LValue, lhsAbs, rhsAbs int) string {
	v, abs := lhs, lhsAbs
	if LVCanConvToString(lhs) {
		v, abs = rhs, rhsAbs
	}
	reg := -1
	if cf := ls.currentFrame; cf != nil && abs >= 0 {
		reg = abs - cf.LocalBase
	}
	return ls.typeErrorText("concatenate", v, reg)
}

// orderErrorText is luaG_ordererror.
func orderErrorText(lhs, rhs LValue) string {
	t1, t2 := lhs.Type().String(), rhs.Type().String()
	if t1 == t2 {
		return "attempt to compare two " + t1 + " values"
	}
	return "attempt to compare " + t1 + " with " + t2
}

// objName is getobjname: the kind ("local", "global", "field",
// "upvalue", "method") and name of register reg at instruction pc.
func objName(fn *LFunction, pc, reg, depth int) (kind, name string) {
	if name, ok := localName(fn.Proto, reg, pc); ok {
		return "local", name
	}
	if depth > 8 {
		return "", ""
	}
	p := fn.Proto
	setpc := findSetReg(p, pc, reg)
	if setpc < 0 {
		return "", ""
	}
	inst := p.Code[setpc]
	switch opGetOpCode(inst) {
	case OP_GETGLOBAL:
		if k, ok := p.Constants[opGetArgBx(inst)].(LString); ok {
			return "global", string(k)
		}
	case OP_MOVE, OP_MOVEN:
		if a, b := opGetArgA(inst), opGetArgB(inst); a == reg && b < a {
			return objName(fn, pc, b, depth+1)
		}
	case OP_GETTABLE, OP_GETTABLEKS:
		return "field", constName(p, opGetArgC(inst))
	case OP_GETUPVAL:
		if b := opGetArgB(inst); b < len(p.DbgUpvalues) {
			return "upvalue", p.DbgUpvalues[b]
		}
		return "upvalue", "?"
	case OP_SELF:
		return "method", constName(p, opGetArgC(inst))
	}
	return "", ""
}

// constName is kname: a constant string key, else "?".
func constName(p *FunctionProto, rk int) string {
	if opIsK(rk) {
		if s, ok := p.Constants[opIndexK(rk)].(LString); ok {
			return string(s)
		}
	}
	return "?"
}

// findSetReg returns the last instruction before lastpc that changed
// register reg, or -1 (Lua 5.2's findsetreg: forward jumps that do not
// pass lastpc are followed).
func findSetReg(p *FunctionProto, lastpc, reg int) int {
	setreg := -1
	for pc := 0; pc < lastpc && pc < len(p.Code); pc++ {
		inst := p.Code[pc]
		op := opGetOpCode(inst)
		a := opGetArgA(inst)
		switch op {
		case OP_LOADNIL:
			if a <= reg && reg <= opGetArgB(inst) {
				setreg = pc
			}
		case OP_TFORLOOP:
			if reg >= a+2 {
				setreg = pc
			}
		case OP_CALL, OP_TAILCALL:
			if reg >= a {
				setreg = pc
			}
		case OP_SELF:
			if reg == a || reg == a+1 {
				setreg = pc
			}
		case OP_JMP:
			if dest := pc + 1 + opGetArgSbx(inst); pc < dest && dest <= lastpc {
				pc = dest - 1
			}
		case OP_VARARG:
			if reg >= a {
				setreg = pc
			}
		default:
			if op <= opCodeMax && opProps[op].SetRegA && reg == a {
				setreg = pc
			}
		}
	}
	return setreg
}

// localName is luaF_getlocalname for register reg at instruction pc. A
// local is active from StartPc (the first instruction after its
// declaration) to EndPc (the last instruction of its scope) inclusive.
func localName(p *FunctionProto, reg, pc int) (string, bool) {
	n := reg + 1
	for _, l := range p.DbgLocals {
		if l.StartPc > pc {
			break
		}
		if pc <= l.EndPc {
			n--
			if n == 0 {
				return l.Name, true
			}
		}
	}
	return "", false
}

// badArgText is luaL_argerror: the function's name quoted, and for a
// method call (obj:f(...)) the arguments counted without self.
func (ls *LState) badArgText(n int, msg string) string {
	cf := ls.currentFrame
	name := ls.rawFrameFuncName(cf)
	if caller := cf.Parent; caller != nil && !caller.Fn.IsG && caller.Pc >= 1 && caller.Pc <= len(caller.Fn.Proto.Code) {
		inst := caller.Fn.Proto.Code[caller.Pc-1]
		if op := opGetOpCode(inst); op == OP_CALL || op == OP_TAILCALL {
			if kind, _ := objName(caller.Fn, caller.Pc-1, opGetArgA(inst), 0); kind == "method" {
				n--
				if n == 0 {
					return "calling '" + name + "' on bad self (" + msg + ")"
				}
			}
		}
	}
	return "bad argument #" + strconv.Itoa(n) + " to '" + name + "' (" + msg + ")"
}

// errorWhere is the position an error raised here carries, as Lua 5.1
// gives it: the running Lua function's line (luaG_runerror), or for a Go
// function the line of its caller when that is a Lua function and none
// when it is another Go function, such as pcall (luaL_error's
// luaL_where(L, 1)).
func (ls *LState) errorWhere() string {
	cf := ls.currentFrame
	if cf != nil && cf.Fn != nil && cf.Fn.IsG {
		cf = cf.Parent
	}
	if cf == nil || cf.Fn == nil || cf.Fn.IsG || cf.Pc < 1 {
		return ""
	}
	return cf.Fn.Proto.SourceName + ":" + strconv.Itoa(cf.Fn.Proto.DbgSourcePositions[cf.Pc-1]) + ":"
}
