package fsm

import (
	"bytes"
	"fmt"
	"math/rand"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

// decodeOps turns fuzz bytes into lock commands: 6 bytes per command, over
// a small universe of keys, owners and sessions so commands collide.
func decodeOps(data []byte) []Command {
	keys := []string{"a", "b", "c"}
	owners := []string{"o1", "o2", "o3", "o4"}
	sessions := []string{"s1", "s2"}
	var cmds []Command
	var now int64
	for len(data) >= 6 {
		b := data[:6]
		data = data[6:]
		now += int64(b[5] % 64)
		c := Command{Time: now, Owner: owners[b[1]%4]}
		k := keys[b[2]%3]
		switch b[0] % 14 {
		case 0, 1, 2, 3:
			c.Op = OpAcquire
			c.Mode = Mode(b[3] % 3)
			c.Permits = 2
			c.TTL = int64(b[4]%8)*20 + 10
			if b[4]&0x80 != 0 {
				c.Wait = int64(b[3]%5) * 40
				c.ReqID = fmt.Sprintf("r%d", b[2]%16)
			}
			c.Reentrant = b[3]&0x40 != 0
			if b[3]&0x20 != 0 {
				c.LockDelay = 30
			}
			if b[1]&0x10 != 0 {
				c.Session = sessions[b[1]>>5%2]
			}
			if b[2]&0x80 != 0 {
				c.Keys = []string{k, keys[(b[2]+1)%3]}
			} else {
				c.Key = k
			}
			if b[4]&0x40 != 0 {
				c.MaxHold = 100
			}
			if b[1]&0x08 != 0 {
				c.Meta = Meta{{Name: "host", Value: c.Owner}, {Name: "pid", Value: fmt.Sprint(b[5])}}
			}
		case 4, 5:
			c.Op = OpRelease
			c.Key = k
			c.Reentrant = b[3]&1 != 0
			c.Force = b[3]%16 == 15
		case 6:
			c.Op = OpExtend
			c.Key = k
			c.TTL = int64(b[4] % 100)
		case 7:
			c.Op = OpCancelWait
			c.ReqID = fmt.Sprintf("r%d", b[2]%16)
		case 8:
			c.Op = OpSessionOpen
			c.Session = sessions[b[1]%2]
			c.TTL = int64(b[4]%8)*30 + 10
		case 9:
			c.Op = OpSessionKeepAlive
			c.Session = sessions[b[1]%2]
		case 10:
			if b[3]%2 == 0 {
				c.Op = OpSessionClose
				c.Session = sessions[b[1]%2]
			} else {
				c.Op = OpFenceCheck
				c.Key = k
				c.Token = uint64(b[4])
			}
		case 11:
			c.Op = OpTick
		case 12:
			// Redis clients on the same key space.
			c = rcmd("SET", k, c.Owner, "NX", "PX", fmt.Sprint(int64(b[4]%8)*20+10))
			c.Time = now
		case 13:
			switch b[3] % 3 {
			case 0:
				c = rcmd("DEL", k)
			case 1:
				c = rcmd("PEXPIRE", k, fmt.Sprint(int64(b[4]%8)*20))
			default:
				c = rcmd("SET", k, "plain", "PX", "50")
			}
			c.Time = now
		}
		if b[0]&0x80 != 0 && c.Op != OpCancelWait && c.ReqID == "" {
			c.ReqID = fmt.Sprintf("x%d", b[4]%8)
		}
		cmds = append(cmds, c)
	}
	return cmds
}

// holdFences maps key+"\x00"+owner to the fence of every hold in t.
func holdFences(t *Table) map[string]uint64 {
	m := make(map[string]uint64)
	for k, v := range t.keys {
		if v.Kind() == KindLock {
			for i := 0; i < v.lock().numHolders(); i++ {
				h := v.lock().holder(i)
				m[k+"\x00"+h.Owner] = h.Fence
			}
		}
	}
	return m
}

// alreadyHeld reports whether a grant event only re-confirms holds its
// owner had before the entry (a queued non-reentrant acquire by the
// current holder is an idempotent success and keeps the hold's fence).
func alreadyHeld(before map[string]uint64, e Event) bool {
	keys := e.Keys
	if len(keys) == 0 {
		keys = []string{e.Key}
	}
	for _, k := range keys {
		if f, ok := before[k+"\x00"+e.Owner]; !ok || f != e.Fence {
			return false
		}
	}
	return true
}

// runChecked applies cmds to two tables and checks every property the
// fuzz target promises; it returns the first violation.
func runChecked(cmds []Command, cfg Config) error {
	a, b := New(cfg), New(cfg)
	var lastFence uint64
	for i := range cmds {
		idx := uint64(i + 1)
		ca, cb := cmds[i], cmds[i]
		before := holdFences(a)
		ra := a.Apply(idx, &ca)
		enc, _ := cb.MarshalBinary() // b goes through the log encoding
		rb := b.ApplyBytes(idx, enc)
		if fmtResult(ra) != fmtResult(rb) || fmt.Sprint(ra.Reply) != fmt.Sprint(rb.Reply) {
			return fmt.Errorf("step %d: tables disagree: %s %v vs %s %v", i, fmtResult(ra), ra.Reply, fmtResult(rb), rb.Reply)
		}
		if err := checkInvariants(a); err != nil {
			return fmt.Errorf("step %d %+v: %v", i, cmds[i], err)
		}
		// Fences: a new grant is fenced with this entry's index, which is
		// larger than every fence granted before.
		grant := func(f uint64) error {
			if f > idx {
				return fmt.Errorf("step %d: fence %d from the future", i, f)
			}
			if f == idx && f <= lastFence && lastFence != idx {
				return fmt.Errorf("step %d: fence %d not above %d", i, f, lastFence)
			}
			if f > lastFence {
				lastFence = f
			}
			return nil
		}
		if ra.Granted && ca.Op == OpAcquire {
			if err := grant(ra.Fence); err != nil {
				return err
			}
		}
		// A key whose hold granted in this entry ended in it must not be
		// granted again in it: the grant would carry the same fence, two
		// holders a resource could not tell apart.
		var endedFresh []string
		for _, e := range ra.Events {
			if e.Kind == EvReleased && e.Fence == idx {
				endedFresh = append(endedFresh, e.Key)
			}
			if e.Kind == EvGranted {
				for _, k := range e.Keys {
					if slices.Contains(endedFresh, k) {
						return fmt.Errorf("step %d: %s granted %s with fence %d after a hold granted in the same entry ended", i, e.WaiterID, k, e.Fence)
					}
				}
			}
			if e.Kind == EvGranted {
				if e.Fence != idx && !alreadyHeld(before, e) {
					return fmt.Errorf("step %d: hand-off fenced %d, want %d", i, e.Fence, idx)
				}
				if err := grant(e.Fence); err != nil {
					return err
				}
			}
		}
	}
	var sa, sb, sc bytes.Buffer
	if err := a.Snapshot(&sa); err != nil {
		return err
	}
	if err := b.Snapshot(&sb); err != nil {
		return err
	}
	if !bytes.Equal(sa.Bytes(), sb.Bytes()) {
		return fmt.Errorf("same commands, different snapshots")
	}
	c := New(cfg)
	if err := c.Restore(bytes.NewReader(sa.Bytes())); err != nil {
		return fmt.Errorf("restore: %v", err)
	}
	if err := c.Snapshot(&sc); err != nil {
		return err
	}
	if !bytes.Equal(sa.Bytes(), sc.Bytes()) {
		return fmt.Errorf("snapshot changed by restore")
	}
	if a.MemoryUsed() != c.MemoryUsed() {
		return fmt.Errorf("memory counted %d, %d after restore", a.MemoryUsed(), c.MemoryUsed())
	}
	// The restored table goes on exactly like the original.
	tail := decodeOps([]byte{0, 1, 0, 0, 3, 200, 11, 0, 0, 0, 0, 250, 4, 1, 0, 0, 0, 1})
	for i := range tail {
		ta, tc := tail[i], tail[i]
		ra := a.Apply(uint64(len(cmds)+i+1), &ta)
		rc := c.Apply(uint64(len(cmds)+i+1), &tc)
		if fmtResult(ra) != fmtResult(rc) {
			return fmt.Errorf("restored table diverged: %s vs %s", fmtResult(ra), fmtResult(rc))
		}
		if err := checkMemory(c); err != nil {
			return fmt.Errorf("restored table: %v", err)
		}
	}
	return nil
}

func FuzzApply(f *testing.F) {
	f.Add([]byte{0, 1, 0, 0, 3, 1, 0, 2, 0, 0, 0x83, 1, 4, 1, 0, 0, 0, 5})
	f.Add([]byte{0, 1, 0, 1, 3, 1, 0, 2, 0, 1, 3, 1, 0, 3, 0, 0, 0x83, 1, 11, 0, 0, 0, 0, 63, 11, 0, 0, 0, 0, 63})
	f.Add([]byte{8, 0, 0, 0, 3, 1, 0, 0x11, 0, 0x20, 0x83, 1, 0, 2, 0, 0, 0x83, 1, 9, 0, 0, 0, 0, 50, 11, 0, 0, 0, 0, 63, 11, 0, 0, 0, 0, 63})
	f.Add([]byte{0, 1, 0x80, 0, 3, 1, 0, 2, 1, 0, 3, 1, 0, 3, 0x81, 0, 0x83, 1, 4, 2, 1, 0, 0, 5, 7, 0, 1, 0, 0, 1})
	f.Add([]byte{0, 1, 0, 2, 3, 1, 1, 2, 0, 2, 3, 1, 2, 3, 0, 2, 0x83, 1, 6, 1, 0, 0, 50, 1, 10, 0, 0, 1, 7, 1, 10, 0, 0, 1, 3, 1})
	f.Add([]byte{0x80, 1, 0, 0, 3, 1, 0x80, 1, 0, 0, 3, 1, 0, 1, 0, 0x60, 0xC3, 1, 11, 0, 0, 0, 0, 63})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 6*400 {
			data = data[:6*400]
		}
		if err := runChecked(decodeOps(data), Config{MaxWaitersPerKey: 3, MaxReqIDs: 5, ReqIDWindow: 200}); err != nil {
			t.Fatal(err)
		}
	})
}

