package api

import (
	"fmt"
	"strconv"
	"strings"
)

// Lock states the dashboard's listing filters on (LockFilter.State).
const (
	StateAll       = "all"       // every matching key
	StateHeld      = "held"      // at least one holder
	StateFree      = "free"      // no holder
	StateWaiters   = "waiters"   // at least one waiter queued (a free lock's waiters wait out its lock-delay)
	StateContended = "contended" // held, with waiters queued behind the holders
)

// LockStates lists the states LockFilter.State accepts, for error texts
// and the dashboard's menu.
var LockStates = []string{StateAll, StateHeld, StateFree, StateWaiters, StateContended}

// MaxMetaTerms bounds the metadata terms of one LockFilter.
const MaxMetaTerms = 16

// MetaTerm matches a holder's metadata: the name is present and, when
// HasValue, its value equals Value exactly.
type MetaTerm struct {
	Name     string
	Value    string
	HasValue bool
}

// ParseMetaTerm reads "name=value" (that value exactly) or "name" (any
// value). The name must be non-empty.
func ParseMetaTerm(s string) (MetaTerm, error) {
	name, value, has := strings.Cut(s, "=")
	name = strings.TrimSpace(name)
	if name == "" {
		return MetaTerm{}, badRequest("meta filter %q: want name=value or name", s)
	}
	return MetaTerm{Name: name, Value: value, HasValue: has}, nil
}

func (m MetaTerm) String() string {
	if m.HasValue {
		return m.Name + "=" + m.Value
	}
	return m.Name
}

// LockFilter selects locks for the dashboard's listing
// (GET /v1/ui/locks): every condition set must hold.
type LockFilter struct {
	State string // one of LockStates; "" is StateAll
	// Owner, when set, requires a holder with exactly this owner.
	Owner string
	// Meta requires one holder whose metadata matches every term.
	Meta []MetaTerm
}

// Validate checks f against l: a known state, an owner within the owner
// bound, at most MaxMetaTerms terms within the metadata bounds.
func (f *LockFilter) Validate(l Limits) error {
	switch f.State {
	case "", StateAll, StateHeld, StateFree, StateWaiters, StateContended:
	default:
		return badRequest("state %q: want one of %s", f.State, strings.Join(LockStates, ", "))
	}
	if f.Owner != "" {
		if err := l.checkToken("owner", f.Owner, false); err != nil {
			return err
		}
	}
	if len(f.Meta) > MaxMetaTerms {
		return fmt.Errorf("%w: %d meta filters is over the limit of %d", ErrLimit, len(f.Meta), MaxMetaTerms)
	}
	for _, m := range f.Meta {
		if m.Name == "" {
			return badRequest("meta filter with an empty name")
		}
		if len(m.Name) > l.MaxMetaKeyBytes {
			return fmt.Errorf("%w: meta filter name of %d bytes is over the limit of %d bytes", ErrLimit, len(m.Name), l.MaxMetaKeyBytes)
		}
		if len(m.Value) > l.MaxMetaValueBytes {
			return fmt.Errorf("%w: meta filter %q value of %d bytes is over the limit of %d bytes", ErrLimit, m.Name, len(m.Value), l.MaxMetaValueBytes)
		}
	}
	return nil
}

// Match reports whether li passes every condition of f.
func (f *LockFilter) Match(li *LockInfo) bool {
	held, waiting := len(li.Holders) > 0, len(li.Waiters) > 0
	switch f.State {
	case StateHeld:
		if !held {
			return false
		}
	case StateFree:
		if held {
			return false
		}
	case StateWaiters:
		if !waiting {
			return false
		}
	case StateContended:
		if !held || !waiting {
			return false
		}
	}
	if f.Owner == "" && len(f.Meta) == 0 {
		return true
	}
	for i := range li.Holders {
		if f.holderMatches(&li.Holders[i]) {
			return true
		}
	}
	return false
}

func (f *LockFilter) holderMatches(h *Holder) bool {
	if f.Owner != "" && h.Owner != f.Owner {
		return false
	}
	for _, m := range f.Meta {
		v, ok := h.Meta[m.Name]
		if !ok || (m.HasValue && v != m.Value) {
			return false
		}
	}
	return true
}

