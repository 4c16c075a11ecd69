package lua

import "github.com/locknode/locknode/internal/lua/pm"

// Memory budget (a locknode addition; see PATCH.md).
//
// gopher-lua has no allocation hook, so a script could build gigabytes of
// strings and tables between two instructions the step budget counts. The
// budget charges, before the allocation happens, every allocation a script
// controls: string results (concatenation, the string library,
// table.concat), new tables and the growth of their array and hash parts,
// and closures. Charges are computed from the sizes the script asked for,
// never from the Go heap, and are never credited back, so the same script
// with the same input is charged the same bytes and stopped at the same
// instruction on every machine.
//
// Past the limit, the charge raises a Lua error. A pcall in the script can
// catch that error, but MemExceeded stays true: the embedder's per-
// instruction context (SetContext) is expected to end the script at its
// next instruction, as it does for a step budget, and every further charge
// raises again.

// Approximate costs, in bytes, of what the budget charges. They model the
// Go representation closely enough to keep a script within a few times
// its limit of real heap; exactness is not the point, determinism is.
const (
	memString    = 16 // a string value's header, besides its bytes
	memTable     = 96 // an LTable without its parts
	memSlot      = 16 // one array slot (an LValue interface)
	memHashEntry = 80 // one hash entry: map slot, key list and key index
	memClosure   = 64 // an LFunction without its upvalues
	memUpvalue   = 24
	memCompile   = 64 // per source byte given to load/loadstring: tokens, syntax tree, prototype
)

// MemErrorText is the message of the error a charge past the limit raises.
const MemErrorText = "script memory limit exceeded"

type memBudget struct {
	used, limit int64 // limit <= 0: nothing is charged
	exceeded    bool
	L           *LState
	steps       pm.Steps // pattern matching's share of the step budget
}

// SetPatternSteps makes the pattern functions (find, match, gmatch, gsub)
// add their work to *used and fail past max, so that one call cannot run
// for minutes between two instructions; used == nil stops counting. The
// embedder polls the same counter per instruction (SetContext).
func (ls *LState) SetPatternSteps(used *int64, max int64) {
	ls.mem.steps = pm.Steps{Used: used, Max: max}
}

// ChargeSteps adds n to the step counter given to SetPatternSteps and
// raises StepsErrorText past its limit. Library functions whose cost
// grows with their input (sort, insert and remove in the middle of an
// array, unpack, concat, a length scan) call it, so that one call cannot
// do a million steps' work for the price of one.
func (ls *LState) ChargeSteps(n int64) { ls.mem.chargeSteps(n) }

// StepsErrorText is the message of the error ChargeSteps raises.
const StepsErrorText = "script step budget exhausted"

func (m *memBudget) chargeSteps(n int64) {
	if m == nil || m.steps.Used == nil || n <= 0 {
		return
	}
	*m.steps.Used += n
	if *m.steps.Used > m.steps.Max {
		m.L.RaiseError("%s", StepsErrorText)
	}
}

// findPattern is pm.Find under L's pattern step budget.
func (ls *LState) findPattern(p string, src []byte, offset, limit int) []*pm.MatchData {
	mds, err := pm.FindSteps(&ls.mem.steps, p, src, offset, limit)
	if err != nil {
		ls.RaiseError("%s", err.Error())
	}
	return mds
}

// SetMemLimit starts charging allocations of L against limit bytes, from
// zero (limit <= 0 stops charging). Charges raise Lua errors, so limit
// must be set only while L runs protected (PCall).
func (ls *LState) SetMemLimit(limit int64) {
	ls.mem = memBudget{limit: limit, L: ls, steps: ls.mem.steps}
}

// MemUsed returns the bytes charged since SetMemLimit.
func (ls *LState) MemUsed() int64 { return ls.mem.used }

// MemExceeded reports whether a charge went past the limit since
// SetMemLimit.
func (ls *LState) MemExceeded() bool { return ls.mem.exceeded }

// ChargeMem charges n bytes to L's budget, raising the limit error when
// they do not fit. Library functions outside this package (an embedder's
// string.rep or string.format) call it before they allocate.
func (ls *LState) ChargeMem(n int64) { ls.mem.charge(n) }

// charge adds n bytes; n may be any non-negative count (products are
// computed by the callers with mulSat, so they cannot wrap).
func (m *memBudget) charge(n int64) {
	if m == nil || m.limit <= 0 {
		return
	}
	if n < 0 || n > m.limit-m.used {
		m.used = m.limit
		m.exceeded = true
		m.L.RaiseError("%s", MemErrorText)
		return
	}
	m.used += n
	if m.exceeded {
		m.L.RaiseError("%s", MemErrorText)
	}
}

// mulSat returns a*b for non-negative a and b, saturating instead of
// wrapping.
func mulSat(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > (1<<62)/b {
		return 1 << 62
	}
	return a * b
}

// newTableL makes a table that charges its growth to L's budget.
func (ls *LState) newTableL(acap, hcap int) *LTable {
	ls.mem.charge(memTable + mulSat(int64(max(acap, 0)), memSlot) + mulSat(int64(max(hcap, 0)), memHashEntry))
	tb := newLTable(acap, hcap)
	tb.mem = &ls.mem
	return tb
}

// chargeArray charges the array slots a store at index (0-based) adds to
// tb, and the initial allocation when the array does not exist yet.
func (tb *LTable) chargeArray(index int) {
	if tb.mem == nil || tb.mem.limit <= 0 {
		return
	}
	n := int64(index-len(tb.array)) + 1
	if tb.array == nil {
		n = max(n, defaultArrayCap)
	}
	if n > 0 {
		tb.mem.charge(mulSat(n, memSlot))
	}
}

// chargeHashString is chargeHash for a string key; kept apart so that
// an uncharged table does not box the key.
func (tb *LTable) chargeHashString(key string) {
	if tb.mem.limit <= 0 {
		return
	}
	if _, ok := tb.strdict[key]; ok {
		return // (a key deleted and set again is charged again)
	}
	n := int64(memHashEntry + len(key))
	if tb.strdict == nil && tb.dict == nil {
		n += defaultHashCap * memHashEntry / 2
	}
	tb.mem.charge(n)
}

// chargeHash charges a new hash key of tb (and the hash part's first
// allocation).
func (tb *LTable) chargeHash(key LValue) {
	if tb.mem == nil || tb.mem.limit <= 0 {
		return
	}
	if _, ok := tb.k2i[key]; ok {
		return // the key list and index keep a deleted key: no growth
	}
	n := int64(memHashEntry)
	if s, ok := key.(LString); ok {
		n += int64(len(s))
	}
	if tb.strdict == nil && tb.dict == nil {
		n += defaultHashCap * memHashEntry / 2
	}
	tb.mem.charge(n)
}
