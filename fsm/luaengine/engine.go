package luaengine

import (
	"bytes"
	"container/list"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	lua "github.com/locknode/locknode/internal/lua"
	"github.com/locknode/locknode/internal/lua/parse"

	"github.com/locknode/locknode/fsm/reply"
)

const (
	luaProtoCache = 256 // compiled scripts kept per node
	luaChunkName  = "user_script"
	luaMaxDepth   = 1000 // nesting of a returned table
	luaCallSteps  = 10   // steps a redis.call or redis.pcall costs
	luaForNum     = "__locknode_fornum"
)

var errStepBudget = errors.New("script step budget exhausted")

// Replies of a script stopped by a limit; the budget is in the text so a
// client sees which knob to turn.
const (
	errScriptSteps  = "ERR locknode: script exceeded %d VM steps (MaxScriptSteps) script: %s"
	errScriptMemory = "ERR locknode: script memory limit exceeded (%d bytes, MaxScriptMemory) script: %s"
)

// Host is what a script needs from the key space it runs against.
// The engine knows nothing of the key space itself: redis.call and
// redis.pcall hand their arguments to Call and turn its reply into Lua
// values.
type Host interface {
	// Call runs the command args (args[0] is its name as the script
	// spelled it) for redis.call or redis.pcall and returns its reply; a
	// refusal is an error reply ("ERR ..."), which the script sees as an
	// error table. mem is the script's memory budget: what the host keeps
	// on the script's behalf (an undo copy, say) it charges there before
	// keeping it, and ChargeMem does not return when the budget is spent.
	// Call must be deterministic like the rest of the script.
	Call(mem Budget, args [][]byte) reply.Reply
}

// Budget is the script's memory budget as a Host sees it.
type Budget interface {
	ChargeMem(n int64)
}

// Limits bound one log entry's scripts; every field must be positive
// (fsm.Config.Validate sees to it).
type Limits struct {
	MaxSteps      int // VM instructions (Config.MaxScriptSteps)
	MaxMemory     int // bytes a script may make (Config.MaxScriptMemory)
	MaxValueBytes int // longest string string.rep may build (Config.MaxValueBytes)
}

// Usage is what the scripts of one log entry have used of their Limits
// so far: the budgets are per entry, so the scripts of one EXEC share
// them. Run adds to it.
type Usage struct {
	Steps, Mem int64
}

// Engine compiles and runs scripts. It caches compiled scripts and idle
// interpreters, which are derived, node-local and never replicated:
// losing them only costs a recompile. An Engine is not safe for
// concurrent use; its host serialises scripts as it serialises the
// commands they call.
type Engine struct {
	entries map[string]*list.Element
	lru     *list.List // front = most recently used *Script
	idle    []*luaVM   // interpreters ready for reuse (see getVM)
	built   uint64     // interpreters built (Stats)
}

// Script is a cache entry: a script's compiled form, and a tag its host
// keeps with it (fsm: the script's native family).
type Script struct {
	sha    string
	proto  *lua.FunctionProto
	tag    uint8
	tagged bool
}

// New returns an engine with empty caches.
func New() *Engine {
	return &Engine{entries: map[string]*list.Element{}, lru: list.New()}
}

func (e *Engine) entry(sha string) *Script {
	if el, ok := e.entries[sha]; ok {
		e.lru.MoveToFront(el)
		return el.Value.(*Script)
	}
	en := &Script{sha: sha}
	e.entries[sha] = e.lru.PushFront(en)
	for e.lru.Len() > luaProtoCache {
		last := e.lru.Back()
		e.lru.Remove(last)
		delete(e.entries, last.Value.(*Script).sha)
	}
	return en
}

// Tag returns the tag of the script whose SHA1 is sha, computing it with
// classify the first time (or again after the entry was evicted).
func (e *Engine) Tag(sha string, script []byte, classify func([]byte) uint8) uint8 {
	en := e.entry(sha)
	if !en.tagged {
		en.tag, en.tagged = classify(script), true
	}
	return en.tag
}

// CompileError is a script that does not compile; its text is Redis 7's
// reply to it ("ERR Error compiling script (new function): ...").
type CompileError struct{ Text string }

func (e *CompileError) Error() string { return e.Text }

