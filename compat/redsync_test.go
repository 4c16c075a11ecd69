package compat

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	rsredis "github.com/go-redsync/redsync/v4/redis"
	rsgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
)

// votes records what each node answered to redsync, so a test can
// demand that every node of the one cluster voted yes, not only a quorum.
type votes struct {
	mu  sync.Mutex
	yes map[string]map[int]bool // op -> node -> said yes
}

func (v *votes) record(op string, node int, yes bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.yes == nil {
		v.yes = map[string]map[int]bool{}
	}
	if v.yes[op] == nil {
		v.yes[op] = map[int]bool{}
	}
	v.yes[op][node] = yes
}

// all reports whether all n nodes answered yes to op since the last reset.
func (v *votes) all(op string, n int) (bool, map[int]bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	got := map[int]bool{}
	ok := true
	for i := range n {
		got[i] = v.yes[op][i]
		ok = ok && got[i]
	}
	return ok, got
}

func (v *votes) reset() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.yes = nil
}

// votingPool wraps a redsync pool to record the node's answers.
type votingPool struct {
	rsredis.Pool
	node int
	v    *votes
}

func (p votingPool) Get(ctx context.Context) (rsredis.Conn, error) {
	c, err := p.Pool.Get(ctx)
	if err != nil {
		return nil, err
	}
	return votingConn{Conn: c, node: p.node, v: p.v}, nil
}

type votingConn struct {
	rsredis.Conn
	node int
	v    *votes
}

func (c votingConn) SetNX(name, value string, expiry time.Duration) (bool, error) {
	ok, err := c.Conn.SetNX(name, value, expiry)
	c.v.record("setnx", c.node, ok && err == nil)
	return ok, err
}

// Eval carries redsync's release (delete) and extend (touch) scripts;
// both answer a positive integer for yes.
func (c votingConn) Eval(script *rsredis.Script, keysAndArgs ...any) (any, error) {
	r, err := c.Conn.Eval(script, keysAndArgs...)
	n, _ := r.(int64)
	c.v.record("eval", c.node, err == nil && n > 0)
	return r, err
}

// TestRedsyncOneCluster: redsync given the three nodes of ONE cluster as
// its three "independent" Redis instances. The key space answers repeated
// steps by the same token as the first one was answered, so every node
// (not only a quorum) votes yes on acquire, extend and unlock.
func TestRedsyncOneCluster(t *testing.T) {
	tc := newCluster(t, 3)
	for _, proto := range []int{3, 2} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			v := &votes{}
			var pools []rsredis.Pool
			for i := range 3 {
				pools = append(pools, votingPool{Pool: rsgoredis.NewPool(goRedis(t, tc.resp[i], proto)), node: i, v: v})
			}
			rs := redsync.New(pools...)
			name := uniq("redsync")
			m := rs.NewMutex(name, redsync.WithExpiry(8*time.Second), redsync.WithTries(1))

			if err := m.Lock(); err != nil {
				t.Fatalf("Lock: %v", err)
			}
			if ok, got := v.all("setnx", 3); !ok {
				t.Fatalf("acquire: votes %v; want all three nodes", got)
			}
			if time.Until(m.Until()) <= 0 {
				t.Fatalf("Until %v is not in the future", m.Until())
			}

			other := rs.NewMutex(name, redsync.WithExpiry(8*time.Second), redsync.WithTries(1))
			if err := other.Lock(); err == nil {
				t.Fatal("a second mutex took the held lock")
			}
			// The loser's clean-up (compare-and-delete with its own value)
			// must not have released the holder.
			v.reset()
			if ok, err := m.Extend(); err != nil || !ok {
				t.Fatalf("Extend = %v, %v", ok, err)
			}
			if ok, got := v.all("eval", 3); !ok {
				t.Fatalf("extend: votes %v; want all three nodes", got)
			}
			//lint:ignore SA1019 Valid asks every node, which is what this checks; Until does not
			if ok, err := m.Valid(); err != nil || !ok {
				t.Fatalf("Valid = %v, %v", ok, err)
			}

			v.reset()
			if ok, err := m.Unlock(); err != nil || !ok {
				t.Fatalf("Unlock = %v, %v", ok, err)
			}
			if ok, got := v.all("eval", 3); !ok {
				t.Fatalf("unlock: votes %v; want all three nodes", got)
			}
			// Released: the other mutex gets it at once, on every node.
			v.reset()
			if err := other.Lock(); err != nil {
				t.Fatalf("Lock after Unlock: %v", err)
			}
			if ok, got := v.all("setnx", 3); !ok {
				t.Fatalf("second acquire: votes %v; want all three nodes", got)
			}
			// A repeated unlock by the first owner changes nothing. (It
			// answers yes: DESIGN.md's tombstone answers a repeated
			// release by the token that released as the release did,
			// until that lease's old deadline; real Redis answers 0.)
			_, _ = m.Unlock()
			for i := range 3 {
				if got, err := goRedis(t, tc.resp[i], proto).Get(ctxT(t, 10*time.Second), name).Result(); err != nil || got != other.Value() {
					t.Fatalf("node %d after a stale unlock: GET = %q, %v; want the second holder %q", i, got, err, other.Value())
				}
			}
			//lint:ignore SA1019 Valid asks every node, which is what this checks; Until does not
			if ok, err := other.Valid(); err != nil || !ok {
				t.Fatalf("second holder lost the lock to a stale unlock: %v, %v", ok, err)
			}
			if ok, err := other.Unlock(); err != nil || !ok {
				t.Fatalf("second Unlock = %v, %v", ok, err)
			}
		})
	}
}

// TestRedsyncMutualExclusion: goroutines contend through redsync for one
// lock over the three nodes; a counter updated by a non-atomic
// read-modify-write inside the critical section loses no update and no
// two goroutines are ever inside together.
func TestRedsyncMutualExclusion(t *testing.T) {
	tc := newCluster(t, 3)
	var pools []rsredis.Pool
	for i := range 3 {
		pools = append(pools, rsgoredis.NewPool(goRedis(t, tc.resp[i], 3)))
	}
	rs := redsync.New(pools...)
	name := uniq("contended")
	const workers, rounds = 6, 6
	var inside, counter, overlaps atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		// Ends after its rounds, or at its first error.
		go func() {
			defer wg.Done()
			for r := range rounds {
				m := rs.NewMutex(name, redsync.WithExpiry(10*time.Second), redsync.WithTries(2000),
					redsync.WithRetryDelayFunc(func(int) time.Duration { return time.Duration(2+(w+r)%5) * time.Millisecond }))
				if err := m.Lock(); err != nil {
					t.Errorf("worker %d round %d: Lock: %v", w, r, err)
					return
				}
				if n := inside.Add(1); n != 1 {
					overlaps.Add(1)
				}
				c := counter.Load()
				// Widen the window a lost update needs.
				for range 100 {
					_ = time.Now()
				}
				counter.Store(c + 1)
				inside.Add(-1)
				if ok, err := m.Unlock(); err != nil || !ok {
					t.Errorf("worker %d round %d: Unlock = %v, %v", w, r, ok, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if got := overlaps.Load(); got != 0 {
		t.Errorf("%d entries found another holder inside the critical section", got)
	}
	if got := counter.Load(); got != workers*rounds {
		t.Errorf("counter = %d, want %d: an update was lost to an overlapping holder", got, workers*rounds)
	}
}
