package cluster

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/locknode/locknode/fsm"
)

// renewCluster starts 3 nodes; batched: at the highest cluster version,
// fsm.VersionBatchRenew or later (else left at version 1 by ManualUpgrade). It holds locks k0..k<n-1> for
// owner "o" with 60 s leases.
func renewCluster(t *testing.T, batched bool, n int) *testCluster {
	t.Helper()
	tc := newTestCluster(t, 3, func(c *Config) {
		c.UpgradeCheckInterval = 10 * time.Millisecond
		c.ManualUpgrade = !batched
	})
	for _, nd := range tc.nodes {
		// Batched: the highest version this binary runs, which includes
		// fsm.VersionBatchRenew (the synthetic next release runs more).
		tc.eventually(10*time.Second, nd.ID()+" at the cluster version", func() bool {
			v := nd.ClusterVersion()
			return batched && v == fsm.MaxClusterVersion || !batched && v == 1
		})
	}
	l := tc.leader(10 * time.Second)
	ctx := ctxT(t, 30*time.Second)
	futs := make([]fsm.Future, n)
	for i := range n {
		futs[i] = l.ApplyAsync(ctx, &fsm.Command{Op: fsm.OpAcquire, Key: fmt.Sprint("k", i), Owner: "o", TTL: 60000})
	}
	for i, f := range futs {
		if r, err := f.Result(); err != nil || r.Err != nil || !r.Granted {
			t.Fatalf("acquire k%d: %+v %v", i, r, err)
		}
	}
	return tc
}

// renewAll sends extends of k0..k<n-1> through nd, pipelined, with the one
// at bad for an owner that does not hold it, and returns the results.
func renewAll(t *testing.T, nd *Node, n, bad int) []fsm.Result {
	t.Helper()
	ctx := ctxT(t, 30*time.Second)
	futs := make([]fsm.Future, n)
	for i := range n {
		owner := "o"
		if i == bad {
			owner = "thief"
		}
		futs[i] = nd.ApplyAsync(ctx, &fsm.Command{Op: fsm.OpExtend, Key: fmt.Sprint("k", i), Owner: owner, TTL: 60000, ReqID: fmt.Sprint(nd.ID(), "-", i)})
	}
	out := make([]fsm.Result, n)
	for i, f := range futs {
		r, err := f.Result()
		if err != nil {
			t.Fatalf("extend k%d: %v", i, err)
		}
		out[i] = r
	}
	return out
}

// Renewals that arrive while a renewal entry is in flight share the next
// entry, through the leader and through a follower; each keeps its own
// outcome (the one whose owner does not hold the lock fails alone).
func TestRenewalsCoalesced(t *testing.T) {
	const n = 200
	tc := renewCluster(t, true, n)
	for _, nd := range []*Node{tc.leader(10 * time.Second), tc.follower()} {
		extends, batches := tc.allProposals("extend"), tc.allProposals("batch_renew")
		res := renewAll(t, nd, n, n/2)
		byIndex := map[uint64]int{}
		for i, r := range res {
			byIndex[r.Index]++
			if i == n/2 {
				if !errors.Is(r.Err, fsm.ErrNotOwner) && !errors.Is(r.Err, fsm.ErrNotHeld) {
					t.Fatalf("%s: extend by a non-owner: %+v", nd.ID(), r)
				}
				continue
			}
			if r.Err != nil || !r.Granted || r.Deadline != r.Now+60000 {
				t.Fatalf("%s: extend k%d: %+v", nd.ID(), i, r)
			}
		}
		entries := tc.allProposals("extend") - extends + tc.allProposals("batch_renew") - batches
		if entries > n/4 || tc.allProposals("batch_renew") == batches {
			t.Fatalf("%s: %d renewals took %.0f entries (%d distinct indexes)", nd.ID(), n, entries, len(byIndex))
		}
		if len(byIndex) != int(entries) {
			t.Fatalf("%s: results at %d indexes, %.0f entries proposed", nd.ID(), len(byIndex), entries)
		}
		t.Logf("%s: %d renewals in %.0f entries", nd.ID(), n, entries)
	}
}

// At a cluster version before fsm.VersionBatchRenew every renewal is an
// entry of its own, as before.
func TestRenewalsOneEntryEachBeforeVersion(t *testing.T) {
	const n = 100
	tc := renewCluster(t, false, n)
	l := tc.leader(10 * time.Second)
	extends := tc.allProposals("extend")
	res := renewAll(t, l, n, -1)
	seen := map[uint64]bool{}
	for i, r := range res {
		if r.Err != nil || !r.Granted || seen[r.Index] {
			t.Fatalf("extend k%d: %+v (index seen before: %v)", i, r, seen[r.Index])
		}
		seen[r.Index] = true
	}
	if got := tc.allProposals("extend") - extends; got != n || tc.allProposals("batch_renew") != 0 {
		t.Fatalf("%d renewals took %.0f extend entries and %.0f batches", n, got, tc.allProposals("batch_renew"))
	}
}

