package fsm

// Op names a command kind. The numeric values are part of the log format:
// never renumber, only append.
type Op uint8

// Commands. Each carries Time, the proposing leader's clock in FSM
// milliseconds (see doc.go, "Time").
const (
	OpInvalid Op = iota
	// OpTick only advances time; due holds, waiters, sessions and keys
	// expire at the start of every Apply, so a Tick is how an idle cluster
	// makes expiries and hand-offs happen.
	OpTick
	// OpAcquire takes Key (or all of Keys, all-or-nothing) for Owner in
	// Mode, for TTL ms. Wait > 0 enqueues a waiter with ID = ReqID that
	// gives up after Wait ms. Uses Permits, Reentrant, Session, LockDelay,
	// MaxHold, Meta.
	OpAcquire
	// OpRelease ends Owner's hold on Key (or on every key of Keys); with
	// Reentrant set it decrements the hold count instead. Force releases
	// whatever holds the key (administrative, and Redis DEL).
	OpRelease
	// OpExtend resets Owner's hold deadline on Key (or Keys) to now+TTL,
	// capped by the hold's MaxHold.
	OpExtend
	// OpCancelWait removes the waiter whose ID is ReqID (a no-op if it was
	// granted or gone already; the result says which).
	OpCancelWait
	// OpSessionOpen creates session Session with TTL (ms).
	OpSessionOpen
	// OpSessionKeepAlive resets the session's deadline to now+its TTL.
	OpSessionKeepAlive
	// OpSessionClose ends Session cleanly: its holds are released (no
	// lock-delay) and its waiters removed.
	OpSessionClose
	// OpFenceCheck is CheckAndAdvance(Key, Token) on the fence registry.
	OpFenceCheck
	// OpRedis runs one Redis command, Args[0] being its name.
	OpRedis
	// OpEval runs Script (Lua source) with Keys and Args as KEYS and ARGV.
	OpEval
	// OpExec runs Multi (a list of Redis commands, each an Args vector) as
	// one atomic step, after checking Watch; a broken watch replies NilArray.
	OpExec
	// OpScriptLoad records Script in the replicated script cache so that
	// EVALSHA works on every node.
	OpScriptLoad
	// OpEvalSHA runs the cached script whose SHA1 (hex) is Key, with KeysB
	// and Args as KEYS and ARGV; NOSCRIPT when the cache does not hold it
	// at this index.
	OpEvalSHA
	// OpScriptFlush empties the replicated script cache (SCRIPT FLUSH).
	OpScriptFlush
	// OpReown hands Owner's hold on Key to a new owner token, Args[0], in
	// one step: fence, mode, count, deadline and session binding are kept;
	// only Owner's token may do it, and the new token must not already
	// hold Key (an election's Proclaim).
	OpReown
	// OpSetVersion raises the active cluster version to Token (version.go);
	// a lower or equal Token changes nothing. The leader proposes it once
	// every member runs a binary that supports Token.
	OpSetVersion
)

// Mode is how a lock is held.
type Mode uint8

// Lock modes. The numeric values are part of the log and snapshot format.
const (
	// Exclusive: one holder (a mutex, or the writer of a reader-writer lock).
	Exclusive Mode = iota
	// Shared: any number of holders together, none exclusive (readers).
	Shared
	// Semaphore: at most Permits holders at once.
	Semaphore
)

func (m Mode) String() string {
	switch m {
	case Exclusive:
		return "exclusive"
	case Shared:
		return "shared"
	case Semaphore:
		return "semaphore"
	}
	return "invalid"
}

// ParseMode parses the wire names of modes ("exclusive"/"write",
// "shared"/"read", "semaphore").
func ParseMode(s string) (Mode, bool) {
	switch s {
	case "", "exclusive", "write", "mutex":
		return Exclusive, true
	case "shared", "read":
		return Shared, true
	case "semaphore":
		return Semaphore, true
	}
	return 0, false
}

// Command is one replicated state-machine command. Which fields matter
// depends on Op; the rest are zero. Commands are encoded with
// MarshalBinary and decoded with DecodeCommand.
type Command struct {
	Op   Op
	Time int64 // proposing leader's clock, FSM milliseconds

	// ReqID is the client's request id. A mutating command with a ReqID
	// that was already applied returns the first result and changes
	// nothing (see doc.go, "Exactly once"). For an acquire that waits it is
	// also the waiter's id.
	ReqID string

	Key       string
	Keys      []string // multi-lock; when set, Key is ignored
	Owner     string
	Mode      Mode
	Permits   int   // semaphore size, fixed by the first acquirer
	TTL       int64 // ms: lease (acquire/extend) or session TTL
	Wait      int64 // ms to wait in the queue; 0 = try once
	Reentrant bool
	Force     bool
	Session   string
	LockDelay int64 // ms the key stays unavailable after a hold ends by expiry or session loss
	MaxHold   int64 // ms: hard cap on a hold's total life, renewals included; 0 = none
	Token     uint64
	// ReadOnly makes OpEval and OpEvalSHA an EVAL_RO/EVALSHA_RO: a write
	// command called by the script fails and changes nothing.
	ReadOnly bool

	Args   [][]byte   // OpRedis; OpEval, OpEvalSHA ARGV
	KeysB  [][]byte   // OpEval, OpEvalSHA KEYS
	Script []byte     // OpEval, OpScriptLoad
	Multi  [][][]byte // OpExec
	Watch  []WatchKey // OpExec

	// NoForce marks a Redis command (OpRedis, OpEval, OpExec) of a
	// client without the admin permission: a command that would end or
	// change a live lock without its owner's token (DEL, SET over it,
	// PEXPIRE, ...) is refused (redis_noforce.go).
	NoForce bool
	// KeysOnly marks a Redis command of a client limited to key
	// patterns: a script it runs (OpEval, or EVAL inside OpExec) may touch
	// only the keys it declares in KEYS, which the front end checked.
	KeysOnly bool

	// Meta is an acquire's metadata, kept with its hold or waiter; in
	// name order (MetaOf), within Config's Meta limits.
	Meta Meta
}

// WatchKey is a WATCHed key and the version the client saw when it watched
// it. EXEC fails (NilArray) when the key's version changed since.
type WatchKey struct {
	Key     string
	Version uint64
}
