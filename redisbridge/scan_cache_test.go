package redisbridge

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/locknode/locknode/fsm"
)

// scanIter runs a whole SCAN iteration with COUNT count, calling between
// after each step; it fails on a key returned twice.
func scanIter(t *testing.T, conns []*rawConn, count int, between func(step int)) map[string]bool {
	t.Helper()
	seen := map[string]bool{}
	cursor := "0"
	for step := 0; step < 100000; step++ {
		c := conns[step%len(conns)]
		v := c.do("SCAN", cursor, "COUNT", strconv.Itoa(count))
		if v.Type != '*' || len(v.Elems) != 2 {
			t.Fatalf("SCAN %s: %v", cursor, v)
		}
		for _, k := range strs(v.Elems[1]) {
			if seen[k] {
				t.Fatalf("step %d: key %q returned twice", step, k)
			}
			seen[k] = true
		}
		if between != nil {
			between(step)
		}
		if cursor = v.Elems[0].Str; cursor == "0" {
			return seen
		}
	}
	t.Fatal("SCAN did not end")
	return nil
}

// TestScanSnapshotsKeepTheGuarantee: keys present for a whole iteration
// are returned exactly once, keys deleted before their step are not,
// with the table changing between steps — from snapshots, when the
// iteration moves between servers (no snapshot there: one is taken under
// the cursor's name), and without snapshots (key space over the budget).
func TestScanSnapshotsKeepTheGuarantee(t *testing.T) {
	for _, tc := range []struct {
		name    string
		servers int
		budget  int
	}{
		{"snapshot", 1, scanSnapBudget},
		{"moving-between-servers", 2, scanSnapBudget},
		{"over-budget-walks", 1, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeBackend(t)
			var conns []*rawConn
			for range tc.servers {
				s := testServerOn(t, f, Config{})
				s.scans.budget = tc.budget
				conns = append(conns, dialRaw(t, s))
			}
			w := dialRaw(t, testServerOn(t, f, Config{}))
			for i := range 200 {
				w.do("SET", fmt.Sprintf("stay%03d", i), "v")
				w.do("SET", fmt.Sprintf("del%03d", i), "v")
			}
			seen := scanIter(t, conns, 5, func(step int) {
				// Delete a key, add a key, between every two steps.
				w.do("DEL", fmt.Sprintf("del%03d", step))
				w.do("SET", fmt.Sprintf("new%03d", step), "v")
			})
			for i := range 200 {
				if k := fmt.Sprintf("stay%03d", i); !seen[k] {
					t.Fatalf("%s, present throughout, was not returned", k)
				}
			}
		})
	}
}

// TestScanDeletedKeysNotReturned: a key deleted before the iteration's
// later steps is not returned by them, though the snapshot names it.
func TestScanDeletedKeysNotReturned(t *testing.T) {
	s, _ := testServer(t, Config{})
	c := dialRaw(t, s)
	for i := range 100 {
		c.do("SET", fmt.Sprintf("k%03d", i), "v")
	}
	v := c.do("SCAN", "0", "COUNT", "1")
	first := strs(v.Elems[1])
	for i := range 100 {
		if k := fmt.Sprintf("k%03d", i); len(first) == 0 || k != first[0] {
			c.do("DEL", k)
		}
	}
	cursor := v.Elems[0].Str
	for cursor != "0" {
		v = c.do("SCAN", cursor, "COUNT", "7")
		if got := strs(v.Elems[1]); len(got) != 0 {
			t.Fatalf("deleted keys returned: %v", got)
		}
		cursor = v.Elems[0].Str
	}
}

func TestScanCacheBounds(t *testing.T) {
	sc := newScanCache()
	sc.budget = 100
	now := time.Unix(1000, 0)
	snap := func(id uint64, n int) *scanSnap {
		es := make([]fsm.KeyEntry, n)
		for i := range es {
			es[i].Key = fmt.Sprintf("%d-%d", id, i)
		}
		return buildSnap(id, es)
	}
	for id := uint64(1); id <= scanSnapMax+3; id++ {
		sc.put(snap(id, 5), now.Add(time.Duration(id)*time.Second))
	}
	if len(sc.snaps) != scanSnapMax || sc.total != 5*scanSnapMax {
		t.Fatalf("%d snapshots, %d names; want %d, %d", len(sc.snaps), sc.total, scanSnapMax, 5*scanSnapMax)
	}
	if sc.snaps[1] != nil || sc.snaps[scanSnapMax+3] == nil {
		t.Fatal("not the least recently used snapshot dropped")
	}
	sc.put(snap(99, 90), now.Add(time.Minute))
	if sc.total > sc.budget {
		t.Fatalf("%d names kept, budget %d", sc.total, sc.budget)
	}
	if sc.get(99, now.Add(time.Minute+scanSnapIdle+time.Second)) != nil || len(sc.snaps) != 0 || sc.total != 0 {
		t.Fatalf("idle snapshots kept: %d, %d names", len(sc.snaps), sc.total)
	}
}

func TestScanSnapStepKeepsSamePositionTogether(t *testing.T) {
	s := &scanSnap{id: 3, pos: []uint64{1, 2, 2, 2, 5}, keys: []string{"a", "b", "c", "d", "e"}}
	for _, tc := range []struct {
		pos   uint64
		count int
		keys  string
		next  uint64
	}{
		{0, 1, "[a]", 3<<fsm.ScanBits | 2},
		{2, 1, "[b c d]", 3<<fsm.ScanBits | 5},
		{3, 10, "[e]", 0},
		{6, 10, "[]", 0},
	} {
		keys, next := s.step(tc.pos, tc.count)
		if fmt.Sprint(keys) != tc.keys || next != tc.next {
			t.Errorf("step(%d, %d) = %v, %d; want %s, %d", tc.pos, tc.count, keys, next, tc.keys, tc.next)
		}
	}
}
