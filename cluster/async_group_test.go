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
