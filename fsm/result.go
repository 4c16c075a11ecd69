package fsm

import (
	"errors"

	"github.com/locknode/locknode/fsm/reply"
)

// Refusals. They travel in Result.Err (never as raft errors); callers use
// errors.Is. Each API boundary maps them to wire text in one table.
var (
	ErrBadCommand     = errors.New("fsm: malformed command")
	ErrLocked         = errors.New("fsm: held by another owner")
	ErrNotOwner       = errors.New("fsm: not the owner")
	ErrNotHeld        = errors.New("fsm: not held")
	ErrNoSuchKey      = errors.New("fsm: no such key")
	ErrWaitTimeout    = errors.New("fsm: wait timed out")
	ErrCancelled      = errors.New("fsm: wait cancelled")
	ErrPermits        = errors.New("fsm: permits conflict with the semaphore's size")
	ErrWrongType      = errors.New("fsm: key holds another kind of value")
	ErrSessionUnknown = errors.New("fsm: unknown or expired session")
	ErrSessionExists  = errors.New("fsm: session already exists")
	ErrLimit          = errors.New("fsm: over a limit")
	ErrBadTTL         = errors.New("fsm: ttl out of range")
	ErrStaleFence     = errors.New("fsm: fence token older than the highest seen")
	ErrLockDelay      = errors.New("fsm: key in lock-delay")
	ErrBadVersion     = errors.New("fsm: unknown snapshot version")
	ErrMaxHold        = errors.New("fsm: max hold time reached")
	ErrOutOfMemory    = errors.New("fsm: key space over its memory limit (MaxMemory)")
)

// Result is what Apply returns for one command. Refusals are in Err; the
// table is unchanged when Err is set (except for Wait results of a queued
// waiter, which are events, not results).
type Result struct {
	Err error

	// Index is the log index of the entry this result came from.
	Index uint64
	// Now is the FSM clock (ms) of that entry. A lease's length as granted
	// is Deadline - Now; a queued acquire's Now is when its wait began.
	Now int64

	// Acquire/extend/release outcomes.
	Granted  bool   // the hold exists now (acquire) or was extended (extend)
	Queued   bool   // acquire enqueued a waiter (ID = Command.ReqID); its outcome comes as an Event
	Fence    uint64 // fencing token of the hold
	Deadline int64  // FSM ms: end of the lease (granted) or of the wait (queued)
	Count    int    // reentrant hold count after the command
	Released bool   // release: the hold is gone (count reached zero)

	// Reply is the outcome of OpRedis, OpEval and OpExec.
	Reply reply.Reply

	// Batch is the result of each renewal of an OpBatchRenew entry, in
	// order (batch_renew.go); their events are the entry's Events.
	Batch []Result

	// Events lists what this command caused beyond its own result: grants
	// to queued waiters, waiters that timed out or were cancelled, holds
	// that ended, and PUBLISHed messages. The node uses them to complete
	// requests blocked on those waiters, without polling. Events are never
	// part of the exactly-once cache.
	Events []Event
}

// EventKind names an Event.
type EventKind uint8

// Event kinds.
const (
	// EvGranted: waiter WaiterID now holds Keys (Fence, Deadline, Count).
	EvGranted EventKind = iota + 1
	// EvWaitEnded: waiter WaiterID left the queue without the lock; Err
	// says why (ErrWaitTimeout, ErrCancelled, ErrSessionUnknown).
	EvWaitEnded
	// EvReleased: Owner's hold on Key ended; Reason says how.
	EvReleased
	// EvPublish: a PUBLISH of Message on Channel (RESP subscribers).
	EvPublish
	// EvChanged: the lock or value at Key changed (mirror).
	EvChanged
	// EvValueChanged: the Redis value (not a lock) at Key was written,
	// changed or removed (client-side caching invalidates on it).
	EvValueChanged
	// EvRestored: the whole table was replaced from a snapshot (no Key);
	// the node emits it, never Apply.
	EvRestored
	// EvKeyspace: a Redis keyspace notification: Message is the event's
	// name as Redis spells it ("set", "del", "expire", "expired", "new",
	// "hset" ...) and Key its key, in the order the entry produced them
	// (notify.go). Local output for the RESP bridge's
	// notify-keyspace-events; nothing in the table depends on it.
	EvKeyspace
)

// Reason says why a hold ended.
type Reason uint8

// Reasons.
const (
	ReasonRelease       Reason = iota + 1 // the owner released it
	ReasonExpired                         // its TTL (or max hold) ran out
	ReasonSession                         // its session expired
	ReasonSessionClosed                   // its session was closed
	ReasonForced                          // a forced release or Redis DEL/overwrite
)

// Event is one consequence of a command; see Result.Events.
type Event struct {
	Kind     EventKind
	WaiterID string
	Key      string
	Keys     []string
	Owner    string
	Fence    uint64
	Deadline int64
	Count    int
	Now      int64 // EvGranted: FSM clock of the granting entry
	// Granted: EvReleased: FSM time the hold was granted (0: unknown, a
	// hold restored from a snapshot older than format 4).
	Granted int64
	Reason  Reason
	Err     error
	Channel string
	Message string
}
