package testcluster

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// The checker must catch what it exists to catch.
func TestCheckLinearizableCatches(t *testing.T) {
	ttl := 10 * time.Second
	grant := func(client int, owner string, call, ret int, fence uint64, at int64) Op {
		return Op{Client: client, Kind: OpTryAcquire, Key: "k", Owner: owner, TTL: ttl, Call: ms(call), Return: ms(ret),
			Outcome: OK, Fence: fence, Deadline: at + ttl.Milliseconds()}
	}
	cases := []struct {
		name string
		ops  []Op
		ok   bool
	}{
		{"sequential holders", []Op{
			grant(0, "a", 0, 1, 5, 1000),
			{Client: 0, Kind: OpRelease, Key: "k", Owner: "a", Call: ms(2), Return: ms(3), Outcome: OK, Released: true},
			grant(1, "b", 4, 5, 7, 1005),
		}, true},
		{"two holders overlap", []Op{
			grant(0, "a", 0, 1, 5, 1000),
			grant(1, "b", 2, 3, 7, 1002),
		}, false},
		{"grant after expiry", []Op{
			grant(0, "a", 0, 1, 5, 1000),
			grant(1, "b", 2, 3, 7, 1000+ttl.Milliseconds()),
		}, true},
		{"fence goes backwards", []Op{
			grant(0, "a", 0, 1, 7, 1000),
			{Client: 0, Kind: OpRelease, Key: "k", Owner: "a", Call: ms(2), Return: ms(3), Outcome: OK, Released: true},
			grant(1, "b", 4, 5, 5, 1005),
		}, false},
		{"refused while free", []Op{
			{Client: 0, Kind: OpTryAcquire, Key: "k", Owner: "a", TTL: ttl, Call: ms(0), Return: ms(1), Outcome: Refused, Reason: ReasonLocked},
		}, false},
		{"read sees a holder that released", []Op{
			grant(0, "a", 0, 1, 5, 1000),
			{Client: 0, Kind: OpRelease, Key: "k", Owner: "a", Call: ms(2), Return: ms(3), Outcome: OK, Released: true},
			{Client: 1, Kind: OpGet, Key: "k", Call: ms(4), Return: ms(5), Outcome: OK, Holder: "a"},
		}, false},
		{"unknown acquire may hold", []Op{
			{Client: 0, Kind: OpTryAcquire, Key: "k", Owner: "a", TTL: ttl, Call: ms(0), Return: ms(1), Outcome: Unknown},
			{Client: 1, Kind: OpGet, Key: "k", Call: ms(4), Return: ms(5), Outcome: OK, Holder: "a", Fence: 3},
			{Client: 1, Kind: OpTryAcquire, Key: "k", Owner: "b", TTL: ttl, Call: ms(6), Return: ms(7), Outcome: Refused, Reason: ReasonLocked},
		}, true},
		{"read sees a lease ended that a later grant finds alive", []Op{
			grant(0, "a", 0, 1, 5, 1000),
			{Client: 1, Kind: OpGet, Key: "k", Call: ms(2), Return: ms(3), Outcome: OK},
			grant(1, "b", 4, 5, 7, 1000+ttl.Milliseconds()-1),
		}, false},
		{"read sees a lease ended, a later grant after its deadline", []Op{
			grant(0, "a", 0, 1, 5, 1000),
			{Client: 1, Kind: OpGet, Key: "k", Call: ms(2), Return: ms(3), Outcome: OK},
			grant(1, "b", 4, 5, 7, 1000+ttl.Milliseconds()),
		}, true},
		{"read free after an unknown acquire, then a grant", []Op{
			{Client: 0, Kind: OpTryAcquire, Key: "k", Owner: "a", TTL: ttl, Call: ms(0), Return: ms(1), Outcome: Unknown},
			{Client: 1, Kind: OpGet, Key: "k", Call: ms(2), Return: ms(3), Outcome: OK},
			grant(1, "b", 4, 5, 7, 1001),
		}, true},
		// Chaos seed 1004, key k1 (FSM times less 1795247100000): the
		// read on a leader that had been paused said free; the owner's
		// extend (at 6857, ending 7257) and release succeeded around it
		// and c0 was granted at 7081. No order explains all of them.
		{"chaos seed 1004: read ahead of the log", []Op{
			{Client: 2, Kind: OpAcquire, Key: "k", Owner: "a", TTL: 400 * time.Millisecond, Call: ms(25928), Return: ms(26080),
				Outcome: OK, Fence: 1247, Deadline: 6983},
			{Client: 2, Kind: OpExtend, Key: "k", Owner: "a", TTL: 400 * time.Millisecond, Call: ms(26080), Return: ms(27411),
				Outcome: OK, Fence: 1247, Deadline: 7257},
			{Client: 0, Kind: OpGet, Key: "k", Call: ms(26193), Return: ms(27405), Outcome: OK},
			{Client: 0, Kind: OpAcquire, Key: "k", Owner: "b", TTL: 400 * time.Millisecond, Call: ms(27406), Return: ms(27542),
				Outcome: OK, Fence: 1267, Deadline: 7481},
			{Client: 2, Kind: OpRelease, Key: "k", Owner: "a", Call: ms(27412), Return: ms(27611), Outcome: OK, Released: true},
		}, false},
		// Chaos seed 14007: a read saw the hold of an acquire that then
		// ended unknown (its client gave up waiting); the node's cancel
		// released it, and another client was granted well inside its TTL.
		{"read sees an unknown acquire's hold, then its cancel releases it", []Op{
			{Client: 0, Kind: OpAcquire, Key: "k", Owner: "a", TTL: ttl, Call: ms(0), Return: ms(30), Outcome: Unknown, Err: "wait cancelled"},
			{Client: 1, Kind: OpGet, Key: "k", Call: ms(10), Return: ms(11), Outcome: OK, Holder: "a"},
			grant(1, "b", 20, 21, 7, 1020),
		}, true},
		{"read sees a granted hold, then another grant inside its TTL", []Op{
			grant(0, "a", 0, 1, 5, 1000),
			{Client: 1, Kind: OpGet, Key: "k", Call: ms(10), Return: ms(11), Outcome: OK, Holder: "a"},
			grant(1, "b", 20, 21, 7, 1020),
		}, false},
		{"other keys are independent", []Op{
			grant(0, "a", 0, 1, 5, 1000),
			{Client: 1, Kind: OpTryAcquire, Key: "k2", Owner: "b", TTL: ttl, Call: ms(2), Return: ms(3), Outcome: OK, Fence: 6, Deadline: 1001 + ttl.Milliseconds()},
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHistory()
			for _, o := range tc.ops {
				h.Add(o)
			}
			err := CheckLinearizable(h.Ops(), 10*time.Second)
			if tc.ok && err != nil {
				t.Fatalf("linearizable history refused: %v", err)
			}
			if !tc.ok {
				if !errors.Is(err, ErrNotLinearizable) {
					t.Fatalf("violation not caught: %v", err)
				}
				if !strings.Contains(err.Error(), ".html") {
					t.Fatalf("error does not name the visualisation: %v", err)
				}
			}
		})
	}
}

