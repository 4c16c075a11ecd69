package fsm

import (
	"errors"
	"fmt"
)

// Config bounds what one command may do. Limits are checked in Apply; a
// command over a limit is refused with ErrLimit (or ErrBadTTL) and changes
// nothing. All nodes of a cluster must use the same Config: it is part of
// the determinism contract.
type Config struct {
	MaxKeyBytes      int   // longest key (lock name); default 512
	MaxOwnerBytes    int   // longest owner token; default 256
	MinTTL           int64 // shortest lease, ms; default 1
	MaxTTL           int64 // longest lease, ms; also bounds waits, lock-delays and max holds; default 24h
	MaxWaitersPerKey int   // queue length per key; default 10000
	MaxPermits       int   // largest semaphore; default 10000
	MaxKeys          int   // keys in the key space (locks and values); default 10,000,000
	MaxScriptBytes   int   // longest Lua script; default 64 KiB
	MaxScriptSteps   int   // Lua VM steps per script run (see below); default 100,000
	MaxValueBytes    int   // longest Redis string/field value; default 1 MiB
	ReqIDWindow      int64 // ms a request id is remembered (without a session); default 10 min
	// MaxReqIDs bounds the request ids remembered (oldest forgotten
	// first); default 1,000,000. Each costs about 150 bytes of heap with
	// a 26-byte id, so the default bound is about 150 MB. The cluster
	// gives every native acquire, release and extend an id, so under load
	// this bound, not ReqIDWindow, decides how long a retry is answered
	// exactly once: at 10,000 remembered commands a second, 100 s.
	MaxReqIDs int
	// MaxLoadedScripts bounds the scripts SCRIPT LOAD keeps (until SCRIPT
	// FLUSH); past it SCRIPT LOAD is refused. Default 1000: lock clients
	// load a handful, and at MaxScriptBytes each the bound is 64 MiB.
	// Every node must use the same value (it decides replies).
	MaxLoadedScripts int
	// MaxEvalScripts bounds the scripts EVAL caches for a later EVALSHA;
	// past it the least recently used is evicted. Default 500, as Redis
	// 7.4. Every node must use the same value (it decides replies).
	MaxEvalScripts int
	// MaxMemory bounds the key space's accounted size in bytes (see
	// memory.go): past it, commands that would grow it are refused with
	// ErrOutOfMemory (Redis: -OOM) while releases, deletes, expiries and
	// extends still work. Default 1 GiB; NoMaxMemory (-1) turns it off.
	// It is a fixed number, not a share of the machine's memory, because
	// every node must refuse the same commands (Config is the same on
	// every node); the accounted size is an estimate of the live heap
	// the key space takes (bench/results/README.md#key-space-memory).
	MaxMemory int64

	// MaxScriptSteps (above) bounds the Lua VM instructions of one log
	// entry's scripts (a redis.call counts 10; pattern matching, sort,
	// unpack and the like count their work), so that the worst script
	// stalls applies on every node for tens of milliseconds, not seconds
	// (see bench/results/README.md#lua-step-budget).
	//
	// MaxScriptMemory bounds the bytes one log entry's scripts may
	// allocate: strings they build, tables and their growth, closures,
	// replies of redis.call. It is a deterministic count of what the
	// script asked for, never credited back (garbage counts too), so every
	// node stops a script at the same instruction; real heap use can be a
	// few times the count. Default 32 MiB.
	MaxScriptMemory int
	// MaxExecCommands and MaxExecBytes bound a MULTI block: the commands
	// one EXEC runs and their total argument bytes. Past either, EXEC is
	// refused whole (EXECABORT); the RESP bridge refuses the command
	// that goes past them while queueing. Defaults 5,000 commands and
	// 64 MiB: the largest EXEC then stalls applies for tens of
	// milliseconds (see bench/results/README.md#lua-step-budget).
	MaxExecCommands int
	MaxExecBytes    int

	// MaxMetaEntries, MaxMetaKeyBytes, MaxMetaValueBytes and MaxMetaBytes
	// bound an acquire's metadata (Command.Meta), which its hold or
	// waiter keeps: entries, a name's and a value's length, and all
	// names and values together. Defaults 16, 64, 256 and 1 KiB.
	MaxMetaEntries    int
	MaxMetaKeyBytes   int
	MaxMetaValueBytes int
	MaxMetaBytes      int
}