// Compile returns the compiled script whose SHA1 is sha, from the cache
// when possible. A script that does not compile gives a *CompileError.
func (e *Engine) Compile(sha string, script []byte) (*Script, error) {
	en := e.entry(sha)
	if en.proto != nil {
		return en, nil
	}
	proto, err := compile(script)
	if err != nil {
		return nil, &CompileError{Text: compileErrText(err, script)}
	}
	en.proto = proto
	return en, nil
}

func compile(script []byte) (*lua.FunctionProto, error) {
	// Lua 5.1's grammar first: what it refuses (and gopher-lua might
	// take, such as goto or an ambiguous call across lines), Redis refuses.
	if msg := luaSyntaxError(script); msg != "" {
		return nil, luaSyntaxErr(msg)
	}
	chunk, err := parse.Parse(bytes.NewReader(script), luaChunkName)
	if err != nil {
		return nil, err
	}
	rewriteFors(chunk)
	return lua.Compile(chunk, luaChunkName)
}

// SHA returns the lowercase hex SHA1 of script, the name EVALSHA and
// SCRIPT LOAD use (and redis.sha1hex computes).
func SHA(script []byte) string {
	h := sha1.Sum(script)
	return hex.EncodeToString(h[:])
}

// stepBudget is the context the VM polls once per instruction: Done
// counts the poll and closes once the budget is spent. It reads no clock
// and starts no goroutine.
type stepBudget struct {
	steps, max int64
	exceeded   bool
	L          *lua.LState // its memory budget ends the script too
}

var closedCh = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (b *stepBudget) Deadline() (time.Time, bool) { return time.Time{}, false }
func (b *stepBudget) Value(any) any               { return nil }
func (b *stepBudget) Done() <-chan struct{} {
	b.steps++
	if b.steps > b.max {
		b.exceeded = true
		return closedCh
	}
	if b.L.MemExceeded() {
		return closedCh
	}
	return nil
}
func (b *stepBudget) Err() error {
	if b.exceeded {
		return errStepBudget
	}
	if b.L.MemExceeded() {
		return errors.New(lua.MemErrorText)
	}
	return nil
}

var _ context.Context = (*stepBudget)(nil)

// luaRun is the state of one script execution. It lives inside its
// luaVM and is reset by luaVM.begin, so nothing in it outlives a script.
type luaRun struct {
	vm     *luaVM
	host   Host
	lim    Limits
	sha    string
	resp3  bool
	budget stepBudget
	rand   rand48
	ids    map[lua.LValue]int // tostring names of tables/functions
	// errLine is the line an uncaught error was raised on (errHandler).
	errLine int
	cjson   cjsonConfig // cjson's settings, for this script only
}

// Run runs a compiled script with KEYS and ARGV against host, within
// what lim leaves after used, and adds what it used to used. failed
// reports that the script did not complete (an uncaught error, a limit,
// a reply nested too deep, or a budget spent before it started): its
// host must undo what its commands changed. The reply is the same on
// every node for the same host state, script and arguments.
func (e *Engine) Run(host Host, s *Script, keys, args [][]byte, lim Limits, used *Usage) (res reply.Reply, failed bool) {
	sha := s.sha
	memLeft := int64(lim.MaxMemory) - used.Mem
	if used.Steps >= int64(lim.MaxSteps) {
		return reply.NewError(fmt.Sprintf(errScriptSteps, lim.MaxSteps, sha)), true
	}
	if memLeft <= 0 {
		return reply.NewError(fmt.Sprintf(errScriptMemory, lim.MaxMemory, sha)), true
	}
	vm := e.getVM()
	defer e.putVM(vm)
	r := vm.begin(host, lim, used.Steps, sha, keys, args)
	defer vm.end()
	L := vm.L

	fn := L.NewFunctionFromProto(s.proto)
	fn.Env = vm.env
	L.SetContext(&r.budget)
	L.SetPatternSteps(&r.budget.steps, r.budget.max)
	L.SetMemLimit(memLeft)
	L.Push(fn)
	err := L.PCall(0, 1, vm.errFn)
	memExceeded := L.MemExceeded()
	used.Mem += L.MemUsed()
	used.Steps = r.budget.steps
	failed = err != nil || memExceeded || r.budget.exceeded || r.budget.steps > r.budget.max
	L.SetMemLimit(0)
	L.SetPatternSteps(nil, 0)
	L.RemoveContext()
	if r.budget.exceeded || r.budget.steps > r.budget.max {
		vm.poisoned = true // stopped anywhere in the VM: not trusted again
		return reply.NewError(fmt.Sprintf(errScriptSteps, lim.MaxSteps, sha)), failed
	}
	if memExceeded {
		vm.poisoned = true
		return reply.NewError(fmt.Sprintf(errScriptMemory, lim.MaxMemory, sha)), failed
	}
	if err != nil {
		var ae *lua.ApiError
		if errors.As(err, &ae) && ae.Type == lua.ApiErrorPanic {
			// A Go panic inside the VM: the reply is still the same on
			// every node, but this state is not trusted again.
			vm.poisoned = true
		}
		return reply.NewError(r.errorText(err)), failed
	}
	res, ok := r.toReply(L.Get(-1), 0)
	if !ok {
		return reply.NewError("ERR reached lua stack limit"), true
	}
	return res, failed
}

