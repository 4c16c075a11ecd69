package testcluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// ErrNotLinearizable and ErrCheckTimeout are CheckLinearizable's failures.
var (
	ErrNotLinearizable = errors.New("testcluster: history is not linearizable")
	ErrCheckTimeout    = errors.New("testcluster: linearizability check timed out")
)

// lockState is the model's view of one exclusive lock. FSM times are
// known only where a result reports them (a grant's deadline minus its
// TTL is the FSM time of the grant), so the model keeps bounds and
// branches where an outcome is unknown.
type lockState struct {
	Holder   string
	Soft     bool   // from an acquire of unknown outcome: may have ended at any moment
	Fence    uint64 // holder's fence; 0 unknown
	Deadline int64  // holder's deadline (FSM ms); 0 unknown
	DMin     int64  // lower bound of the deadline while unknown
	// LastFence is the highest fence granted on the key; Now a lower
	// bound of the FSM time of the last write linearized.
	LastFence uint64
	Now       int64
}

func (s lockState) cleared() lockState {
	s.Holder, s.Soft, s.Fence, s.Deadline, s.DMin = "", false, 0, 0, 0
	return s
}

// end is the earliest FSM time the current hold can have ended by.
func (s lockState) end() int64 {
	if s.Holder == "" {
		return 0
	}
	if s.Deadline != 0 {
		return s.Deadline
	}
	return s.DMin
}

// mayBeHeld: some FSM time >= Now finds the hold alive.
func (s lockState) mayBeHeld() bool {
	return s.Holder != "" && (s.Deadline == 0 || s.Deadline > s.Now)
}

// grantAt is the state after owner is granted at FSM time g (0 unknown).
func (s lockState) grant(op Op) (lockState, bool) {
	ttl := op.TTL.Milliseconds()
	if op.Fence != 0 && op.Fence <= s.LastFence {
		return s, false // fences strictly increase
	}
	n := s.cleared()
	n.Holder = op.Owner
	if op.Deadline != 0 && ttl > 0 {
		g := op.Deadline - ttl
		if g < s.Now {
			return s, false // FSM time runs forward in log order
		}
		if s.Holder != "" && s.end() > g {
			return s, false // the previous hold was still alive
		}
		n.Deadline, n.Now = op.Deadline, g
	} else {
		// Unknown grant time: at or after Now and after the previous hold.
		g := max(s.Now, s.end())
		n.Now = g
		n.DMin = g + ttl
	}
	if op.Fence != 0 {
		n.Fence, n.LastFence = op.Fence, op.Fence
	}
	return n, true
}

func stepLock(s lockState, op Op) []lockState {
	starts := []lockState{s}
	if s.Holder != "" && s.Soft {
		// A hold won by an acquire whose outcome is unknown may have been
		// released by the node on the client's behalf (a cancelled wait).
		starts = append(starts, s.cleared())
	}
	var out []lockState
	for _, st := range starts {
		out = append(out, stepOne(st, op)...)
	}
	return out
}

// stepOne returns the states op, with its outcome, may lead to from s;
// none when the outcome is impossible from s.
func stepOne(s lockState, op Op) []lockState {
	switch op.Kind {
	case OpAcquire, OpTryAcquire:
		return stepAcquire(s, op)
	case OpRelease:
		return stepRelease(s, op)
	case OpExtend:
		return stepExtend(s, op)
	case OpGet:
		return stepGet(s, op)
	}
	return nil
}

// stepAcquire returns the states an acquire or try-acquire with its
// outcome may lead to.
func stepAcquire(s lockState, op Op) []lockState {
	switch op.Outcome {
	case OK:
		if n, ok := s.grant(op); ok {
			return []lockState{n}
		}
		return nil
	case Refused:
		if op.Reason == ReasonLocked && !s.mayBeHeld() {
			return nil
		}
		return []lockState{s}
	default:
		n, _ := s.grant(Op{Owner: op.Owner, TTL: op.TTL})
		n.Soft = true
		return []lockState{s, n}
	}
}

// stepRelease returns the states a release with its outcome may lead to.
func stepRelease(s lockState, op Op) []lockState {
	mine := s.Holder == op.Owner
	switch op.Outcome {
	case OK:
		if !mine || !s.mayBeHeld() {
			return nil
		}
		return []lockState{s.cleared()}
	case Refused:
		if mine { // it can only have expired
			n := s.cleared()
			n.Now = max(s.Now, s.end())
			return []lockState{n}
		}
		return []lockState{s}
	default:
		if mine {
			return []lockState{s, s.cleared()}
		}
		return []lockState{s}
	}
}