// NoMaxMemory as Config.MaxMemory turns the key-space memory limit off.
const NoMaxMemory = -1

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		MaxKeyBytes:      512,
		MaxOwnerBytes:    256,
		MinTTL:           1,
		MaxTTL:           24 * 60 * 60 * 1000,
		MaxWaitersPerKey: 10000,
		MaxPermits:       10000,
		MaxKeys:          10_000_000,
		MaxScriptBytes:   64 << 10,
		MaxScriptSteps:   100_000,
		MaxLoadedScripts: 1000,
		MaxEvalScripts:   500,
		MaxScriptMemory:  32 << 20,
		MaxExecCommands:  5_000,
		MaxExecBytes:     64 << 20,
		MaxValueBytes:    1 << 20,
		ReqIDWindow:      10 * 60 * 1000,
		MaxReqIDs:        1_000_000,
		MaxMemory:        1 << 30,

		MaxMetaEntries:    16,
		MaxMetaKeyBytes:   64,
		MaxMetaValueBytes: 256,
		MaxMetaBytes:      1 << 10,
	}
}

// Validate reports a Config that cannot work.
func (c Config) Validate() error {
	switch {
	case c.MaxKeyBytes <= 0, c.MaxOwnerBytes <= 0, c.MaxWaitersPerKey <= 0, c.MaxKeys <= 0, c.MaxPermits <= 0,
		c.MaxScriptBytes <= 0, c.MaxScriptSteps <= 0, c.MaxValueBytes <= 0, c.MaxReqIDs <= 0:
		return fmt.Errorf("fsm: config: limits must be positive")
	case c.MaxScriptMemory <= 0, c.MaxExecCommands <= 0, c.MaxExecBytes <= 0:
		return fmt.Errorf("fsm: config: limits must be positive")
	case c.MaxMetaEntries <= 0, c.MaxMetaKeyBytes <= 0, c.MaxMetaValueBytes <= 0, c.MaxMetaBytes <= 0:
		return fmt.Errorf("fsm: config: meta limits must be positive")
	case c.MinTTL <= 0 || c.MaxTTL < c.MinTTL:
		return fmt.Errorf("fsm: config: need 0 < MinTTL <= MaxTTL")
	case c.ReqIDWindow <= 0:
		return fmt.Errorf("fsm: config: ReqIDWindow must be positive")
	case c.MaxLoadedScripts <= 0 || c.MaxEvalScripts <= 0:
		return fmt.Errorf("fsm: config: MaxLoadedScripts and MaxEvalScripts must be positive")
	case c.MaxMemory <= 0 && c.MaxMemory != NoMaxMemory:
		return fmt.Errorf("fsm: config: MaxMemory must be positive, or NoMaxMemory")
	}
	return nil
}

// Kind is the type of the value stored at a key.
type Kind uint8

// Value kinds; part of the snapshot format.
const (
	KindNone Kind = iota
	KindString
	KindHash
	KindSet
	KindZSet
	KindList
	KindLock
)

// Value is what one key holds. A lock keeps its state and first hold
// inline, so a held lock is one 96-byte allocation besides its key and
// owner strings; a Redis value's kind, deadline and body are behind
// valueData, which plain locks leave nil. A million held locks are a
// million Values.
type Value struct {
	Version uint64 // raft index of the last change (WATCH)

	// The lock state (KindLock only); see Lock.
	h0 hold // the first holder; h0.Owner == "" when there is none
	// holdDue is the time of the earliest pending dueHold item for this
	// key (0 = none; scheduleHold), so a lease extended in a loop keeps
	// one heap item. Derived; rebuilt on Restore.
	holdDue int64

	*valueData
}

// Lock is a Value of KindLock seen as a native lock (Value.lock):
// holders in grant order, the first one inline (most locks have exactly
// one). What most locks leave zero (more holders, a semaphore's size, a
// lock-delay) is behind valueData.lockRare. It shares Value's layout, so
// the view costs nothing and a lock stays one allocation, but its
// methods (Fence, Permits, the holders) are the lock's alone: a Redis
// value has none of them.
type Lock Value

// Kind is the type of the value.
func (v *Value) Kind() Kind {
	if v.valueData == nil {
		return KindLock
	}
	return v.valueData.kind
}

// lock returns a KindLock value as a lock.
func (v *Value) lock() *Lock { return (*Lock)(v) }