// errorText renders an uncaught script error as Redis 7.0 does:
// "<msg> script: <sha>, on @user_script:<line>.", the line being where
// the error was raised (errHandler).
func (r *luaRun) errorText(err error) string {
	var obj lua.LValue = lua.LString(err.Error())
	var ae *lua.ApiError
	if errors.As(err, &ae) && ae.Object != nil {
		obj = ae.Object
	}
	var msg string
	if tb, ok := obj.(*lua.LTable); ok {
		switch e := tb.RawGetString("err").(type) {
		case lua.LString, lua.LNumber:
			msg = luaValueString(e)
		default:
			msg = "ERR " + r.tostring(tb)
		}
	} else {
		msg = "ERR " + luaValueString(obj)
	}
	msg = oneLine(msg)
	if r.errLine <= 0 {
		return msg + " script: " + r.sha
	}
	return msg + " script: " + r.sha + ", on @" + luaChunkName + ":" + strconv.Itoa(r.errLine) + "."
}

func byteTable(L *lua.LState, items [][]byte) *lua.LTable {
	tb := L.CreateTable(len(items), 0)
	for i, b := range items {
		tb.RawSetInt(i+1, lua.LString(b))
	}
	return tb
}

// luaForNumber converts a numeric-for bound as Lua 5.1 does: a numeric
// string becomes its number; anything else is left for the VM to refuse.
func luaForNumber(L *lua.LState) int {
	v := L.Get(1)
	if s, ok := v.(lua.LString); ok {
		if n, err := parseLuaNumber(string(s)); err == nil {
			L.Push(lua.LNumber(n))
			return 1
		}
	}
	L.Push(v)
	return 1
}

// parseLuaNumber is lua_str2number: decimal or hex, surrounding space
// allowed.
func parseLuaNumber(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X") {
		n, err := strconv.ParseUint(s[2:], 16, 64)
		return float64(n), err
	}
	if strings.ContainsAny(s, "_pPxX") || strings.EqualFold(s, "nan") || strings.Contains(strings.ToLower(s), "inf") {
		return 0, strconv.ErrSyntax
	}
	return strconv.ParseFloat(s, 64)
}

// tostring names values deterministically (see the package notes).
func (r *luaRun) tostring(v lua.LValue) string {
	if v == r.vm.null {
		return "userdata: (nil)" // glibc's %p of Redis' NULL light userdata
	}
	switch v.(type) {
	case *lua.LTable, *lua.LFunction, *lua.LUserData, *lua.LState:
		if r.ids == nil {
			r.ids = map[lua.LValue]int{}
		}
		id, ok := r.ids[v]
		if !ok {
			id = len(r.ids) + 1
			r.ids[v] = id
		}
		return v.Type().String() + ": 0x" + leftPad(strconv.FormatInt(int64(id), 16), 8)
	}
	return v.String()
}

func getMetaTostring(v lua.LValue) lua.LValue {
	if tb, ok := v.(*lua.LTable); ok && tb.Metatable != nil {
		if mt, ok := tb.Metatable.(*lua.LTable); ok {
			if f := mt.RawGetString("__tostring"); f != lua.LNil {
				return f
			}
		}
	}
	return nil
}

func leftPad(s string, n int) string {
	for len(s) < n {
		s = "0" + s
	}
	return s
}

// luaErrText is Redis' luaPushErrorBuff: "-CODE msg" keeps CODE, anything
// else gets the generic ERR code.
func luaErrText(s string) string {
	code, msg := "ERR", s
	if rest, ok := strings.CutPrefix(s, "-"); ok {
		if i := strings.IndexByte(rest, ' '); i >= 0 {
			code, msg = rest[:i], rest[i+1:]
		} else {
			msg = rest
		}
	}
	return code + " " + strings.Trim(msg, "\r\n")
}

