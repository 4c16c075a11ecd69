package cluster

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
	"github.com/locknode/locknode/fsm/reply"
	"github.com/locknode/locknode/transport"
)

// batchFaultTransport plays a fault on the first batch call
// (rpcApplyBatchHinted or rpcApplyBatch) a node sends: "lost" delivers it
// and then loses the answer (ErrConnLost), "unreached" fails it before it
// leaves (a dial failure), "leaderChange" makes the leader step down
// before delivering it. "oldLeader" answers every rpcApplyBatchHinted as
// a leader that predates it.
type batchFaultTransport struct {
	Transport
	fault  string
	before func() // for "leaderChange": run before the call is sent

	mu    sync.Mutex
	calls int
	sizes []int  // commands per batch call
	kinds []byte // kind of each batch call that reached the leader
}

func (b *batchFaultTransport) Call(ctx context.Context, addr string, req []byte) ([]byte, error) {
	if len(req) == 0 || (req[0] != rpcApplyBatch && req[0] != rpcApplyBatchHinted) {
		return b.Transport.Call(ctx, addr, req)
	}
	if req[0] == rpcApplyBatchHinted && b.fault == "oldLeader" {
		return nil, fmt.Errorf("%w: cluster: malformed rpc: unknown kind %d", transport.ErrRemote, req[0])
	}
	b.mu.Lock()
	b.kinds = append(b.kinds, req[0])
	b.mu.Unlock()
	d := fsm.NewDecoder(req[1:])
	cnt := int(d.Uvarint())
	b.mu.Lock()
	b.calls++
	first := b.calls == 1
	b.sizes = append(b.sizes, cnt)
	b.mu.Unlock()
	if first {
		switch b.fault {
		case "unreached":
			return nil, errors.New("test: dial failed")
		case "leaderChange":
			b.before()
		case "lost":
			if _, err := b.Transport.Call(ctx, addr, req); err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("test: answer dropped: %w", transport.ErrConnLost)
		}
	}
	return b.Transport.Call(ctx, addr, req)
}

func (b *batchFaultTransport) batchKinds() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]byte(nil), b.kinds...)
}

func (b *batchFaultTransport) batchSizes() []int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]int(nil), b.sizes...)
}

// readCounter reads key linearizably on n.
func readCounter(t *testing.T, n *Node, key string) int64 {
	t.Helper()
	var got string
	if err := n.Read(ctxT(t, 10*time.Second), false, func(tb *fsm.Table, now int64) {
		r, _ := tb.Read(now, [][]byte{[]byte("GET"), []byte(key)})
		got = r.Str
	}); err != nil {
		t.Fatal(err)
	}
	if got == "" {
		return 0
	}
	v, err := strconv.ParseInt(got, 10, 64)
	if err != nil {
		t.Fatalf("GET %s = %q", key, got)
	}
	return v
}

// TestForwardBatch: a pipeline of writes queued on a follower is
// forwarded in shared calls, committed in order, each command once, and
// a read on that follower after the last answer sees every write — also
// when the first call never reaches the leader (sent again), when its
// answer is lost (those commands fail with ErrUnknownOutcome, applied at
// most once, never retried), and when the leader changes before it.
func TestForwardBatch(t *testing.T) {
	for _, tt := range []struct {
		fault string
		// unknownOK: the first call's commands may fail, with an unknown
		// outcome or ErrNoLeader, instead of succeeding.
		unknownOK bool
	}{
		{fault: ""},
		{fault: "unreached"},
		{fault: "lost", unknownOK: true},
		{fault: "leaderChange", unknownOK: true},
		{fault: "oldLeader"},
	} {
		name := tt.fault
		if name == "" {
			name = "clean"
		}
		t.Run(name, func(t *testing.T) {
			bts := map[string]*batchFaultTransport{}
			tc := newTestCluster(t, 3, func(cfg *Config) {
				bt := &batchFaultTransport{Transport: cfg.Transport, fault: tt.fault}
				bts[cfg.ID] = bt
				cfg.Transport = bt
			})
			leader := tc.leader(10 * time.Second)
			f := tc.follower()
			bt := bts[f.ID()]
			bt.before = func() {
				// Ends when the transfer does; the call goes to the old
				// leader, which now refuses or loses it.
				_ = leader.raft.LeadershipTransfer().Error()
			}
			ctx := ctxT(t, 30*time.Second)
			const n = 300
			futs := make([]fsm.Future, n)
			for i := range futs {
				futs[i] = f.ApplyAsync(ctx, incr("ctr"))
			}
			var last, lastReply int64
			ok := 0
			for i, fu := range futs {
				r, err := fu.Result()
				if err != nil {
					if !tt.unknownOK || !(errors.Is(err, ErrUnknownOutcome) || errors.Is(err, api.ErrNoLeader)) {
						t.Fatalf("command %d: %v", i, err)
					}
					continue
				}
				ok++
				if r.Reply.Kind != reply.Int || r.Reply.Int <= lastReply {
					t.Fatalf("command %d: reply %+v after %d: out of order", i, r.Reply, lastReply)
				}
				if int64(r.Index) <= last {
					t.Fatalf("command %d: index %d after %d", i, r.Index, last)
				}
				last, lastReply = int64(r.Index), r.Reply.Int
			}
			if tt.unknownOK && ok == 0 {
				t.Fatal("no command succeeded")
			}
			if !tt.unknownOK && ok != n {
				t.Fatalf("%d of %d succeeded", ok, n)
			}
			// Read-your-writes on the follower, and exactly-once: every
			// success counted once, nothing applied twice.
			got := readCounter(t, f, "ctr")
			if got < lastReply || got > n {
				t.Fatalf("counter %d: want between the last reply %d and %d", got, lastReply, n)
			}
			if !tt.unknownOK && got != n {
				t.Fatalf("counter %d, want %d", got, n)
			}
			sizes := bt.batchSizes()
			if len(sizes) == 0 || len(sizes) >= n {
				t.Fatalf("%d commands in %d forwarding calls (%v): not batched", n, len(sizes), sizes)
			}
			// The hinted kind unless the leader predates it.
			want := byte(rpcApplyBatchHinted)
			if tt.fault == "oldLeader" {
				want = rpcApplyBatch
			}
			for i, k := range bt.batchKinds() {
				if k != want {
					t.Fatalf("batch call %d reached the leader as kind %d, want %d", i, k, want)
				}
			}
			t.Logf("%d commands in %d calls; counter %d, %d answered", n, len(sizes), got, ok)
		})
	}
}