// deadline is a Redis value's expiry, absolute FSM ms (0 = none); a value
// whose deadline is <= now is gone for every read and write. A lock has
// none of its own (its holds have leases).
func (v *Value) deadline() int64 {
	if v.valueData == nil {
		return 0
	}
	return v.valueData.expireAt
}

// valueData is the body of a Redis value (exactly the field matching its
// kind is used), or a lock's rarely used state (lockRare).
type valueData struct {
	kind     Kind
	expireAt int64 // a Redis value's deadline, see Value.deadline
	Str      []byte
	Hash     map[string][]byte
	Set      map[string]struct{}
	ZSet     map[string]float64
	List     [][]byte
	lockRare *lockRare
	mem      int64 // a collection's accounted content (memory.go)
}

// newValue returns an empty Redis value of kind.
func newValue(kind Kind) *Value {
	return &Value{valueData: &valueData{kind: kind}}
}

// lockRare is what most locks leave zero, kept out of Value so a plain
// held lock stays one small allocation.
type lockRare struct {
	more       []*hold // holders after the first, grant order
	permits    int     // semaphore size; 0 for mutex / reader-writer locks
	delayUntil int64   // FSM ms: no grant before this (lock-delay); 0 = none
	// fence is the highest fence of a hold that ended while the lock
	// stayed: the lock's fence is the highest of it and its holders'.
	fence uint64
}

// rare returns l's rarely used state, or nil.
func (l *Lock) rare() *lockRare {
	if l.valueData == nil {
		return nil
	}
	return l.valueData.lockRare
}

// rareAlloc returns l's rarely used state, allocating it.
func (l *Lock) rareAlloc() *lockRare {
	if l.valueData == nil {
		l.valueData = &valueData{kind: KindLock}
	}
	if l.valueData.lockRare == nil {
		l.valueData.lockRare = &lockRare{}
	}
	return l.valueData.lockRare
}

// numHolders is the number of holds on l.
func (l *Lock) numHolders() int {
	if l.h0.Owner == "" {
		return 0
	}
	if x := l.rare(); x != nil {
		return 1 + len(x.more)
	}
	return 1
}

// holder returns the i-th hold in grant order (0 <= i < numHolders). The
// pointer is valid until a hold is added or removed.
func (l *Lock) holder(i int) *hold {
	if i == 0 {
		return &l.h0
	}
	return l.rare().more[i-1]
}

// Fence is the highest fence granted on this key while the lock exists.
func (l *Lock) Fence() uint64 {
	var f uint64
	if x := l.rare(); x != nil {
		f = x.fence
		for _, h := range x.more {
			f = max(f, h.Fence)
		}
	}
	return max(f, l.h0.Fence)
}

// nextDeadline is the earliest of l's holds' own deadlines; 0 = none.
func (l *Lock) nextDeadline() int64 {
	var next int64
	for i := 0; i < l.numHolders(); i++ {
		if d := l.holder(i).Deadline; d != 0 && (next == 0 || d < next) {
			next = d
		}
	}
	return next
}

// addHolder appends a hold and returns it; the caller sets every field
// (h0 of a lock without holders is zero: removeHolder clears it).
func (l *Lock) addHolder() *hold {
	if l.h0.Owner == "" {
		return &l.h0
	}
	h := &hold{}
	x := l.rareAlloc()
	x.more = append(x.more, h)
	return h
}

// removeHolder removes the i-th hold and returns it. The lock keeps its
// fence when it stays (other holders, or a lock-delay: see keepFence).
func (l *Lock) removeHolder(i int) hold {
	h := *l.holder(i)
	x := l.rare()
	switch {
	case x == nil || len(x.more) == 0:
		l.h0 = hold{}
	case i == 0:
		l.h0 = *x.more[0]
		x.more = dropAt(x.more, 0)
	default:
		x.more = dropAt(x.more, i-1)
	}
	if l.numHolders() > 0 || x != nil {
		l.keepFence(h.Fence)
	}
	return h
}

func dropAt(s []*hold, i int) []*hold {
	copy(s[i:], s[i+1:])
	s[len(s)-1] = nil
	if s = s[:len(s)-1]; len(s) == 0 {
		return nil
	}
	return s
}

// keepFence records the fence of a hold that ended while the lock stays.
func (l *Lock) keepFence(f uint64) {
	if f > l.Fence() {
		l.rareAlloc().fence = f
	}
}