func errTable(L *lua.LState, text string) *lua.LTable {
	t := L.CreateTable(0, 1)
	t.RawSetString("err", lua.LString(text))
	return t
}

// raise throws an error table carrying the caller's line, like a failed
// redis.call in Redis 7.
func (r *luaRun) raise(L *lua.LState, tb *lua.LTable) {
	if w := L.Where(1); w != "" {
		// "user_script:3:" → 3
		w = strings.TrimSuffix(w, ":")
		if i := strings.LastIndexByte(w, ':'); i >= 0 {
			if n, err := strconv.Atoi(w[i+1:]); err == nil {
				tb.RawSetString("line", lua.LNumber(n))
			}
		}
	}
	L.Error(tb, 0)
}

// call is redis.call (raise) and redis.pcall: the host runs the command.
func (r *luaRun) call(L *lua.LState, raise bool) int {
	fail := func(text string) int {
		tb := errTable(L, text)
		if raise {
			r.raise(L, tb)
			return 0
		}
		L.Push(tb)
		return 1
	}
	n := L.GetTop()
	if n == 0 {
		return fail("ERR Please specify at least one argument for this redis lib call")
	}
	// A command does far more than one VM instruction's work.
	L.ChargeSteps(luaCallSteps - 1)
	// One buffer holds every argument's bytes; each argument is a
	// capacity-limited slice of it, so a command that appends to one
	// cannot run into the next.
	size := 0
	for i := 1; i <= n; i++ {
		switch v := L.Get(i).(type) {
		case lua.LString:
			size += len(v)
		case lua.LNumber:
			size += 24
		default:
			return fail("ERR Lua redis lib command arguments must be strings or integers")
		}
	}
	L.ChargeMem(int64(size) + 24*int64(n))
	buf := make([]byte, 0, size)
	args := make([][]byte, n)
	for i := 1; i <= n; i++ {
		start := len(buf)
		switch v := L.Get(i).(type) {
		case lua.LString:
			buf = append(buf, v...)
		case lua.LNumber:
			buf = appendLuaArgNumber(buf, float64(v))
		}
		args[i-1] = buf[start:len(buf):len(buf)]
	}
	res := r.host.Call(L, args)
	if res.Kind == reply.Error {
		return fail(luaErrText("-" + res.Str))
	}
	L.Push(r.toLua(L, res))
	return 1
}

// appendLuaArgNumber formats a number argument as Redis does (%.17g).
func appendLuaArgNumber(buf []byte, f float64) []byte {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 && !(f == 0 && math.Signbit(f)) {
		return strconv.AppendInt(buf, int64(f), 10) // what %.17g prints for these
	}
	return append(buf, fixExp(strconv.AppendFloat(nil, f, 'g', 17, 64))...)
}

// fixExp makes Go's %.17g match C's: C trims trailing zeros of %g and
// writes at least two exponent digits; strconv 'g' with precision 17 keeps
// the zeros.
func fixExp(b []byte) []byte {
	s := string(b)
	mant, exp, hasExp := strings.Cut(s, "e")
	if strings.Contains(mant, ".") {
		mant = strings.TrimRight(mant, "0")
		mant = strings.TrimSuffix(mant, ".")
	}
	if !hasExp {
		return []byte(mant)
	}
	sign := exp[:1]
	digits := exp[1:]
	if len(digits) < 2 {
		digits = "0" + digits
	}
	return []byte(mant + "e" + sign + digits)
}

