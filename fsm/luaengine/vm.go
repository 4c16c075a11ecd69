package luaengine

import (
	"sort"
	"strings"

	lua "github.com/locknode/locknode/internal/lua"
)

// luaVM is one interpreter with its sandbox built once. Building it costs
// far more than running a small script (library tables, a call stack, a
// register file), so the engine keeps idle ones and reuses them. What
// makes reuse safe is that a script can reach only tables nothing can
// write (see the package notes) and that begin resets the rest.
type luaVM struct {
	L    *lua.LState
	env  *lua.LTable // the scripts' _G: empty, read-only, reads through to base
	base *lua.LTable // globals: library views, base functions, KEYS, ARGV
	// ro maps each read-only view to the table it shows; rawget, next
	// and pairs look through a view, rawset and the rest refuse it.
	ro       map[*lua.LTable]*lua.LTable
	strMT    *lua.LTable    // what getmetatable("") returns: a read-only view
	run      luaRun         // the script running now
	errFn    *lua.LFunction // run.errHandler, the PCall error function
	null     *lua.LUserData // cjson.null (Redis: a NULL light userdata)
	poisoned bool           // a Go panic escaped into the VM: do not reuse
}

const (
	luaIdleVMs  = 4 // interpreters kept per Engine; more are built when scripts nest
	errReadonly = "Attempt to modify a readonly table"
)

// luaRemoved are base-library names scripts must not see.
var luaRemoved = []string{"dofile", "loadfile", "print", "_printregs", "getfenv", "setfenv",
	"module", "require", "newproxy", "_GOPHER_LUA_VERSION", "_G"}

// getVM returns an idle interpreter, or a new one.
func (e *Engine) getVM() *luaVM {
	if n := len(e.idle); n > 0 {
		vm := e.idle[n-1]
		e.idle[n-1] = nil
		e.idle = e.idle[:n-1]
		return vm
	}
	e.built++
	return newLuaVM()
}

// Stats counts what an Engine keeps.
type Stats struct {
	Scripts int    // compiled scripts cached
	Idle    int    // interpreters waiting for reuse
	Built   uint64 // interpreters built so far
}

// Stats returns the engine's counts.
func (e *Engine) Stats() Stats {
	return Stats{Scripts: e.lru.Len(), Idle: len(e.idle), Built: e.built}
}

// putVM makes vm available again, unless it is not to be trusted.
func (e *Engine) putVM(vm *luaVM) {
	if vm.poisoned || len(e.idle) >= luaIdleVMs {
		vm.L.Close()
		return
	}
	e.idle = append(e.idle, vm)
}

// DropIdle closes the idle interpreters. A host calls it after it
// recovered a panic, which may have left one in any state.
func (e *Engine) DropIdle() {
	for _, vm := range e.idle {
		vm.L.Close()
	}
	e.idle = nil
}

// begin prepares vm to run one script: every piece of per-script state
// starts from the same value whatever ran on vm before.
func (vm *luaVM) begin(host Host, lim Limits, steps int64, sha string, keys, args [][]byte) *luaRun {
	r := &vm.run
	if r.ids != nil {
		clear(r.ids)
	}
	r.host, r.lim, r.sha, r.resp3, r.errLine = host, lim, sha, false, 0
	r.cjson = cjsonDefaults
	r.budget = stepBudget{steps: steps, max: int64(lim.MaxSteps), L: vm.L}
	r.rand.seed(0)
	vm.L.SetTop(0)
	vm.base.RawSetString("KEYS", byteTable(vm.L, keys))
	vm.base.RawSetString("ARGV", byteTable(vm.L, args))
	return r
}

// end drops what the finished script left on the stack and the
// references that would keep its data alive while vm sits idle.
func (vm *luaVM) end() {
	vm.L.SetTop(0)
	vm.run.host = nil
	if len(vm.run.ids) > 64 {
		vm.run.ids = nil
	}
}