// stepExtend returns the states an extend with its outcome may lead to.
func stepExtend(s lockState, op Op) []lockState {
	mine := s.Holder == op.Owner
	ttl := op.TTL.Milliseconds()
	switch op.Outcome {
	case OK:
		if !mine {
			return nil
		}
		if op.Fence != 0 && s.Fence != 0 && op.Fence != s.Fence {
			return nil
		}
		n := s
		n.Soft = false
		if op.Fence != 0 {
			n.Fence = op.Fence
		}
		if op.Deadline == 0 {
			n.DMin = max(s.end(), s.Now+ttl)
			n.Deadline = 0
			return []lockState{n}
		}
		t := op.Deadline - ttl
		if t < s.Now || (s.Deadline != 0 && s.Deadline <= t) {
			return nil
		}
		n.Deadline, n.DMin, n.Now = op.Deadline, 0, t
		return []lockState{n}
	case Refused:
		if mine {
			n := s.cleared()
			n.Now = max(s.Now, s.end())
			return []lockState{n}
		}
		return []lockState{s}
	default:
		if mine {
			n := s
			n.DMin = max(s.end(), s.Now+ttl)
			n.Deadline = 0
			return []lockState{s, n}
		}
		return []lockState{s}
	}
}

// stepGet returns the states a read with its outcome is consistent
// with.
func stepGet(s lockState, op Op) []lockState {
	if op.Outcome != OK {
		return []lockState{s}
	}
	if op.Holder == "" {
		// The hold, if any, expired by the read's (unknown) time, so
		// that time, and every later write's, is past its end: a read
		// must never see as ended a lease that a later write still
		// finds alive. (A maybe-hold that never was is stepOne's
		// cleared start, where end() is 0.)
		n := s.cleared()
		n.Now = max(s.Now, s.end())
		return []lockState{n}
	}
	if s.Holder != op.Holder {
		return nil
	}
	if op.Fence != 0 && s.Fence != 0 && op.Fence != s.Fence {
		return nil
	}
	if op.Deadline != 0 && s.Deadline != 0 && op.Deadline != s.Deadline {
		return nil
	}
	if op.ReadTime != 0 && (op.ReadTime < s.Now || (s.Deadline != 0 && s.Deadline <= op.ReadTime)) {
		return nil
	}
	// A hold seen by a read stays Soft: the node may still end it on
	// its client's behalf (the cancel of a wait whose client gave up
	// can be applied any time later; chaos seed 14007).
	n := s
	if n.Fence == 0 && op.Fence != 0 {
		n.Fence = op.Fence
		n.LastFence = max(n.LastFence, op.Fence)
	}
	if n.Deadline == 0 && op.Deadline != 0 {
		if op.Deadline < s.DMin {
			return nil
		}
		n.Deadline, n.DMin = op.Deadline, 0
	}
	return []lockState{n}
}

// LockModel is the porcupine model of one exclusive lock per key, with
// fences and leases. Inputs are Op values (results included); outputs
// are unused.
func LockModel() porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
			byKey := map[string][]porcupine.Operation{}
			var keys []string
			for _, o := range h {
				k := o.Input.(Op).Key
				if _, ok := byKey[k]; !ok {
					keys = append(keys, k)
				}
				byKey[k] = append(byKey[k], o)
			}
			sort.Strings(keys)
			out := make([][]porcupine.Operation, 0, len(keys))
			for _, k := range keys {
				out = append(out, byKey[k])
			}
			return out
		},
		Init: func() []interface{} { return []interface{}{lockState{}} },
		Step: func(state, input, _ interface{}) []interface{} {
			next := stepLock(state.(lockState), input.(Op))
			out := make([]interface{}, len(next))
			for i, n := range next {
				out[i] = n
			}
			return out
		},
		Equal: func(a, b interface{}) bool { return a.(lockState) == b.(lockState) },
		DescribeOperation: func(input, _ interface{}) string {
			return input.(Op).String()
		},
		DescribeState: func(state interface{}) string {
			s := state.(lockState)
			soft := ""
			if s.Soft {
				soft = " (maybe)"
			}
			return fmt.Sprintf("holder=%q%s fence=%d deadline=%d dmin=%d last=%d now=%d",
				s.Holder, soft, s.Fence, s.Deadline, s.DMin, s.LastFence, s.Now)
		},
	}
	return nm.ToModel()
}

// UnknownHorizon is how long after its client gave up an operation of
// unknown outcome may still take effect, for the linearizability check.
// Unbounded would be exact but makes the search explode; a request that
// is still in flight this long after its client's deadline (a crashed
// node's log entry kept through elections, say) would show up as a
// violation, to be looked into, never as a missed one.
var UnknownHorizon = 10 * time.Second