// toLua converts a command reply to Lua (Redis' RESP2 rules, or RESP3
// after redis.setresp(3)).
func (r *luaRun) toLua(L *lua.LState, res reply.Reply) lua.LValue {
	switch res.Kind {
	case reply.Int:
		return lua.LNumber(res.Int)
	case reply.Bulk:
		L.ChargeMem(int64(len(res.Str)))
		return lua.LString(res.Str)
	case reply.Double:
		if r.resp3 {
			f, _ := strconv.ParseFloat(res.Str, 64)
			t := L.CreateTable(0, 1)
			t.RawSetString("double", lua.LNumber(f))
			return t
		}
		return lua.LString(res.Str)
	case reply.Nil, reply.NilArray:
		if r.resp3 {
			return lua.LNil
		}
		return lua.LFalse
	case reply.Status:
		// One field: CreateTable, not NewTable, which presizes 32 array
		// slots and a 32-entry map (~3.3 KB against ~0.6 KB). A script
		// taking a lock per key gets one of these per SET: with NewTable
		// they were 57 % of the bytes a lockbench scale fill allocated
		// (EVAL of 100 SET NX PX, 454 -> 197 KB per entry), and the fill
		// ran at half the speed, its collections chasing the garbage.
		t := L.CreateTable(0, 1)
		t.RawSetString("ok", lua.LString(res.Str))
		return t
	case reply.Error:
		return errTable(L, res.Str)
	case reply.Bool:
		return lua.LBool(res.Int != 0)
	case reply.Map:
		if r.resp3 {
			// Redis' RESP3 conversion: {map = {field = value, ...}}.
			m := L.CreateTable(0, len(res.Arr)/2)
			for i := 0; i+1 < len(res.Arr); i += 2 {
				m.RawSet(r.toLua(L, res.Arr[i]), r.toLua(L, res.Arr[i+1]))
			}
			t := L.CreateTable(0, 1)
			t.RawSetString("map", m)
			return t
		}
		return r.flatToLua(L, res.Arr)
	case reply.Set:
		if r.resp3 {
			// {set = {member = true, ...}}
			m := L.CreateTable(0, len(res.Arr))
			for _, e := range res.Arr {
				m.RawSet(r.toLua(L, e), lua.LTrue)
			}
			t := L.CreateTable(0, 1)
			t.RawSetString("set", m)
			return t
		}
		return r.flatToLua(L, res.Arr)
	case reply.Pairs:
		if r.resp3 {
			// RESP3 sends score pairs as 2-arrays: {{member, {double = score}}, ...}.
			t := L.CreateTable(len(res.Arr)/2, 0)
			for i := 0; i+1 < len(res.Arr); i += 2 {
				p := L.CreateTable(2, 0)
				p.RawSetInt(1, r.toLua(L, res.Arr[i]))
				p.RawSetInt(2, r.toLua(L, res.Arr[i+1]))
				t.RawSetInt(i/2+1, p)
			}
			return t
		}
		return r.flatToLua(L, res.Arr)
	case reply.Array:
		return r.flatToLua(L, res.Arr)
	}
	return lua.LNil
}

// flatToLua is an array reply as a Lua array (and in RESP2 mode, how
// scripts see maps, sets and score pairs: flat, as Redis' RESP2
// conversion gives them).
func (r *luaRun) flatToLua(L *lua.LState, items []reply.Reply) *lua.LTable {
	t := L.CreateTable(len(items), 0)
	for i, e := range items {
		t.RawSetInt(i+1, r.toLua(L, e))
	}
	return t
}

// toReply converts a script's return value to a reply (Redis 7's
// luaReplyToRedisReply). Booleans depend on redis.setresp: in RESP3 mode
// they are RESP3 booleans (:1 and :0 to a RESP2 client). Tables are read
// in this order: err, ok, double, big_number, verbatim_string, map, set,
// else an array. A map's or set's entries come in the table's own order
// (insertion order here, the same on every node; Redis' is its hash
// order). ok is false when tables nest deeper than luaMaxDepth (a cycle,
// say).
func (r *luaRun) toReply(v lua.LValue, depth int) (reply.Reply, bool) {
	if depth > luaMaxDepth {
		return reply.Reply{}, false
	}
	switch v := v.(type) {
	case lua.LString:
		return reply.NewBulk(string(v)), true
	case lua.LBool:
		if r.resp3 {
			b := reply.Reply{Kind: reply.Bool}
			if v {
				b.Int = 1
			}
			return b, true
		}
		if v {
			return reply.NewInt(1), true
		}
		return reply.Null, true
	case lua.LNumber:
		return reply.NewInt(luaToInt(float64(v))), true
	case *lua.LTable:
		if s, ok := v.RawGetString("err").(lua.LString); ok {
			return reply.NewError(oneLine(string(s))), true
		}
		if s, ok := v.RawGetString("ok").(lua.LString); ok {
			return reply.NewStatus(oneLine(string(s))), true
		}
		if d, ok := v.RawGetString("double").(lua.LNumber); ok {
			return reply.Reply{Kind: reply.Double, Str: fmtDouble(float64(d))}, true
		}
		if s, ok := v.RawGetString("big_number").(lua.LString); ok {
			return reply.Reply{Kind: reply.BigNumber, Str: oneLine(string(s))}, true
		}
		if vt, ok := v.RawGetString("verbatim_string").(*lua.LTable); ok {
			f, okf := vt.RawGetString("format").(lua.LString)
			s, oks := vt.RawGetString("string").(lua.LString)
			if okf && oks {
				format := (string(f) + "   ")[:3]
				return reply.Reply{Kind: reply.Verbatim, Str: format + ":" + string(s)}, true
			}
		}
		if m, ok := v.RawGetString("map").(*lua.LTable); ok {
			return r.pairsReply(m, reply.Map, depth)
		}
		if m, ok := v.RawGetString("set").(*lua.LTable); ok {
			return r.pairsReply(m, reply.Set, depth)
		}
		var out []reply.Reply
		for i := 1; ; i++ {
			e := v.RawGetInt(i)
			if e == lua.LNil {
				break
			}
			x, ok := r.toReply(e, depth+1)
			if !ok {
				return reply.Reply{}, false
			}
			out = append(out, x)
		}
		return reply.NewArray(out...), true
	}
	return reply.Null, true
}