// Permits is the semaphore size; 0 for mutex / reader-writer locks.
func (l *Lock) Permits() int {
	if x := l.rare(); x != nil {
		return x.permits
	}
	return 0
}

// DelayUntil is the FSM ms before which nothing is granted (lock-delay);
// 0 = none.
func (l *Lock) DelayUntil() int64 {
	if x := l.rare(); x != nil {
		return x.delayUntil
	}
	return 0
}

func (l *Lock) setDelayUntil(at int64) {
	if l.rare() == nil && at == 0 {
		return
	}
	l.rareAlloc().delayUntil = at
}

// Hold is one owner's hold on a lock, as queries return it.
type Hold struct {
	Owner     string
	Mode      Mode
	Count     int // reentrant hold count (>= 1)
	Reentrant bool
	Fence     uint64
	Deadline  int64 // lease end, FSM ms
	TTL       int64 // lease length used by extend, ms
	Session   string
	LockDelay int64
	HardLimit int64 // FSM ms the hold can never pass (MaxHold); 0 = none
	Meta      Meta  // the acquire's metadata (shared: never change it)
	Granted   int64 // FSM ms of the grant (a reentrant acquire keeps the first)
	Extended  int64 // FSM ms of the last renewal of the lease; 0 = never
}

// maxHoldCount bounds a reentrant hold's count (it is stored in 32 bits).
const maxHoldCount = 1<<31 - 1

// hold is a Hold as the table stores it: what most holds leave zero (a
// session, a lock-delay, a hard limit) is behind one pointer.
type hold struct {
	Owner    string
	Fence    uint64
	Deadline int64 // lease end, FSM ms
	TTL      int64 // lease length used by extend, ms
	// Granted is the FSM time of the grant; Extended of the last renewal
	// (extend, PEXPIRE, a reentrant acquire that moved the deadline), 0 =
	// never. Inline: every hold has a grant time, and the two together
	// fit the Value's allocation size class that one alone takes.
	Granted, Extended int64
	opt               *holdOpts
	Count             int32 // reentrant hold count (1..maxHoldCount)
	Mode              Mode
	Reentrant         bool
}

type holdOpts struct {
	session   string
	lockDelay int64
	hardLimit int64 // FSM ms the hold can never pass (MaxHold); 0 = none
	// meta is the hold's metadata packed into one string (packMeta):
	// one allocation rather than a slice and a string per name and value.
	meta string
}

func (h *hold) session() string {
	if h.opt == nil {
		return ""
	}
	return h.opt.session
}

func (h *hold) lockDelay() int64 {
	if h.opt == nil {
		return 0
	}
	return h.opt.lockDelay
}

func (h *hold) hardLimit() int64 {
	if h.opt == nil {
		return 0
	}
	return h.opt.hardLimit
}

// meta returns the hold's metadata (a new slice over its packed form).
func (h *hold) meta() Meta {
	if h.opt == nil {
		return nil
	}
	return unpackMeta(h.opt.meta)
}

// setOpts sets the rarely used fields, allocating only when one is set.
func (h *hold) setOpts(session string, lockDelay, hardLimit int64, meta Meta) {
	if session == "" && lockDelay == 0 && hardLimit == 0 && len(meta) == 0 {
		h.opt = nil
		return
	}
	h.opt = &holdOpts{session: session, lockDelay: lockDelay, hardLimit: hardLimit, meta: packMeta(meta)}
}

// view returns h as a Hold.
func (h *hold) view() Hold {
	return Hold{Owner: h.Owner, Mode: h.Mode, Count: int(h.Count), Reentrant: h.Reentrant, Fence: h.Fence,
		Deadline: h.Deadline, TTL: h.TTL, Session: h.session(), LockDelay: h.lockDelay(), HardLimit: h.hardLimit(),
		Meta: h.meta(), Granted: h.Granted, Extended: h.Extended}
}

// Waiter is a queued acquire (possibly over several keys).
type Waiter struct {
	ID        string
	Keys      []string
	Owner     string
	Mode      Mode
	Reentrant bool
	Permits   int
	TTL       int64
	Deadline  int64 // end of the wait, FSM ms
	Session   string
	LockDelay int64
	MaxHold   int64
	Enqueued  uint64 // index of the entry that queued it
	Queued    int64  // FSM ms of that entry
	Meta      Meta   // the acquire's metadata, which its holds keep (shared: never change it)
}

