package cluster

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/fsm/reply"
)

// extendsOf proposes extends of k<from>..k<to-1> through nd with
// ApplyAsync, inside an async group when grouped, and returns their
// results.
func extendsOf(t *testing.T, nd *Node, from, to int, grouped bool) []fsm.Result {
	t.Helper()
	ctx := ctxT(t, 30*time.Second)
	if grouped {
		nd.BeginAsyncGroup()
	}
	futs := make([]fsm.Future, 0, to-from)
	for i := from; i < to; i++ {
		futs = append(futs, nd.ApplyAsync(ctx, &fsm.Command{Op: fsm.OpExtend, Key: fmt.Sprint("k", i), Owner: "o", TTL: 60000}))
	}
	if grouped {
		nd.EndAsyncGroup()
	}
	out := make([]fsm.Result, len(futs))
	for i, f := range futs {
		r, err := f.Result()
		if err != nil || r.Err != nil || !r.Granted {
			t.Fatalf("extend k%d: %+v %v", from+i, r, err)
		}
		out[i] = r
	}
	return out
}

func indexes(res []fsm.Result) map[uint64]int {
	m := map[uint64]int{}
	for _, r := range res {
		m[r.Index]++
	}
	return m
}

// The renewals of an async group leave as one entry, through the leader
// and through a follower (one forwarding call, one entry); without the
// group the first renewal goes alone, the rest after its commit.
func TestAsyncGroupOneEntry(t *testing.T) {
	const n = 60
	tc := renewCluster(t, true, 2*n)
	l := tc.leader(10 * time.Second)
	if got := indexes(extendsOf(t, l, 0, n, false)); len(got) < 2 {
		t.Fatalf("without a group %d renewals took one entry: %v (the test shows nothing)", n, got)
	}
	for _, nd := range []*Node{l, tc.follower()} {
		if got := indexes(extendsOf(t, nd, n, 2*n, true)); len(got) != 1 {
			t.Fatalf("%s: a group of %d renewals took entries %v, want one", nd.ID(), n, got)
		}
	}
}

// A caller that waits inside its own open group (Apply, which ApplyAsync
// falls back to when it cannot propose at once) is answered: its
// renewal on the leader and its command on a follower are not held for
// the group's end.
func TestAsyncGroupSyncApplyInside(t *testing.T) {
	tc := renewCluster(t, true, 2)
	for i, nd := range []*Node{tc.leader(10 * time.Second), tc.follower()} {
		nd.BeginAsyncGroup()
		ctx := ctxT(t, 5*time.Second)
		start := time.Now()
		r, err := nd.Apply(ctx, &fsm.Command{Op: fsm.OpExtend, Key: fmt.Sprint("k", i), Owner: "o", TTL: 60000})
		if err != nil || r.Err != nil || !r.Granted {
			t.Fatalf("%s: extend inside an open group: %+v %v", nd.ID(), r, err)
		}
		r, err = nd.Apply(ctx, incr("inside"))
		if err != nil || r.Reply.Kind != reply.Int {
			t.Fatalf("%s: INCR inside an open group: %+v %v", nd.ID(), r, err)
		}
		nd.EndAsyncGroup()
		// Held, the renewal waits for some other proposal to take it
		// along (about a second here); answered, a commit round.
		if took := time.Since(start); took > 500*time.Millisecond {
			t.Fatalf("%s: answered inside the group after %v: held for the group's end", nd.ID(), took)
		}
	}
}

// A group longer than the async window does not stop its caller: past
// maxGroupHeld queued commands they leave, so the slots the caller waits
// for come free (held, they never would).
func TestAsyncGroupLongerThanWindow(t *testing.T) {
	const n = maxAsyncInFlight + maxGroupHeld
	tc := renewCluster(t, true, n)
	for _, nd := range []*Node{tc.leader(10 * time.Second), tc.follower()} {
		res := extendsOf(t, nd, 0, n, true)
		t.Logf("%s: %d renewals of one group in %d entries", nd.ID(), n, len(indexes(res)))
		nd.BeginAsyncGroup()
		ctx := ctxT(t, 30*time.Second)
		futs := make([]fsm.Future, n)
		for i := range futs {
			futs[i] = nd.ApplyAsync(ctx, incr("ctr-"+nd.ID()))
		}
		nd.EndAsyncGroup()
		for i, f := range futs {
			if r, err := f.Result(); err != nil || r.Reply.Int != int64(i+1) {
				t.Fatalf("%s: INCR %d: %+v %v", nd.ID(), i, r, err)
			}
		}
	}
}