// A history written on a failed check reads back as it was, and
// RecheckHistory names the key that is not linearizable.
func TestRecheckHistoryNamesTheKey(t *testing.T) {
	t.Setenv("LOCKNODE_TEST_ARTIFACTS", t.TempDir())
	ttl := 10 * time.Second
	h := NewHistory()
	for _, o := range []Op{
		{Client: 0, Kind: OpTryAcquire, Key: "bad", Owner: "a", TTL: ttl, Call: ms(0), Return: ms(1), Outcome: OK, Fence: 5, Deadline: 11000},
		{Client: 1, Kind: OpTryAcquire, Key: "bad", Owner: "b", TTL: ttl, Call: ms(2), Return: ms(3), Outcome: OK, Fence: 7, Deadline: 11002},
		{Client: 2, Kind: OpTryAcquire, Key: "good", Owner: "c", TTL: ttl, Call: ms(0), Return: ms(1), Outcome: Unknown, Err: "timeout"},
		{Client: 2, Kind: OpGet, Key: "good", Call: ms(4), Return: ms(5), Outcome: OK, Holder: "c", Fence: 6, Deadline: 11001, ReadTime: 1004},
	} {
		h.Add(o)
	}
	path, err := WriteHistory(h.Ops())
	if err != nil {
		t.Fatal(err)
	}
	back, err := ReadHistory(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, h.Ops()) {
		t.Fatalf("history read back differs:\n%v\n%v", back, h.Ops())
	}
	got := RecheckHistory(back, 10*time.Second)
	if len(got) != 2 || got[0].Key != "bad" || got[1].Key != "good" {
		t.Fatalf("keys: %+v", got)
	}
	if !errors.Is(got[0].Err, ErrNotLinearizable) || got[0].Ops != 2 {
		t.Errorf("bad: %+v", got[0])
	}
	if got[1].Err != nil || got[1].Unknown != 1 {
		t.Errorf("good: %+v", got[1])
	}
}

// A workload over every client kind while nodes crash and partitions
// come and go stays linearizable.
func TestLinearizableUnderFaults(t *testing.T) {
	c := New(t, 3, Options{})
	h := NewHistory()
	w := &Workload{Keys: Keys("k", 3), Seed: 7}
	w.Clients = append(w.Clients, c.NativeClient(h, 0, 0), c.NativeClient(h, 1, 1), c.HTTPClient(h, 2),
		c.RESPClient(h, 3, 2, false), c.RESPClient(h, 4, 1, true))
	for _, cl := range w.Clients {
		defer cl.Close()
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { // ends when cancel stops the workload
		defer close(done)
		w.Run(ctx)
	}()
	wctx, wcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer wcancel()
	waitOps := func(n int) {
		t.Helper()
		if _, err := waitFor(wctx, 5*time.Millisecond, func() (int, bool) { return 0, len(h.Ops()) >= n }); err != nil {
			t.Fatal(err)
		}
	}
	waitOps(50)
	l := c.Leader()
	li := indexOf(c, l)
	c.Crash(li)
	waitOps(len(h.Ops()) + 50)
	c.Restart(li)
	c.Isolate((li + 1) % 3)
	waitOps(len(h.Ops()) + 50)
	c.Heal()
	waitOps(len(h.Ops()) + 50)
	cancel()
	<-done
	t.Logf("history: %d ops: %s", len(h.Ops()), h.Summary())
	if err := CheckLinearizable(h.Ops(), time.Minute); err != nil {
		t.Fatal(err)
	}
}

func indexOf(c *Cluster, n interface{ ID() string }) int {
	for i := range c.N() {
		if nodeID(i) == n.ID() {
			return i
		}
	}
	return -1
}
