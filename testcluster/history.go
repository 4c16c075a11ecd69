package testcluster

import (
	"fmt"
	"sort"
	"sync"
	"time"
)

// OpKind is what a recorded operation did.
type OpKind uint8

// Operation kinds.
const (
	OpAcquire    OpKind = iota + 1 // blocking acquire (waits in the queue)
	OpTryAcquire                   // acquire that never waits
	OpRelease
	OpExtend
	OpGet // read of the exclusive holder
)

func (k OpKind) String() string {
	switch k {
	case OpAcquire:
		return "acquire"
	case OpTryAcquire:
		return "try"
	case OpRelease:
		return "release"
	case OpExtend:
		return "extend"
	case OpGet:
		return "get"
	}
	return "op?"
}

// Outcome classifies a result.
type Outcome uint8

// Outcomes.
const (
	// OK: the operation took effect (granted, released, extended, read).
	OK Outcome = iota + 1
	// Refused: a definite answer that it did not take effect (locked, not
	// held, not the owner, wait timed out).
	Refused
	// Unknown: it may or may not have taken effect (leader lost, node
	// crashed, timeout, connection broken).
	Unknown
)

func (o Outcome) String() string {
	switch o {
	case OK:
		return "ok"
	case Refused:
		return "refused"
	case Unknown:
		return "unknown"
	}
	return "?"
}

// Refusal reasons the model distinguishes.
const (
	ReasonLocked      = "locked"
	ReasonNotHeld     = "not_held"
	ReasonWaitTimeout = "wait_timeout"
)

// Op is one recorded operation. Times are on the History's neutral
// monotonic clock (since the History began).
type Op struct {
	ID     int
	Client int
	Via    string // "native n1", "http", "resp n0 set", ...
	Kind   OpKind
	Key    string
	Owner  string
	TTL    time.Duration

	Call, Return time.Duration

	Outcome Outcome
	Reason  string // for Refused: ReasonLocked, ReasonNotHeld, ReasonWaitTimeout, or the error
	Err     string // the error text, if any

	// Acquire/try/extend OK: the grant's fence and deadline (FSM ms);
	// 0 when the protocol does not say (SET NX).
	Fence    uint64
	Deadline int64
	// Release OK: the hold ended.
	Released bool
	// Get OK: the holder ("" none), its fence and deadline, and the FSM
	// time of the read (0 when unknown).
	Holder   string
	ReadTime int64
}

func (o Op) String() string {
	s := fmt.Sprintf("#%d c%d %s %s(%s", o.ID, o.Client, o.Via, o.Kind, o.Key)
	if o.Owner != "" {
		s += "," + o.Owner
	}
	if o.TTL > 0 {
		s += fmt.Sprintf(",ttl=%v", o.TTL)
	}
	s += fmt.Sprintf(") [%v,%v] -> %s", o.Call, o.Return, o.Outcome)
	switch {
	case o.Outcome == Refused:
		s += " " + o.Reason
	case o.Outcome == Unknown:
		s += " " + o.Err
	case o.Kind == OpGet:
		s += fmt.Sprintf(" holder=%q fence=%d deadline=%d at=%d", o.Holder, o.Fence, o.Deadline, o.ReadTime)
	case o.Kind == OpRelease:
		s += fmt.Sprintf(" released=%v", o.Released)
	default:
		s += fmt.Sprintf(" fence=%d deadline=%d", o.Fence, o.Deadline)
	}
	return s
}

// History is a concurrent-safe log of operations.
type History struct {
	start time.Time
	mu    sync.Mutex
	ops   []Op
}

// NewHistory starts an empty history; its clock starts now.
func NewHistory() *History { return &History{start: time.Now()} }

// Now is the history's clock: time since it began.
func (h *History) Now() time.Duration { return time.Since(h.start) }

// Start is the real time the history began (for relating RealTime).
func (h *History) Start() time.Time { return h.start }

// Add appends a finished operation (its ID is assigned) — also how tests
// build fake histories for the checkers.
func (h *History) Add(op Op) {
	h.mu.Lock()
	defer h.mu.Unlock()
	op.ID = len(h.ops)
	h.ops = append(h.ops, op)
}

// Ops returns the operations in the order they were added.
func (h *History) Ops() []Op {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Op(nil), h.ops...)
}

// Summary counts operations by kind and outcome.
func (h *History) Summary() string {
	counts := map[string]int{}
	for _, o := range h.Ops() {
		counts[o.Kind.String()+"/"+o.Outcome.String()]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := ""
	for _, k := range keys {
		s += fmt.Sprintf("%s=%d ", k, counts[k])
	}
	return s
}