// Session groups holds and waiters under one keep-alive.
type Session struct {
	ID       string
	TTL      int64
	Deadline int64
}

// applyCtx is the per-Apply scratch state.
type applyCtx struct {
	index  uint64
	now    int64
	events []Event

	// at is the time of the due item being handled by expireDue. Due
	// handlers end only what fell due by at (not by now), so a stale heap
	// entry is a no-op and a table restored from a snapshot (whose heap
	// holds no stale entries) handles due work in exactly the same order.
	at int64
	// freed lists keys deleted through del; their waiters are offered the
	// key by flushFreed once the current step (a due item or the command)
	// is complete, so a Redis command that deletes and re-creates a key in
	// one step never hands it to a waiter in between.
	freed []string
	// lostFresh lists keys on which a hold granted in this entry (fence =
	// index) has already ended in it: another grant there in this entry
	// would carry the same fence (pump defers it to the next entry).
	lostFresh []string
	// readOnly is set while an EVAL_RO or EVALSHA_RO script runs: every
	// write command it calls fails (runCmd).
	readOnly bool
	// luaSteps and luaMem are what the entry's scripts have used of
	// Config.MaxScriptSteps and MaxScriptMemory (luaengine.Usage).
	luaSteps, luaMem int64
	// noForce: the command's Command.NoForce. proof: the running
	// script's ARGV, whose tokens prove ownership (redis_noforce.go).
	noForce bool
	proof   [][]byte
	// keysOnly: Command.KeysOnly; inScript and scriptKeys: a script runs,
	// with these KEYS.
	keysOnly   bool
	inScript   bool
	scriptKeys [][]byte
	// keyspace: emit EvKeyspace (Table.SetKeyspaceEvents).
	keyspace bool
	// quietChanges: emit drops EvChanged and EvValueChanged (a batch's
	// renewals while Table.SkipRenewalChanges is on).
	quietChanges bool
	// backlog: expireDue stopped at DueEventBudget with due items left
	// (expiry_bound.go); the command's share is done by settleFor.
	backlog bool
	// dueQuiet counts the due items that acted without an event (an
	// empty session's end, a tombstone's): they count toward the budget.
	dueQuiet int
	// slab is where emit cuts the events of the next entries from; it
	// outlives the entry (Apply carries it over), the events it hands
	// out belong to their Results.
	slab []Event
}

// eventSlab is how many events one allocation of applyCtx.slab holds.
const eventSlab = 32

func (c *applyCtx) emit(e Event) {
	if c.quietChanges && (e.Kind == EvChanged || e.Kind == EvValueChanged) {
		return
	}
	if c.events == nil {
		// A release emits two events (released, changed), and so does a
		// grant: room for two, cut from a slab shared by the entries of
		// many applies instead of an allocation per entry. The capacity
		// is capped at the two, so a third event (or a caller appending
		// to Result.Events) moves this entry's events out of the slab
		// rather than into a neighbour's.
		if cap(c.slab)-len(c.slab) < 2 {
			c.slab = make([]Event, 0, eventSlab)
		}
		n := len(c.slab)
		c.slab = c.slab[:n+2]
		c.events = c.slab[n : n : n+2]
	}
	c.events = append(c.events, e)
}

// batchOutputs is what a node's Apply may leave out of an OpBatchRenew
// entry's output because nothing on the node reads it. Output only: no
// decision reads these switches.
type batchOutputs struct {
	// skipBatch: leave out the per-renewal results (SkipBatchResults).
	skipBatch bool
	// skipRenewChanges: renewals emit no EvChanged/EvValueChanged
	// (SkipRenewalChanges).
	skipRenewChanges bool
}