// ApplyAsync keeps nothing of its command once it returns: a caller that
// overwrites the command and the bytes it points to right after (the
// RESP bridge's pipelined writes reuse both) changes nothing applied,
// through the leader and through a follower.
func TestApplyAsyncKeepsNoCommand(t *testing.T) {
	tc := renewCluster(t, true, 0)
	for _, nd := range []*Node{tc.leader(10 * time.Second), tc.follower()} {
		ctx := ctxT(t, 30*time.Second)
		const n = 50
		futs := make([]fsm.Future, n)
		for i := range futs {
			key, val := []byte(fmt.Sprint(nd.ID(), "-key-", i)), []byte(fmt.Sprint("value-", i))
			cmd := &fsm.Command{Op: fsm.OpRedis, Args: [][]byte{[]byte("SET"), key, val}}
			futs[i] = nd.ApplyAsync(ctx, cmd)
			copy(key, bytes.Repeat([]byte("x"), len(key)))
			copy(val, bytes.Repeat([]byte("y"), len(val)))
			*cmd = fsm.Command{Op: fsm.OpRedis, Args: [][]byte{[]byte("DEL"), key}}
		}
		for i, f := range futs {
			if r, err := f.Result(); err != nil || r.Reply.Kind != reply.Status {
				t.Fatalf("%s: SET %d: %+v %v", nd.ID(), i, r, err)
			}
		}
		if err := nd.Read(ctx, false, func(tb *fsm.Table, now int64) {
			for i := range n {
				key, want := fmt.Sprint(nd.ID(), "-key-", i), fmt.Sprint("value-", i)
				if r, _ := tb.Read(now, [][]byte{[]byte("GET"), []byte(key)}); r.Str != want {
					t.Errorf("%s: GET %s = %q, want %q", nd.ID(), key, r.Str, want)
				}
			}
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// A forwarded batch of renewals is one entry on the leader whatever its
// size (up to the batch bound): maxGroupHeld cuts only what an async
// group holds.
func TestForwardedRenewalBatchOneEntry(t *testing.T) {
	const n = maxForwardBatch
	tc := renewCluster(t, true, n)
	l := tc.leader(10 * time.Second)
	batch := make([]*forwardItem, n)
	for i := range batch {
		batch[i] = &forwardItem{req: appendCommand(&fsm.Command{Op: fsm.OpExtend, Key: fmt.Sprint("k", i), Owner: "o", TTL: 60000})}
	}
	body := appendForwardBatch(batch)[1:] // the kind byte is the RPC's
	resp, err := l.handleApplyBatch(ctxT(t, 30*time.Second), body, false, false)
	if err != nil {
		t.Fatal(err)
	}
	d := fsm.NewDecoder(resp)
	if st := d.Byte(); st != stOK {
		t.Fatalf("batch answered status %d", st)
	}
	if cnt := d.Uvarint(); cnt != n {
		t.Fatalf("batch answered %d results for %d", cnt, n)
	}
	idx := map[uint64]int{}
	for i := range n {
		st, item := d.Byte(), d.Bytes()
		if d.Err() != nil || st != stOK {
			t.Fatalf("renewal %d: status %d %v", i, st, d.Err())
		}
		r, err := decodeResult(item)
		if err != nil || r.Err != nil || !r.Granted {
			t.Fatalf("renewal %d: %+v %v", i, r, err)
		}
		idx[r.Index]++
	}
	if len(idx) != 1 {
		t.Fatalf("a forwarded batch of %d renewals took entries %v, want one", n, idx)
	}
}

// An async group that stalls (its caller descheduled, or waiting inside
// it) holds another connection's write for maxGroupHold at most: on a
// follower the write is forwarded and answered, on the leader the
// renewal is proposed, while the group stays open.
func TestAsyncGroupStalledHoldsOthersBriefly(t *testing.T) {
	tc := renewCluster(t, true, 1)
	l, f := tc.leader(10*time.Second), tc.follower()
	ctx := ctxT(t, 30*time.Second)

	f.BeginAsyncGroup()
	fut := f.ApplyAsync(ctx, incr("other-conn"))
	select {
	case <-fut.Done():
		if r, err := fut.Result(); err != nil || r.Reply.Int != 1 {
			t.Fatalf("follower: INCR behind a stalled group: %+v %v", r, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("follower: a write waits behind a stalled group")
	}
	f.EndAsyncGroup()

	l.BeginAsyncGroup()
	fut = l.ApplyAsync(ctx, &fsm.Command{Op: fsm.OpExtend, Key: "k0", Owner: "o", TTL: 60000})
	// Proposed, not answered: an answer may also come once some other
	// proposal takes the held renewal along (a tick, within about a
	// second), which the bound must beat by far.
	deadline := time.Now().Add(300 * time.Millisecond)
	for l.renew.queued.Load() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("leader: a renewal held behind a stalled group for 300ms")
		}
		time.Sleep(time.Millisecond)
	}
	l.EndAsyncGroup()
	if r, err := fut.Result(); err != nil || r.Err != nil || !r.Granted {
		t.Fatalf("leader: extend behind a stalled group: %+v %v", r, err)
	}
}

// notReadyTerm makes l look like a leader whose term is still being set
// up (as right after it won an election) until the returned function is
// called.
func notReadyTerm(t *testing.T, l *Node) (ready func()) {
	t.Helper()
	real := l.lead.Load()
	if real == nil {
		t.Fatal("not the leader")
	}
	fake := &leadership{ctx: real.ctx, cancel: real.cancel, ready: make(chan struct{}), done: real.done,
		began: real.began, t0: real.t0, m0: real.m0}
	l.lead.Store(fake)
	var once bool
	ready = func() {
		if !once {
			once = true
			close(fake.ready)
			l.lead.CompareAndSwap(fake, real)
		}
	}
	t.Cleanup(ready)
	return ready
}

// A command queued for forwarding before its node became leader commits
// before the same caller's next ones, asynchronous or waited for, also
// while the new term is not ready yet: they join the queue behind it
// rather than being proposed at once (SET k a; SET k b ends with k=b).
func TestApplyAsyncQueuedBeforeLeadershipKeepsOrder(t *testing.T) {
	tc := renewCluster(t, true, 0)
	l := tc.leader(10 * time.Second)
	ctx := ctxT(t, 30*time.Second)
	set := func(v string) *fsm.Command {
		return &fsm.Command{Op: fsm.OpRedis, Args: [][]byte{[]byte("SET"), []byte("k"), []byte(v)}}
	}
	ready := notReadyTerm(t, l)
	// cmd1 was queued while this node was a follower; its group is open.
	l.BeginAsyncGroup()
	if f := l.takeAsyncSlot(ctx); f != nil {
		t.Fatal(f.Result())
	}
	f1 := l.forwardAsync(set("a"))
	returned := make(chan fsm.Future, 1)
	// Ends once ApplyAsync returns: at once when it queues, or once the
	// term is ready (ready is called by the cleanup at the latest).
	go func() { returned <- l.ApplyAsync(ctx, set("b")) }()
	var f2 fsm.Future
	select {
	case f2 = <-returned:
	case <-time.After(5 * time.Second):
		t.Fatal("ApplyAsync waits for the term to be ready instead of queueing behind the queued command")
	}
	// The group's hold ends within maxGroupHold: the sender then takes
	// both and waits for the term.
	tc.eventually(5*time.Second, "the queued commands on their way", func() bool {
		l.fwd.mu.Lock()
		defer l.fwd.mu.Unlock()
		return len(l.fwd.items) == 0 && l.fwd.sending
	})
	type answer struct {
		r   fsm.Result
		err error
	}
	waited := make(chan answer, 1)
	// Ends once Apply returns (the term is made ready below, or by the
	// cleanup).
	go func() {
		r, err := l.Apply(ctx, set("c"))
		waited <- answer{r, err}
	}()
	tc.eventually(5*time.Second, "Apply queued behind the queued commands", func() bool {
		l.fwd.mu.Lock()
		defer l.fwd.mu.Unlock()
		for _, it := range l.fwd.items {
			if it.reply != nil && it.cmd != nil && len(it.cmd.Args) == 3 && string(it.cmd.Args[2]) == "c" {
				return true
			}
		}
		return false
	})
	l.EndAsyncGroup()
	ready()
	r1, err1 := f1.Result()
	r2, err2 := f2.Result()
	a3 := <-waited
	r3 := a3.r
	if err1 != nil || err2 != nil || a3.err != nil {
		t.Fatal(err1, err2, a3.err)
	}
	if !(r1.Index < r2.Index && r2.Index < r3.Index) {
		t.Fatalf("committed out of order: SET a at %d, SET b at %d, SET c at %d", r1.Index, r2.Index, r3.Index)
	}
	if err := l.Read(ctx, false, func(tb *fsm.Table, now int64) {
		if r, _ := tb.Read(now, [][]byte{[]byte("GET"), []byte("k")}); r.Str != "c" {
			t.Errorf("GET k = %q, want c", r.Str)
		}
	}); err != nil {
		t.Fatal(err)
	}
}