// A renewal sent again with the same request id (its first answer lost)
// gets the first answer, also when both went into shared entries.
func TestRenewalExactlyOnceAcrossBatches(t *testing.T) {
	const n = 50
	tc := renewCluster(t, true, n)
	f := tc.follower()
	first := renewAll(t, f, n, -1)
	again := renewAll(t, f, n, -1)
	for i := range n {
		a, b := first[i], again[i]
		if a.Err != nil || b.Err != nil || a.Deadline != b.Deadline || a.Fence != b.Fence || !b.Granted {
			t.Fatalf("k%d: first %+v, retried %+v", i, a, b)
		}
	}
	if tc.allProposals("batch_renew") == 0 {
		t.Fatal("no renewals were coalesced")
	}
}

// A command pipelined after a queued renewal is not overtaken by it: a
// release sent after an extend of the same lock finds the extend done.
func TestRenewalKeepsPipelineOrder(t *testing.T) {
	const n = 64
	tc := renewCluster(t, true, n)
	l := tc.leader(10 * time.Second)
	ctx := ctxT(t, 30*time.Second)
	var futs []fsm.Future
	for i := range n {
		k := fmt.Sprint("k", i)
		futs = append(futs,
			l.ApplyAsync(ctx, &fsm.Command{Op: fsm.OpExtend, Key: k, Owner: "o", TTL: 60000}),
			l.ApplyAsync(ctx, &fsm.Command{Op: fsm.OpRelease, Key: k, Owner: "o"}))
	}
	for i, f := range futs {
		r, err := f.Result()
		if err != nil || r.Err != nil {
			t.Fatalf("command %d (%s of k%d): %+v %v", i, []string{"extend", "release"}[i%2], i/2, r, err)
		}
	}
}

// redsync's Extend (its touchScript by EVALSHA) is coalesced like an
// extend, and answers as it does alone: 1 for the owner's token, 0 for
// another; a script that is not a compare-and-pexpire is never batched.
func TestRenewalScriptsCoalesced(t *testing.T) {
	const touch = "\n\tif redis.call(\"GET\", KEYS[1]) == ARGV[1] then\n\t\treturn redis.call(\"PEXPIRE\", KEYS[1], ARGV[2])\n\telse\n\t\treturn 0\n\tend\n"
	const n = 100
	tc := renewCluster(t, true, 0)
	l := tc.leader(10 * time.Second)
	ctx := ctxT(t, 30*time.Second)
	load, err := l.Apply(ctx, &fsm.Command{Op: fsm.OpScriptLoad, Script: []byte(touch)})
	if err != nil || load.Reply.Str != "d75bb8b5bd13532ddedd17762e772346e39b321e" {
		t.Fatalf("SCRIPT LOAD: %+v %v", load, err)
	}
	sha := load.Reply.Str
	for i := range n {
		r, err := l.Apply(ctx, &fsm.Command{Op: fsm.OpRedis, Args: [][]byte{[]byte("SET"), []byte(fmt.Sprint("r", i)), []byte("tok"), []byte("NX"), []byte("PX"), []byte("10000")}})
		if err != nil || r.Reply.Str != "OK" {
			t.Fatalf("SET r%d: %+v %v", i, r, err)
		}
	}
	batches, evals := tc.allProposals("batch_renew"), tc.allProposals("evalsha")
	futs := make([]fsm.Future, n)
	for i := range n {
		tok := "tok"
		if i == n/2 {
			tok = "other"
		}
		futs[i] = l.ApplyAsync(ctx, &fsm.Command{Op: fsm.OpEvalSHA, Key: sha, KeysB: [][]byte{[]byte(fmt.Sprint("r", i))}, Args: [][]byte{[]byte(tok), []byte("60000")}})
	}
	for i, f := range futs {
		r, err := f.Result()
		want := int64(1)
		if i == n/2 {
			want = 0
		}
		if err != nil || r.Err != nil || r.Reply.Int != want {
			t.Fatalf("extend r%d: %+v %v, want %d", i, r, err, want)
		}
	}
	entries := tc.allProposals("batch_renew") - batches + tc.allProposals("evalsha") - evals
	if entries > n/4 || tc.allProposals("batch_renew") == batches {
		t.Fatalf("%d script renewals took %.0f entries", n, entries)
	}
	// Another script (a plain GET) goes alone, as before.
	get, err := l.Apply(ctx, &fsm.Command{Op: fsm.OpScriptLoad, Script: []byte(`return redis.call("GET", KEYS[1])`)})
	if err != nil {
		t.Fatal(err)
	}
	if fsm.Renewal(&fsm.Command{Op: fsm.OpEvalSHA, Key: get.Reply.Str}) && l.batchableRenewal(&fsm.Command{Op: fsm.OpEvalSHA, Key: get.Reply.Str}) {
		t.Fatal("a GET script taken for a renewal")
	}
}