// Table is the replicated lock table and key space. It is not safe for
// concurrent use: the node serialises Apply and guards queries.
//
// Table composes its tenants, each a type holding its own state (see
// docs/DESIGN.md "The parts of the table"): the key-space core
// (keySpace: values, expiry, memory, request ids), the lock ops and the
// Redis commands with their script host. Table itself holds what spans
// them: applying an entry, due work, snapshots and the cluster version.
type Table struct {
	*keySpace
	// lockSpace is the lock ops (lockTable, and sessionTable under it)
	// as the key-space core and the Redis commands reach them.
	*lockSpace

	// actx is Apply's scratch context, reused so an entry costs no
	// allocation for it (the Lua engine makes it escape).
	actx applyCtx

	// scripts is the script host (redis_script.go) over the Redis
	// commands (redisTable, redis.go).
	*scripts

	// renewals is decodeRenewals' slab, reused from entry to entry, and
	// renewLists the slab of their KEYS and ARGV lists.
	renewals   []Command
	renewLists [][]byte
	// batchOutputs says which outputs of a batch of renewals this node
	// leaves out.
	batchOutputs
	// warmSum keeps warmRenewals' reads from being optimised away.
	warmSum uint64

	// halted is the *VersionError of an entry this binary cannot apply:
	// once set, Apply changes nothing and returns it (version.go).
	halted error
	// next is the state of the synthetic next version (version_next.go,
	// build tag locknode_next); empty otherwise.
	next nextState
}

// New returns an empty table. cfg must be valid (see Config.Validate);
// zero fields take their defaults.
func New(cfg Config) *Table {
	d := DefaultConfig()
	fill := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	fill64 := func(v *int64, def int64) {
		if *v == 0 {
			*v = def
		}
	}
	fill(&cfg.MaxKeyBytes, d.MaxKeyBytes)
	fill(&cfg.MaxOwnerBytes, d.MaxOwnerBytes)
	fill64(&cfg.MinTTL, d.MinTTL)
	fill64(&cfg.MaxTTL, d.MaxTTL)
	fill(&cfg.MaxWaitersPerKey, d.MaxWaitersPerKey)
	fill(&cfg.MaxPermits, d.MaxPermits)
	fill(&cfg.MaxKeys, d.MaxKeys)
	fill(&cfg.MaxScriptBytes, d.MaxScriptBytes)
	fill(&cfg.MaxScriptSteps, d.MaxScriptSteps)
	fill(&cfg.MaxLoadedScripts, d.MaxLoadedScripts)
	fill(&cfg.MaxEvalScripts, d.MaxEvalScripts)
	fill(&cfg.MaxScriptMemory, d.MaxScriptMemory)
	fill(&cfg.MaxExecCommands, d.MaxExecCommands)
	fill(&cfg.MaxExecBytes, d.MaxExecBytes)
	fill(&cfg.MaxValueBytes, d.MaxValueBytes)
	fill64(&cfg.ReqIDWindow, d.ReqIDWindow)
	fill(&cfg.MaxReqIDs, d.MaxReqIDs)
	fill64(&cfg.MaxMemory, d.MaxMemory)
	fill(&cfg.MaxMetaEntries, d.MaxMetaEntries)
	fill(&cfg.MaxMetaKeyBytes, d.MaxMetaKeyBytes)
	fill(&cfg.MaxMetaValueBytes, d.MaxMetaValueBytes)
	fill(&cfg.MaxMetaBytes, d.MaxMetaBytes)
	ks := newKeySpace(cfg, nil)
	st := &sessionTable{keySpace: ks}
	wq := &waitQueue{keySpace: ks, sessionTable: st}
	lt := &lockTable{keySpace: ks, sessionTable: st, waitQueue: wq}
	st.locks, wq.locks = lt, lt
	ls := &lockSpace{lockTable: lt}
	ks.keyLocks = ls
	rt := &redisTable{keySpace: ks, locks: ls}
	t := &Table{keySpace: ks, lockSpace: ls, scripts: &scripts{redisTable: rt}}
	t.reset()
	return t
}

func (t *Table) reset() {
	t.keySpace.reset()
	t.lockTable.reset()
	t.sessionTable.reset()
	t.waitQueue.reset()
	t.lockSpace.reset()
	*t.scripts = scripts{redisTable: t.scripts.redisTable}
	t.scripts.init()
	t.halted = nil
	t.resetNext()
}

// ApplyBytes decodes and applies one encoded command. A command that fails
// to decode is refused with ErrBadCommand identically on every node; the
// index still counts as applied and time does not move.
func (t *Table) ApplyBytes(index uint64, b []byte) Result {
	if t.halted != nil {
		return Result{Index: index, Err: t.halted}
	}
	cmd, err := DecodeCommand(b)
	if err != nil {
		if errors.Is(err, ErrNeedVersion) {
			t.halted = err
			return Result{Index: index, Err: err}
		}
		if index > t.applied {
			t.applied = index
		}
		return Result{Err: fmt.Errorf("%w: %v", ErrBadCommand, err)}
	}
	return t.Apply(index, cmd)
}