func newLuaVM() *luaVM {
	L := lua.NewState(lua.Options{
		SkipOpenLibs:    true,
		CallStackSize:   200,
		RegistrySize:    1024,
		RegistryMaxSize: 1 << 20,
	})
	vm := &luaVM{L: L, ro: map[*lua.LTable]*lua.LTable{}}
	vm.run.vm = vm
	vm.errFn = L.NewFunction(vm.run.errHandler)
	vm.null = L.NewUserData()

	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{
		{lua.BaseLibName, lua.OpenBase},
		{lua.TabLibName, lua.OpenTable},
		{lua.StringLibName, lua.OpenString},
		{lua.MathLibName, lua.OpenMath},
	} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	g := L.G.Global
	for _, name := range luaRemoved {
		g.RawSetString(name, lua.LNil)
	}
	vm.setBaseFuncs(g)
	vm.setMetatableFuncs(g)
	g.RawSetString(luaForNum, L.NewFunction(luaForNumber))
	vm.setGlobals(vm.setLibFuncs(g))
	return vm
}

// setFunc sets tb[name] to the Go function fn.
func setFunc(L *lua.LState, tb *lua.LTable, name string, fn lua.LGFunction) {
	tb.RawSetString(name, L.NewFunction(fn))
}

// setBaseFuncs replaces the base functions that must be deterministic or
// respect read-only views.
func (vm *luaVM) setBaseFuncs(g *lua.LTable) {
	L, r := vm.L, &vm.run
	set := func(tb *lua.LTable, name string, fn lua.LGFunction) { setFunc(L, tb, name, fn) }
	set(g, "error", luaError)
	pcall := g.RawGetString("pcall").(*lua.LFunction)
	set(g, "pcall", func(L *lua.LState) int {
		// Redis 7's luaRedisPcall: an error table is caught as its err text.
		n := pcall.GFunction(L)
		if n == 2 && L.Get(-2) == lua.LFalse {
			if tb, ok := L.Get(-1).(*lua.LTable); ok {
				switch e := tb.RawGetString("err").(type) {
				case lua.LString, lua.LNumber:
					L.Replace(-1, lua.LString(luaValueString(e)))
				}
			}
		}
		return n
	})
	set(g, "collectgarbage", func(L *lua.LState) int { L.Push(lua.LNumber(0)); return 1 })
	set(g, "tostring", func(L *lua.LState) int {
		v := L.CheckAny(1)
		if getMetaTostring(v) != nil {
			L.Push(L.ToStringMeta(v))
		} else {
			s := r.tostring(v)
			L.ChargeMem(int64(len(s)))
			L.Push(lua.LString(s))
		}
		return 1
	})
	set(g, "rawset", func(L *lua.LState) int {
		tb := L.CheckTable(1)
		vm.refuseRO(L, tb)
		L.RawSet(tb, L.CheckAny(2), L.CheckAny(3))
		L.SetTop(1)
		return 1
	})
	set(g, "rawget", func(L *lua.LState) int {
		L.Push(vm.shown(L.CheckTable(1)).RawGet(L.CheckAny(2)))
		return 1
	})
	next := L.NewFunction(func(L *lua.LState) int {
		tb := vm.shown(L.CheckTable(1))
		k, v := tb.Next(L.Get(2))
		if k == lua.LNil {
			L.Push(lua.LNil)
			return 1
		}
		L.Push(k)
		L.Push(v)
		return 2
	})
	g.RawSetString("next", next)
	set(g, "pairs", func(L *lua.LState) int {
		tb := L.CheckTable(1)
		L.Push(next)
		L.Push(tb)
		L.Push(lua.LNil)
		return 3
	})
}

// setMetatableFuncs replaces setmetatable and getmetatable: Lua 5.1's
// rules, protected metatables, and no metatable seen through a read-only
// view.
func (vm *luaVM) setMetatableFuncs(g *lua.LTable) {
	set := func(tb *lua.LTable, name string, fn lua.LGFunction) { setFunc(vm.L, tb, name, fn) }
	set(g, "setmetatable", func(L *lua.LState) int {
		// Lua 5.1: only tables, so the metatables of strings and numbers
		// (one per type, shared by every script) cannot change.
		tb, ok := L.Get(1).(*lua.LTable)
		if !ok {
			got := "no value"
			if L.GetTop() >= 1 {
				got = L.Get(1).Type().String()
			}
			L.RaiseError("bad argument #1 to 'setmetatable' (table expected, got %s)", got)
		}
		mt := L.Get(2)
		if mt != lua.LNil {
			L.CheckTable(2)
		}
		vm.refuseRO(L, tb)
		if cur, ok := tb.Metatable.(*lua.LTable); ok && cur.RawGetString("__metatable") != lua.LNil {
			L.RaiseError("cannot change a protected metatable")
		}
		tb.Metatable = mt
		L.SetTop(1)
		return 1
	})
	set(g, "getmetatable", func(L *lua.LState) int {
		switch v := L.CheckAny(1).(type) {
		case *lua.LTable:
			mt, ok := v.Metatable.(*lua.LTable)
			switch {
			case vm.ro[v] != nil || !ok:
				L.Push(lua.LNil)
			case mt.RawGetString("__metatable") != lua.LNil:
				L.Push(mt.RawGetString("__metatable"))
			default:
				L.Push(mt)
			}
		case lua.LString:
			L.Push(vm.strMT)
		default:
			L.Push(lua.LNil)
		}
		return 1
	})
}