// Operations converts a history for porcupine: reads of unknown outcome
// are left out (they changed nothing); other unknown operations may have
// taken effect at any time from their call until UnknownHorizon after
// their return.
func Operations(ops []Op) []porcupine.Operation {
	out := make([]porcupine.Operation, 0, len(ops))
	for _, o := range ops {
		if o.Kind == OpGet && o.Outcome != OK {
			continue
		}
		ret := int64(o.Return)
		if o.Outcome == Unknown {
			ret += int64(UnknownHorizon)
		}
		out = append(out, porcupine.Operation{ClientId: o.Client, Input: o, Call: int64(o.Call), Return: ret})
	}
	return out
}

// CheckLinearizable checks ops against LockModel within timeout. On a
// violation it writes porcupine's HTML visualisation to a file in
// ArtifactDir() and names it in the error.
func CheckLinearizable(ops []Op, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = math.MaxInt64
	}
	m := LockModel()
	res, info := porcupine.CheckOperationsVerbose(m, Operations(ops), timeout)
	switch res {
	case porcupine.Ok:
		return nil
	case porcupine.Unknown:
		// A search that runs out of time is often one that is exhausting
		// a history with no linearization: keep the history so that
		// RecheckHistory can look at it key by key without a deadline.
		where := ""
		if path, err := WriteHistory(ops); err == nil {
			where = "; history in " + path
		}
		return fmt.Errorf("%w after %v (%d operations)%s", ErrCheckTimeout, timeout, len(ops), where)
	}
	histNote := ""
	if hist, err := WriteHistory(ops); err == nil {
		histNote = " and " + hist
	}
	f, err := os.CreateTemp(ArtifactDir(), "porcupine-*.html")
	if err != nil {
		return fmt.Errorf("%w (visualisation not written: %v)", ErrNotLinearizable, err)
	}
	path := f.Name()
	f.Close()
	if err := porcupine.VisualizePath(m, info, path); err != nil {
		return fmt.Errorf("%w (visualisation not written: %v)", ErrNotLinearizable, err)
	}
	// The history as text too, sorted by call time, for grep.
	sorted := append([]Op(nil), ops...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Call < sorted[j].Call })
	var b strings.Builder
	for _, o := range sorted {
		b.WriteString(o.String() + "\n")
	}
	txt := strings.TrimSuffix(path, ".html") + ".txt"
	_ = os.WriteFile(txt, []byte(b.String()), 0o644)
	return fmt.Errorf("%w: visualisation in %s, history in %s%s", ErrNotLinearizable, path, txt, histNote)
}

// WriteHistory writes ops as JSON to a new file in ArtifactDir (for
// ReadHistory) and returns its path.
func WriteHistory(ops []Op) (string, error) {
	f, err := os.CreateTemp(ArtifactDir(), "history-*.json")
	if err != nil {
		return "", err
	}
	defer f.Close()
	if err := json.NewEncoder(f).Encode(ops); err != nil {
		return "", err
	}
	return f.Name(), f.Close()
}

// ReadHistory reads a history written by WriteHistory.
func ReadHistory(path string) ([]Op, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var ops []Op
	if err := json.Unmarshal(b, &ops); err != nil {
		return nil, fmt.Errorf("testcluster: %s: %w", path, err)
	}
	return ops, nil
}

// KeyCheck is RecheckHistory's verdict on one key.
type KeyCheck struct {
	Key     string
	Ops     int
	Unknown int // operations of unknown outcome
	Took    time.Duration
	Err     error // nil, ErrNotLinearizable or ErrCheckTimeout (wrapped)
}

// RecheckHistory checks ops one key at a time, each within timeout, so
// that a history whose whole check timed out says which key is hard and
// whether it is linearizable after all.
func RecheckHistory(ops []Op, timeout time.Duration) []KeyCheck {
	byKey := map[string][]Op{}
	for _, o := range ops {
		byKey[o.Key] = append(byKey[o.Key], o)
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]KeyCheck, 0, len(keys))
	for _, k := range keys {
		kc := KeyCheck{Key: k, Ops: len(byKey[k])}
		for _, o := range byKey[k] {
			if o.Outcome == Unknown {
				kc.Unknown++
			}
		}
		start := time.Now()
		kc.Err = CheckLinearizable(byKey[k], timeout)
		kc.Took = time.Since(start)
		out = append(out, kc)
	}
	return out
}

// ArtifactDir is where checkers write failure artifacts:
// $LOCKNODE_TEST_ARTIFACTS, else a directory under the system temp dir.
func ArtifactDir() string {
	if d := os.Getenv("LOCKNODE_TEST_ARTIFACTS"); d != "" {
		_ = os.MkdirAll(d, 0o755)
		return d
	}
	d := filepath.Join(os.TempDir(), "locknode-testcluster")
	_ = os.MkdirAll(d, 0o755)
	return d
}