// Apply applies one command at log index index. It is deterministic: the
// same sequence of (index, command) gives the same results and state on
// every node. Time is max(previous time, cmd.Time): a command time that
// goes backwards is clamped, never applied.
//
// Apply is total: a panic while applying (a bug) is recovered and the
// command refused with ErrBadCommand, so the node stays up and a restart
// replays the entry the same way. Whatever the command changed before the
// panic stays changed, identically on every node (the panic is as
// deterministic as the rest); the interpreters are dropped, as a panic
// may have left one in any state.
func (t *Table) Apply(index uint64, cmd *Command) (res Result) {
	defer func() {
		if p := recover(); p != nil {
			t.scripts.engine.DropIdle()
			// Events already emitted (a waiter granted by an expiry) did
			// happen: their waiters must hear of them.
			res = Result{Index: index, Err: fmt.Errorf("%w: applying it panicked: %v", ErrBadCommand, p), Events: t.actx.events}
		}
	}()
	if t.halted != nil {
		return Result{Index: index, Err: t.halted}
	}
	halt, refuse := t.checkVersion(cmd)
	var renewals []Command
	if halt == nil && refuse == nil && cmd.Op == OpBatchRenew {
		renewals, halt, refuse = t.decodeRenewals(cmd)
	}
	if halt != nil {
		// Nothing changes, not even the applied index: the entry is not
		// applied, and neither is any after it.
		t.halted = halt
		return Result{Index: index, Err: halt}
	}
	if index > t.applied {
		t.applied = index
	}
	if cmd.Time > t.now {
		t.now = cmd.Time
	}
	ctx := &t.actx
	*ctx = applyCtx{index: index, now: t.now, freed: ctx.freed[:0], lostFresh: ctx.lostFresh[:0], noForce: cmd.NoForce, keysOnly: cmd.KeysOnly,
		keyspace: t.keyspaceEvents, slab: ctx.slab}
	t.expireDue(ctx)

	if refuse != nil {
		return Result{Index: index, Now: ctx.now, Events: ctx.events, Err: refuse}
	}
	settler{t}.settleFor(ctx, cmd, renewals)
	if r, ok := t.dedupe(ctx, cmd); ok {
		r.Now = ctx.now
		r.Events = ctx.events
		return r
	}
	var r Result
	switch cmd.Op {
	case OpSetVersion:
		r = t.setVersion(cmd)
	case OpTick:
	case OpAcquire:
		r = t.acquire(ctx, cmd)
	case OpRelease:
		r = t.release(ctx, cmd)
	case OpExtend:
		r = t.extend(ctx, cmd)
	case OpCancelWait:
		r = t.cancelWait(ctx, cmd)
	case OpSessionOpen:
		r = t.sessionOpen(ctx, cmd)
	case OpSessionKeepAlive:
		r = t.sessionKeepAlive(ctx, cmd)
	case OpSessionClose:
		r = t.sessionClose(ctx, cmd)
	case OpFenceCheck:
		r = t.fenceCheck(ctx, cmd)
	case OpRedis:
		r = Result{Reply: t.redis(ctx, cmd.Args)}
	case OpEval:
		r = Result{Reply: t.eval(ctx, cmd.Script, cmd.KeysB, cmd.Args, cmd.ReadOnly)}
	case OpEvalSHA:
		r = Result{Reply: t.evalSHA(ctx, cmd.Key, cmd.KeysB, cmd.Args, cmd.ReadOnly)}
	case OpScriptFlush:
		r = Result{Reply: t.scriptFlush()}
	case OpExec:
		r = Result{Reply: t.exec(ctx, cmd.Watch, cmd.Multi)}
	case OpScriptLoad:
		r = Result{Reply: t.scriptLoad(ctx, cmd.Script)}
	case OpReown:
		r = t.reown(ctx, cmd)
	case OpBatchRenew:
		r = t.applyRenewals(ctx, renewals)
	default:
		var ok bool
		if r, ok = t.applyNext(ctx, cmd); !ok {
			r = Result{Err: fmt.Errorf("%w: unknown op %d", ErrBadCommand, cmd.Op)}
		}
	}
	t.flushFreed(ctx)
	r.Index = index
	t.remember(ctx, cmd, r)
	r.Now = ctx.now
	r.Events = ctx.events
	return r
}