// LockTotals counts a set of locks as a whole, not one page of it.
type LockTotals struct {
	Locks     int `json:"locks"`     // keys in the set
	Held      int `json:"held"`      // with at least one holder
	Holders   int `json:"holders"`   // holds, summed over the locks (a shared lock has several)
	Waiters   int `json:"waiters"`   // queued acquires, summed over the locks
	Contended int `json:"contended"` // held, with waiters
	// Sessions counts the distinct sessions the set's holds are bound
	// to (GET /v1/status counts every open session).
	Sessions int `json:"sessions"`
}

// LockTally adds locks up into LockTotals.
type LockTally struct {
	LockTotals
	sessions map[string]struct{}
}

// Add counts li.
func (t *LockTally) Add(li *LockInfo) {
	t.Locks++
	t.Holders += len(li.Holders)
	t.Waiters += len(li.Waiters)
	if len(li.Holders) > 0 {
		t.Held++
		if len(li.Waiters) > 0 {
			t.Contended++
		}
	}
	for _, h := range li.Holders {
		if h.Session == "" {
			continue
		}
		if t.sessions == nil {
			t.sessions = map[string]struct{}{}
		}
		if _, ok := t.sessions[h.Session]; !ok {
			t.sessions[h.Session] = struct{}{}
			t.Sessions++
		}
	}
}

// LockPage is one page of the dashboard's filtered listing
// (GET /v1/ui/locks) with the totals of everything that matched.
type LockPage struct {
	Locks  []LockInfo `json:"locks"`
	Total  int        `json:"total"`  // matching locks, in all pages
	Offset int        `json:"offset"` // of Locks[0] in the whole order
	Totals LockTotals `json:"totals"`
	// Partial is set when the node stopped reading at its scan bound:
	// the totals count only the keys read, and a narrower prefix gives
	// exact ones.
	Partial bool `json:"partial,omitempty"`
}

// Wait buckets of the activity samples: bucket 0 counts queue waits
// under WaitBucketEdgesMs[0], bucket i (1 ≤ i < len) waits from edge
// i-1 up to (not including) edge i, and the last bucket everything from
// the last edge on. Steps of 1-2.5-5 so each label is a round range.
var WaitBucketEdgesMs = [...]int64{1, 2, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000}

// WaitBuckets is the number of wait buckets.
const WaitBuckets = len(WaitBucketEdgesMs) + 1

// WaitBucket returns the bucket of a wait of ms milliseconds.
func WaitBucket(ms int64) int {
	for i, e := range WaitBucketEdgesMs {
		if ms < e {
			return i
		}
	}
	return len(WaitBucketEdgesMs)
}

// WaitBucketLabel names bucket b as a range ("10–25 ms", "500 ms–1 s",
// "> 10 s"); "" for a bucket that does not exist.
func WaitBucketLabel(b int) string {
	n := len(WaitBucketEdgesMs)
	switch {
	case b < 0 || b > n:
		return ""
	case b == 0:
		return "< " + fmtWaitMs(WaitBucketEdgesMs[0], true)
	case b == n:
		return "> " + fmtWaitMs(WaitBucketEdgesMs[n-1], true)
	}
	lo, hi := WaitBucketEdgesMs[b-1], WaitBucketEdgesMs[b]
	if (lo < 1000) == (hi < 1000) { // one unit for both ends
		return fmtWaitMs(lo, false) + "–" + fmtWaitMs(hi, true)
	}
	return fmtWaitMs(lo, true) + "–" + fmtWaitMs(hi, true)
}

// fmtWaitMs writes ms in ms below a second, else in seconds, with the
// unit when unit is set.
func fmtWaitMs(ms int64, unit bool) string {
	var s, u string
	if ms < 1000 {
		s, u = strconv.FormatInt(ms, 10), " ms"
	} else {
		s, u = strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64), " s"
	}
	if unit {
		s += u
	}
	return s
}

// WaitBucketLabels lists every bucket's label, in order.
func WaitBucketLabels() []string {
	out := make([]string, WaitBuckets)
	for i := range out {
		out[i] = WaitBucketLabel(i)
	}
	return out
}