// TestForwardedWriteThenRead: a write through a follower is visible to a
// stale (local) read on that follower as soon as it is answered, for the
// synchronous and the batched path.
func TestForwardedWriteThenRead(t *testing.T) {
	tc := newTestCluster(t, 3, nil)
	f := tc.follower()
	ctx := ctxT(t, 20*time.Second)
	for i := 1; i <= 50; i++ {
		var err error
		if i%2 == 0 {
			_, err = f.ApplyAsync(ctx, incr("rw")).Result()
		} else {
			_, err = f.Apply(ctx, incr("rw"))
		}
		if err != nil {
			t.Fatal(err)
		}
		var got string
		if err := f.Read(ctx, true, func(tb *fsm.Table, now int64) {
			r, _ := tb.Read(now, [][]byte{[]byte("GET"), []byte("rw")})
			got = r.Str
		}); err != nil {
			t.Fatal(err)
		}
		if got != strconv.Itoa(i) {
			t.Fatalf("after write %d a stale read on the follower says %q", i, got)
		}
	}
}

// TestForwardBatchRefusesBadCalls: the leader refuses malformed and
// oversized batches without proposing anything.
func TestForwardBatchRefusesBadCalls(t *testing.T) {
	tc := newTestCluster(t, 1, nil)
	l := tc.leader(10 * time.Second)
	ctx := ctxT(t, 10*time.Second)
	cmd := incr("x").AppendBinary(nil)
	one := func(cnt uint64, items ...[]byte) []byte {
		b := []byte{rpcApplyBatch}
		b = binary.AppendUvarint(b, cnt)
		for _, it := range items {
			b = binary.AppendUvarint(b, uint64(len(it)))
			b = append(b, it...)
		}
		return b
	}
	for _, tt := range []struct {
		name string
		req  []byte
	}{
		{"empty", one(0)},
		{"too many", one(maxForwardBatch + 1)},
		{"count above items", one(2, cmd)},
		{"trailing bytes", append(one(1, cmd), 0)},
		{"bad command", one(1, []byte{0xff, 0xff})},
		{"length past end", append(one(1), 0x7f)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := l.handleRPC(ctx, tt.req); !errors.Is(err, errBadRPC) {
				t.Fatalf("got %v, want errBadRPC", err)
			}
		})
	}
	// The leader's own entries (clock syncs) may come meanwhile; none of
	// the refused commands may have.
	var got reply.Reply
	if err := l.Read(ctx, false, func(tb *fsm.Table, now int64) {
		got, _ = tb.Read(now, [][]byte{[]byte("GET"), []byte("x")})
	}); err != nil {
		t.Fatal(err)
	}
	if got.Kind != reply.Nil {
		t.Fatalf("a refused call applied its command: GET x = %+v", got)
	}
}

// TestForwardBatchSync: concurrent Applies on a follower share
// forwarding calls; when the first call's answer is lost, each command
// (with a request id) is retried and applied once: every acquire is
// answered with the grant the table holds.
func TestForwardBatchSync(t *testing.T) {
	for _, fault := range []string{"", "lost", "unreached"} {
		name := fault
		if name == "" {
			name = "clean"
		}
		t.Run(name, func(t *testing.T) {
			bts := map[string]*batchFaultTransport{}
			tc := newTestCluster(t, 3, func(cfg *Config) {
				bt := &batchFaultTransport{Transport: cfg.Transport, fault: fault}
				bts[cfg.ID] = bt
				cfg.Transport = bt
			})
			f := tc.follower()
			ctx := ctxT(t, 30*time.Second)
			const workers, rounds = 32, 4
			fences := make([][]uint64, workers)
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for w := range workers {
				wg.Add(1)
				// Ends after its rounds or its first error.
				go func() {
					defer wg.Done()
					for r := range rounds {
						key := fmt.Sprintf("k%d-%d", w, r)
						l, err := f.TryAcquire(ctx, api.AcquireRequest{Key: key, Owner: "o", TTLMs: 60000})
						if err != nil {
							errs <- fmt.Errorf("%s: %w", key, err)
							return
						}
						fences[w] = append(fences[w], l.Fence)
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			for w := range workers {
				for r, fence := range fences[w] {
					key := fmt.Sprintf("k%d-%d", w, r)
					li, err := f.Inspect(ctx, key, api.ReadOptions{})
					if err != nil {
						t.Fatal(err)
					}
					if len(li.Holders) != 1 || li.Holders[0].Fence != fence {
						t.Fatalf("%s: answered fence %d, table %+v", key, fence, li.Holders)
					}
				}
			}
			sizes := bts[f.ID()].batchSizes()
			shared := false
			for _, s := range sizes {
				shared = shared || s > 1
			}
			if !shared {
				t.Fatalf("%d concurrent commands never shared a call: %v", workers*rounds, sizes)
			}
			t.Logf("%d acquires in %d calls", workers*rounds, len(sizes))
		})
	}
}