// Redisson's watchdog renewal (its exact text by EVALSHA) is coalesced
// like redsync's once fsm.VersionRedissonRenew is active, and answers as
// it does alone: 1 for the owner's field, 0 for another. Below that
// version the leader proposes each alone, and it runs in Lua.
func TestRedissonRenewalsCoalesced(t *testing.T) {
	const renew = "if (redis.call('hexists', KEYS[1], ARGV[2]) == 1) then " +
		"redis.call('pexpire', KEYS[1], ARGV[1]); return 1; end; return 0;"
	const n = 100
	tc := renewCluster(t, false, 0)
	l := tc.leader(10 * time.Second)
	ctx := ctxT(t, 60*time.Second)
	setVersion := func(v uint32) {
		t.Helper()
		if r, err := l.Apply(ctx, &fsm.Command{Op: fsm.OpSetVersion, Token: uint64(v)}); err != nil || r.Err != nil {
			t.Fatalf("set version %d: %+v %v", v, r, err)
		}
		for _, nd := range tc.nodes {
			tc.eventually(10*time.Second, nd.ID()+" at the cluster version", func() bool { return nd.ClusterVersion() == v })
		}
	}
	setVersion(fsm.VersionRedissonRenew - 1)
	load, err := l.Apply(ctx, &fsm.Command{Op: fsm.OpScriptLoad, Script: []byte(renew)})
	if err != nil || load.Reply.Str != fsm.ScriptSHA([]byte(renew)) {
		t.Fatalf("SCRIPT LOAD: %+v %v", load, err)
	}
	sha := load.Reply.Str
	for i := range n {
		r, err := l.Apply(ctx, &fsm.Command{Op: fsm.OpRedis, Args: [][]byte{[]byte("HSET"), []byte(fmt.Sprint("h", i)), []byte("uuid:1"), []byte("1")}})
		if err != nil || r.Reply.Int != 1 {
			t.Fatalf("HSET h%d: %+v %v", i, r, err)
		}
	}
	// renewAllHashes renews h0..h<n-1> at once, the one at n/2 by another
	// owner, and returns the entries they took.
	renewAllHashes := func(ttl string) float64 {
		t.Helper()
		batches, evals := tc.allProposals("batch_renew"), tc.allProposals("evalsha")
		futs := make([]fsm.Future, n)
		for i := range n {
			field := "uuid:1"
			if i == n/2 {
				field = "uuid:2"
			}
			futs[i] = l.ApplyAsync(ctx, &fsm.Command{Op: fsm.OpEvalSHA, Key: sha, KeysB: [][]byte{[]byte(fmt.Sprint("h", i))}, Args: [][]byte{[]byte(ttl), []byte(field)}})
		}
		for i, f := range futs {
			r, err := f.Result()
			want := int64(1)
			if i == n/2 {
				want = 0
			}
			if err != nil || r.Err != nil || r.Reply.Int != want {
				t.Fatalf("renew h%d: %+v %v, want %d", i, r, err, want)
			}
		}
		return tc.allProposals("batch_renew") - batches + tc.allProposals("evalsha") - evals
	}
	if l.batchableRenewal(&fsm.Command{Op: fsm.OpEvalSHA, Key: sha}) {
		t.Fatalf("batchable below version %d", fsm.VersionRedissonRenew)
	}
	if entries := renewAllHashes("60000"); entries < n {
		t.Fatalf("below version %d: %d renewals took %.0f entries, want one each", fsm.VersionRedissonRenew, n, entries)
	}
	setVersion(fsm.VersionRedissonRenew)
	if !l.batchableRenewal(&fsm.Command{Op: fsm.OpEvalSHA, Key: sha}) {
		t.Fatalf("not batchable at version %d", fsm.VersionRedissonRenew)
	}
	batches := tc.allProposals("batch_renew")
	if entries := renewAllHashes("90000"); entries > n/4 || tc.allProposals("batch_renew") == batches {
		t.Fatalf("at version %d: %d renewals took %.0f entries", fsm.VersionRedissonRenew, n, entries)
	}
	// Every node renewed alike: the lease the batch set, and none on
	// h<n/2>, whose field was never the renewing owner's.
	for _, nd := range tc.nodes {
		tc.eventually(10*time.Second, nd.ID()+" applied the renewals", func() bool {
			var p0, pm int64
			err := nd.Read(ctx, true, func(tb *fsm.Table, now int64) {
				r0, _ := tb.Read(now, [][]byte{[]byte("PTTL"), []byte("h0")})
				rm, _ := tb.Read(now, [][]byte{[]byte("PTTL"), []byte(fmt.Sprint("h", n/2))})
				p0, pm = r0.Int, rm.Int
			})
			return err == nil && p0 > 60000 && pm == -1
		})
	}
}

