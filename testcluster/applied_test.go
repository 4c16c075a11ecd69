package testcluster

import (
	"strings"
	"testing"

	"github.com/locknode/locknode/fsm"
)

func queued(ids ...string) fsm.LockInfo {
	info := fsm.LockInfo{Holders: []fsm.Hold{{Owner: "h", Mode: fsm.Exclusive}}}
	for _, id := range ids {
		info.Waiters = append(info.Waiters, fsm.Waiter{ID: id, Keys: []string{"k"}})
	}
	return info
}

func granted(id string, keys ...string) fsm.Event {
	return fsm.Event{Kind: fsm.EvGranted, WaiterID: id, Keys: keys, Owner: "o-" + id}
}

func TestCheckGrantOrder(t *testing.T) {
	// a, b and c queue on k (read after index 3); a gives up, then b and
	// c are granted in order, the read of one batch arriving with its
	// first entry.
	good := []Applied{
		{Index: 3, At: 3, Locks: map[string]fsm.LockInfo{"k": queued("a", "b", "c")}},
		{Index: 4, At: 5, Events: []fsm.Event{{Kind: fsm.EvWaitEnded, WaiterID: "a", Keys: []string{"k"}}, granted("b", "k")},
			Locks: map[string]fsm.LockInfo{"k": {Holders: []fsm.Hold{{Owner: "o-c"}}}}},
		{Index: 5, At: 5, Events: []fsm.Event{granted("c", "k")}},
	}
	if err := CheckGrantOrder(good); err != nil {
		t.Fatalf("in-order grants reported: %v", err)
	}
	// Semaphore permits granted several in one entry, in queue order.
	multi := []Applied{
		{Index: 1, At: 1, Locks: map[string]fsm.LockInfo{"s": {Waiters: []fsm.Waiter{{ID: "a"}, {ID: "b"}}}}},
		{Index: 2, At: 2, Events: []fsm.Event{granted("a", "s"), granted("b", "s")}},
	}
	if err := CheckGrantOrder(multi); err != nil {
		t.Fatalf("several grants in queue order reported: %v", err)
	}
	// c is granted while b, queued ahead of it, still waits.
	bad := []Applied{
		{Index: 3, At: 3, Locks: map[string]fsm.LockInfo{"k": queued("a", "b", "c")}},
		{Index: 4, At: 4, Events: []fsm.Event{granted("a", "k")}},
		{Index: 6, At: 6, Events: []fsm.Event{granted("c", "k")}},
	}
	err := CheckGrantOrder(bad)
	if err == nil || !strings.Contains(err.Error(), `waiter "c"`) || !strings.Contains(err.Error(), `"b", queued ahead`) {
		t.Fatalf("newest-first grant: got %v", err)
	}
	// A restore forgets the queues: what it replaced proves nothing.
	restored := append([]Applied{bad[0], {Index: 5, Events: []fsm.Event{{Kind: fsm.EvRestored}}}}, bad[2])
	if err := CheckGrantOrder(restored); err != nil {
		t.Fatalf("grant after a restore reported: %v", err)
	}
}

func TestCheckPermits(t *testing.T) {
	sem := func(n int) fsm.LockInfo {
		info := fsm.LockInfo{Permits: 2}
		for range n {
			info.Holders = append(info.Holders, fsm.Hold{Owner: "x", Mode: fsm.Semaphore})
		}
		return info
	}
	good := []Applied{
		{Index: 1, At: 1, Locks: map[string]fsm.LockInfo{"sem": sem(2), "k": {Holders: []fsm.Hold{{Mode: fsm.Shared}, {Mode: fsm.Shared}}}}},
	}
	if err := CheckPermits(good); err != nil {
		t.Fatalf("a full semaphore and shared holders reported: %v", err)
	}
	bad := []Applied{{Index: 1, At: 1, Locks: map[string]fsm.LockInfo{"sem": sem(1)}}, {Index: 2, At: 7, Locks: map[string]fsm.LockInfo{"sem": sem(3)}}}
	if err := CheckPermits(bad); err == nil || !strings.Contains(err.Error(), "index 7: semaphore \"sem\" has 3 holders, over its 2 permits") {
		t.Fatalf("one permit too many: got %v", err)
	}
	excl := []Applied{{Index: 1, At: 1, Locks: map[string]fsm.LockInfo{"k": {Holders: []fsm.Hold{{Mode: fsm.Exclusive}, {Mode: fsm.Exclusive}}}}}}
	if err := CheckPermits(excl); err == nil {
		t.Fatal("two exclusive holders not reported")
	}
}

func TestCheckGrantsOutliveEntry(t *testing.T) {
	g := granted("a", "k")
	g.Fence = 9
	ended := fsm.Event{Kind: fsm.EvReleased, Key: "k", Owner: "o-a", Fence: 9, Reason: fsm.ReasonSession}
	if err := CheckGrantsOutliveEntry([]Applied{{Index: 9, Events: []fsm.Event{g}}, {Index: 10, Events: []fsm.Event{ended}}}); err != nil {
		t.Fatalf("a hold ended in a later entry reported: %v", err)
	}
	err := CheckGrantsOutliveEntry([]Applied{{Index: 9, Events: []fsm.Event{g, ended}}})
	if err == nil || !strings.Contains(err.Error(), `index 9: the hold of "o-a" on "k" (fence 9) was granted and ended in this entry`) {
		t.Fatalf("a grant ended in its own entry: got %v", err)
	}
}

func TestReadCacheReusesOneBatchRead(t *testing.T) {
	table := map[string]fsm.LockInfo{"k": queued("a"), "e": queued("b")}
	var inspected []string
	inspect := func(k string) (fsm.LockInfo, bool) {
		inspected = append(inspected, k)
		info, ok := table[k]
		return info, ok
	}
	var c readCache
	first := c.read(5, 100, []string{"k", "x"}, inspect)
	if len(first) != 1 || first["k"].Waiters[0].ID != "a" {
		t.Fatalf("first read: %v", first)
	}
	// The next entry of the batch: same index and time; only its new key
	// is inspected, and the first entry's map stays as it was.
	second := c.read(5, 100, []string{"e", "k", "x"}, inspect)
	if got := strings.Join(inspected, ","); got != "k,x,e" {
		t.Fatalf("inspected %s, want k,x,e", got)
	}
	if len(first) != 1 || len(second) != 2 || second["e"].Waiters[0].ID != "b" {
		t.Fatalf("after the second read: first %v, second %v", first, second)
	}
	// Nothing new to inspect: the same answer.
	if third := c.read(5, 100, []string{"k"}, inspect); len(third) != 2 || len(inspected) != 3 {
		t.Fatalf("third read: %v, inspected %q", third, inspected)
	}
	// Another index, another time, or a restore: read afresh.
	table["k"] = queued("c")
	for i, step := range []func() map[string]fsm.LockInfo{
		func() map[string]fsm.LockInfo { return c.read(6, 100, []string{"k"}, inspect) },
		func() map[string]fsm.LockInfo { return c.read(6, 101, []string{"k"}, inspect) },
		func() map[string]fsm.LockInfo { c.forget(); return c.read(6, 101, []string{"k"}, inspect) },
	} {
		n := len(inspected)
		got := step()
		if len(inspected) != n+1 || len(got) != 1 || got["k"].Waiters[0].ID != "c" {
			t.Fatalf("step %d: %v, inspected %q", i, got, inspected)
		}
	}
	// An empty read is a map all the same: a nil Locks means no read.
	if got := c.read(7, 100, []string{"x"}, inspect); got == nil || len(got) != 0 {
		t.Fatalf("empty read: %#v", got)
	}
}