// TestRandomSequences runs the fuzz checks over seeded random sequences.
func TestRandomSequences(t *testing.T) {
	for _, seed := range []int64{
		1795250674335063260, // a queued non-reentrant acquire by the holder keeps its fence
		time.Now().UnixNano(),
	} {
		randomSequences(t, seed)
	}
}

func randomSequences(t *testing.T, seed int64) {
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	for i := 0; i < 200; i++ {
		data := make([]byte, 6*(20+rng.Intn(200)))
		rng.Read(data)
		cfg := Config{MaxWaitersPerKey: 3, MaxReqIDs: 5, ReqIDWindow: 200}
		if i%2 == 1 {
			// A key space that fills after a few holds: refusals for
			// memory happen, and the counts must still agree.
			cfg.MaxMemory = 600
		}
		if err := runChecked(decodeOps(data), cfg); err != nil {
			t.Fatalf("seed %d, sequence %d: %v", seed, i, err)
		}
	}
}

// model is the reference: exclusive and shared try-locks with leases.
type model struct {
	locks map[string]map[string]modelHold // key -> owner -> hold
}

type modelHold struct {
	shared   bool
	deadline int64
}

func (m *model) expire(now int64) {
	for k, hs := range m.locks {
		for o, h := range hs {
			if h.deadline <= now {
				delete(hs, o)
			}
		}
		if len(hs) == 0 {
			delete(m.locks, k)
		}
	}
}