// Each renewal's result is built only where a batch awaits it: the
// leader's answers are whole (through the leader and through a
// follower), the count of awaited batches returns to zero once they are
// answered, and every node, whether it built the results or not, holds
// the same leases after.
func TestBatchResultsOnlyWhereAwaited(t *testing.T) {
	const n = 150
	tc := renewCluster(t, true, n)
	l := tc.leader(10 * time.Second)
	batches := tc.allProposals("batch_renew")
	want := map[string]int64{}
	for _, nd := range []*Node{tc.follower(), l} {
		for i, r := range renewAll(t, nd, n, -1) {
			if r.Err != nil || !r.Granted {
				t.Fatalf("%s: extend k%d: %+v", nd.ID(), i, r)
			}
			want[fmt.Sprint("k", i)] = r.Deadline
		}
	}
	if tc.allProposals("batch_renew") == batches {
		t.Fatal("no renewals were coalesced")
	}
	for _, nd := range tc.nodes {
		if got := nd.renew.awaited.Load(); got != 0 {
			t.Errorf("%s: %d batch entries still counted as awaited", nd.ID(), got)
		}
		tc.waitState(nd, 10*time.Second, nd.ID()+" holding the renewed leases", func(tab *fsm.Table, now int64) bool {
			for k, d := range want {
				if h, ok := tab.HoldOf(k, "o", now); !ok || h.Deadline != d {
					return false
				}
			}
			return true
		})
	}
}

// A hook added to a queued renewal runs exactly once: when its group is
// answered, or at once if it was answered already; also for a group
// answered without being proposed (its term ended).
func TestRenewalOnAnswered(t *testing.T) {
	n := &Node{}
	b := &n.renew
	for _, early := range []bool{false, true} {
		g := &renewGroup{done: make(chan struct{})}
		f := &renewFuture{g: g}
		ran := 0
		n.onAnswered(f, func() { ran++ })
		if ran != 0 {
			t.Fatalf("early=%v: hook ran before the answer", early)
		}
		if early {
			b.mu.Lock()
			n.answeredEarly(g)
			b.mu.Unlock()
		} else {
			close(g.done)
			b.mu.Lock()
			then := g.answeredLocked()
			b.mu.Unlock()
			for _, fn := range then {
				fn()
			}
		}
		if ran != 1 {
			t.Fatalf("early=%v: hook ran %d times at the answer", early, ran)
		}
		n.onAnswered(f, func() { ran++ })
		if ran != 2 {
			t.Fatalf("early=%v: hook added after the answer ran %d times", early, ran-1)
		}
		select {
		case <-f.done():
		default:
			t.Fatalf("early=%v: answered but not done", early)
		}
	}
}

// With one renewal entry in flight, the next renewal is handed to raft
// at once rather than queued for that entry's answer (here the entry in
// flight never answers).
func TestRenewalLeavesWithOneInFlight(t *testing.T) {
	tc := renewCluster(t, true, 1)
	l := tc.leader(10 * time.Second)
	var lead *leadership
	tc.eventually(10*time.Second, "the leader's term ready", func() bool {
		lead = l.lead.Load()
		if lead == nil {
			return false
		}
		select {
		case <-lead.ready:
			return true
		default:
			return false
		}
	})
	b := &l.renew
	b.mu.Lock()
	b.inflight++ // an entry that never answers
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		b.inflight--
		b.mu.Unlock()
	}()
	f := l.propose(lead, &fsm.Command{Op: fsm.OpExtend, Key: "k0", Owner: "o", TTL: 60000})
	if q := b.queued.Load(); q != 0 {
		t.Fatalf("the renewal was queued (%d queued) behind the entry in flight", q)
	}
	if err := l.await(f); err != nil {
		t.Fatal(err)
	}
	if res, err := proposalResult(f); err != nil || res.Err != nil || !res.Granted {
		t.Fatalf("extend with one entry in flight: %+v %v", res, err)
	}
}