// setLibFuncs replaces the library functions that must be deterministic
// or respect read-only views, and returns every library the globals
// show, by name.
func (vm *luaVM) setLibFuncs(g *lua.LTable) map[string]*lua.LTable {
	L, r := vm.L, &vm.run
	set := func(tb *lua.LTable, name string, fn lua.LGFunction) { setFunc(L, tb, name, fn) }
	tab := g.RawGetString("table").(*lua.LTable)
	insert := tab.RawGetString("insert").(*lua.LFunction)
	set(tab, "insert", func(L *lua.LState) int {
		vm.refuseRO(L, L.CheckTable(1))
		return insert.GFunction(L)
	})
	// table.remove and table.sort write only to the array part, which
	// every read-only table has empty: they cannot change one.

	math := g.RawGetString("math").(*lua.LTable)
	set(math, "random", r.mathRandom)
	set(math, "randomseed", func(L *lua.LState) int {
		r.rand.seed(int32(L.CheckInt(1)))
		return 0
	})
	str := g.RawGetString("string").(*lua.LTable)
	set(str, "rep", r.stringRep)
	set(str, "format", luaFormat)
	str.RawSetString("__index", lua.LNil) // gopher-lua's string table doubles as its metatable
	return map[string]*lua.LTable{"table": tab, "math": math, "string": str, "redis": vm.redisLib(),
		"bit": bitLib(L), "cjson": vm.cjsonLib(), "cmsgpack": cmsgpackLib(L), "struct": structLib(L)}
}

// setGlobals makes the globals scripts see: in sorted order so pairs(_G)
// is the same everywhere, each library behind a read-only view, and an
// error for a global that does not exist.
func (vm *luaVM) setGlobals(libs map[string]*lua.LTable) {
	L := vm.L
	g := L.G.Global
	base := L.NewTable()
	g.RawSetString("KEYS", lua.LFalse) // placeholders, replaced by begin
	g.RawSetString("ARGV", lua.LFalse)
	for lib := range libs {
		g.RawSetString(lib, lua.LFalse)
	}
	for _, name := range sortedNames(g) {
		if lib, ok := libs[name]; ok {
			base.RawSetString(name, vm.readOnly(sortedCopy(L, lib)))
		} else {
			base.RawSetString(name, g.RawGetString(name))
		}
	}
	// Strings index the real string table directly (method calls stay one
	// lookup); scripts that ask see a read-only view of {__index = string}.
	strReal := vm.ro[base.RawGetString("string").(*lua.LTable)]
	strMT := L.NewTable()
	strMT.RawSetString("__index", strReal)
	strMT.RawSetString("__metatable", lua.LFalse)
	L.SetMetatable(lua.LString(""), strMT)
	shown := L.NewTable()
	shown.RawSetString("__index", base.RawGetString("string"))
	vm.strMT = vm.readOnly(shown)

	bm := L.NewTable()
	setFunc(L, bm, "__index", func(L *lua.LState) int {
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.ToString(2))
		return 0
	})
	base.Metatable = bm
	vm.base = base
	vm.env = vm.readOnly(base)
	base.RawSetString("_G", vm.env)
	L.Env = vm.env // functions made by loadstring see the same globals
	L.G.Global = base
}

// readOnly returns an empty table that reads through to tb and refuses
// every write.
func (vm *luaVM) readOnly(tb *lua.LTable) *lua.LTable {
	L := vm.L
	view := L.NewTable()
	mt := L.NewTable()
	mt.RawSetString("__index", tb)
	mt.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError(errReadonly)
		return 0
	}))
	mt.RawSetString("__metatable", lua.LFalse)
	view.Metatable = mt
	vm.ro[view] = tb
	return view
}