// acquire reports whether owner gets key.
func (m *model) acquire(key, owner string, shared bool, deadline int64) bool {
	hs := m.locks[key]
	if h, ok := hs[owner]; ok {
		return h.shared == shared // idempotent in the same mode
	}
	for _, h := range hs {
		if !shared || !h.shared {
			return false
		}
	}
	if hs == nil {
		hs = map[string]modelHold{}
		m.locks[key] = hs
	}
	hs[owner] = modelHold{shared, deadline}
	return true
}

func (m *model) release(key, owner string) bool {
	if _, ok := m.locks[key][owner]; !ok {
		return false
	}
	delete(m.locks[key], owner)
	if len(m.locks[key]) == 0 {
		delete(m.locks, key)
	}
	return true
}

func (m *model) holders(key string) string {
	var s []string
	for o, h := range m.locks[key] {
		s = append(s, fmt.Sprintf("%s/%v/%d", o, h.shared, h.deadline))
	}
	sort.Strings(s)
	return strings.Join(s, " ")
}

// TestDifferential compares the table with the model on random
// exclusive/shared try-acquire, release and time steps.
func TestDifferential(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	keys := []string{"a", "b", "c"}
	owners := []string{"o1", "o2", "o3"}
	for run := 0; run < 50; run++ {
		tab := New(Config{})
		m := &model{locks: map[string]map[string]modelHold{}}
		var now int64
		for i := 1; i <= 300; i++ {
			now += int64(rng.Intn(30))
			m.expire(now)
			k, o := keys[rng.Intn(3)], owners[rng.Intn(3)]
			c := Command{Time: now, Key: k, Owner: o}
			var want bool
			switch rng.Intn(3) {
			case 0, 1:
				c.Op, c.TTL = OpAcquire, int64(1+rng.Intn(100))
				if rng.Intn(2) == 0 {
					c.Mode = Shared
				}
				want = m.acquire(k, o, c.Mode == Shared, now+c.TTL)
			case 2:
				c.Op = OpRelease
				want = m.release(k, o)
			}
			r := tab.Apply(uint64(i), &c)
			if got := r.Err == nil; got != want {
				t.Fatalf("seed %d run %d step %d %+v: table %v (%v), model %v", seed, run, i, c, got, r.Err, want)
			}
			for _, k := range keys {
				var s []string
				if li, err := tab.Inspect(k, now); err == nil {
					for _, h := range li.Holders {
						s = append(s, fmt.Sprintf("%s/%v/%d", h.Owner, h.Mode == Shared, h.Deadline))
					}
				}
				sort.Strings(s)
				if got, want := strings.Join(s, " "), m.holders(k); got != want {
					t.Fatalf("seed %d run %d step %d: %s holders %q, model %q", seed, run, i, k, got, want)
				}
			}
		}
	}
}