// pairsReply is a {map=...} (keys and values) or {set=...} (keys) reply.
func (r *luaRun) pairsReply(m *lua.LTable, kind reply.Kind, depth int) (reply.Reply, bool) {
	// Next, not ForEach: ForEach walks Go maps, in random order.
	out := reply.Reply{Kind: kind, Arr: []reply.Reply{}}
	for k, val := m.Next(lua.LNil); k != lua.LNil; k, val = m.Next(k) {
		x, ok := r.toReply(k, depth+1)
		if !ok {
			return reply.Reply{}, false
		}
		out.Arr = append(out.Arr, x)
		if kind == reply.Map {
			if x, ok = r.toReply(val, depth+1); !ok {
				return reply.Reply{}, false
			}
			out.Arr = append(out.Arr, x)
		}
	}
	return out, true
}

// fmtDouble is Redis' addReplyDouble text (%.17g, inf, -inf, nan).
func fmtDouble(f float64) string {
	switch {
	case f != f:
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return fmt.Sprintf("%.17g", f)
}

// luaToInt truncates like C's (long long) cast; out-of-range values and
// NaN give math.MinInt64 as on x86-64.
func luaToInt(f float64) int64 {
	if f != f || f >= 9.223372036854775807e18 || f < -9.223372036854775808e18 {
		return -1 << 63
	}
	return int64(f)
}

// rand48 is Redis' redisLrand48 (a 48-bit linear congruential generator).
type rand48 struct{ x uint64 }

func (g *rand48) seed(s int32) { g.x = uint64(uint32(s))<<16 | 0x330E }
func (g *rand48) next() int32 {
	g.x = (0x5DEECE66D*g.x + 0xB) & (1<<48 - 1)
	return int32(g.x >> 17)
}

func (r *luaRun) mathRandom(L *lua.LState) int {
	const randMax = 1<<31 - 1
	f := float64(r.rand.next()%randMax) / randMax
	switch L.GetTop() {
	case 0:
		L.Push(lua.LNumber(f))
	case 1:
		u := L.CheckInt(1)
		if u < 1 {
			L.ArgError(1, "interval is empty")
		}
		L.Push(lua.LNumber(float64(int64(f*float64(u))) + 1))
	case 2:
		l, u := L.CheckInt(1), L.CheckInt(2)
		if l > u {
			L.ArgError(2, "interval is empty")
		}
		L.Push(lua.LNumber(float64(int64(f*float64(u-l+1))) + float64(l)))
	default:
		L.RaiseError("wrong number of arguments")
	}
	return 1
}

func (r *luaRun) stringRep(L *lua.LState) int {
	s := L.CheckString(1)
	n := L.CheckInt(2)
	if n <= 0 || s == "" {
		L.Push(lua.LString(""))
		return 1
	}
	if int64(len(s))*int64(n) > int64(r.lim.MaxValueBytes) {
		L.RaiseError("string.rep result longer than MaxValueBytes")
	}
	L.ChargeMem(int64(len(s)) * int64(n))
	L.Push(lua.LString(strings.Repeat(s, n)))
	return 1
}