// shown is the table a read-only view shows, or tb itself.
func (vm *luaVM) shown(tb *lua.LTable) *lua.LTable {
	if real := vm.ro[tb]; real != nil {
		return real
	}
	return tb
}

// refuseRO raises Redis' error when tb is read-only: an error table, as
// Redis' C functions raise it (luaPushError), carrying the caller's line.
func (vm *luaVM) refuseRO(L *lua.LState, tb *lua.LTable) {
	if vm.ro[tb] != nil {
		vm.run.raise(L, errTable(L, "ERR "+errReadonly))
	}
}

func sortedNames(tb *lua.LTable) []string {
	var names []string
	tb.ForEach(func(k, v lua.LValue) {
		if s, ok := k.(lua.LString); ok && v != lua.LNil {
			names = append(names, string(s))
		}
	})
	sort.Strings(names)
	return names
}

func sortedCopy(L *lua.LState, src *lua.LTable) *lua.LTable {
	names := sortedNames(src)
	dst := L.CreateTable(0, len(names))
	for _, n := range names {
		dst.RawSetString(n, src.RawGetString(n))
	}
	return dst
}

// redisLib builds the `redis` table.
func (vm *luaVM) redisLib() *lua.LTable {
	L, r := vm.L, &vm.run
	tb := L.NewTable()
	fns := map[string]lua.LGFunction{
		"call":  func(L *lua.LState) int { return r.call(L, true) },
		"pcall": func(L *lua.LState) int { return r.call(L, false) },
		"status_reply": func(L *lua.LState) int {
			t := L.NewTable()
			t.RawSetString("ok", lua.LString(L.CheckString(1)))
			L.Push(t)
			return 1
		},
		"error_reply": func(L *lua.LState) int {
			s := L.CheckString(1)
			if !strings.HasPrefix(s, "-") {
				s = "-" + s
			}
			L.Push(errTable(L, luaErrText(s)))
			return 1
		},
		"sha1hex": func(L *lua.LState) int {
			if L.GetTop() != 1 {
				r.raise(L, errTable(L, "ERR wrong number of arguments"))
			}
			L.Push(lua.LString(SHA([]byte(L.ToString(1)))))
			return 1
		},
		"replicate_commands": func(L *lua.LState) int { L.Push(lua.LTrue); return 1 },
		"set_repl":           func(L *lua.LState) int { return 0 },
		// Scripts run on every node: a node's log is not the place for
		// their messages, so redis.log checks its arguments as Redis
		// does and writes nothing.
		"log": func(L *lua.LState) int {
			if L.GetTop() < 2 {
				r.raise(L, errTable(L, "ERR redis.log() requires two arguments or more."))
			}
			n, ok := L.Get(1).(lua.LNumber)
			if !ok {
				r.raise(L, errTable(L, "ERR First argument must be a number (log level)."))
			}
			if n < 0 || n > 3 {
				r.raise(L, errTable(L, "ERR Invalid debug level."))
			}
			return 0
		},
		"debug":      func(L *lua.LState) int { return 0 },
		"breakpoint": func(L *lua.LState) int { L.Push(lua.LFalse); return 1 },
		"setresp": func(L *lua.LState) int {
			if L.GetTop() != 1 {
				r.raise(L, errTable(L, "ERR redis.setresp() requires one argument."))
			}
			n, _ := L.Get(1).(lua.LNumber) // lua_tonumber: anything else is 0
			if s, ok := L.Get(1).(lua.LString); ok {
				f, _ := parseLuaNumber(string(s))
				n = lua.LNumber(f)
			}
			switch int(n) {
			case 2:
				r.resp3 = false
			case 3:
				r.resp3 = true
			default:
				r.raise(L, errTable(L, "ERR RESP version must be 2 or 3."))
			}
			return 0
		},
	}
	for name, fn := range fns {
		tb.RawSetString(name, L.NewFunction(fn))
	}
	for name, v := range map[string]int{
		"LOG_DEBUG": 0, "LOG_VERBOSE": 1, "LOG_NOTICE": 2, "LOG_WARNING": 3,
		"REPL_NONE": 0, "REPL_AOF": 1, "REPL_SLAVE": 2, "REPL_REPLICA": 2, "REPL_ALL": 3,
	} {
		tb.RawSetString(name, lua.LNumber(v))
	}
	return tb // the caller copies it in sorted order
}
