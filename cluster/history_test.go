package cluster

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/locknode/locknode/api"
	"github.com/locknode/locknode/fsm"
)

// historyHarness applies commands to a real table and feeds the history
// as the apply path does.
type historyHarness struct {
	t     *testing.T
	table *fsm.Table
	h     *history
	idx   uint64
	now   int64
	sec   int64
}

func newHistoryHarness(t *testing.T, keys, entries int) *historyHarness {
	hh := &historyHarness{t: t, table: fsm.New(fsm.DefaultConfig()), now: 1_700_000_000_000, sec: 1_700_000_000}
	hh.h = newHistory(keys, entries, newActivity(time.Minute, func() time.Time { return time.Unix(hh.sec, 0) }))
	return hh
}

func (hh *historyHarness) apply(cmd fsm.Command) fsm.Result {
	hh.t.Helper()
	hh.idx++
	hh.now += 10
	cmd.Time = hh.now
	r := hh.table.Apply(hh.idx, &cmd)
	hh.h.begin()
	hh.h.observe(hh.table, &cmd, &r)
	hh.h.flush()
	return r
}

func (hh *historyHarness) acquire(key, owner string, ttl, wait int64, req string) fsm.Result {
	return hh.apply(fsm.Command{Op: fsm.OpAcquire, Key: key, Owner: owner, TTL: ttl, Wait: wait, ReqID: req})
}

// ends lists key's entries newest first as "owner/fence/end" (a fence is
// the index of the granting entry).
func (hh *historyHarness) ends(key string) []string {
	var out []string
	for _, e := range hh.h.get(key) {
		out = append(out, fmt.Sprintf("%s/%d/%s", e.Owner, e.Fence, e.End))
	}
	return out
}

func TestHistoryEndReasons(t *testing.T) {
	tests := []struct {
		name string
		run  func(hh *historyHarness)
		want []string
	}{
		{"release", func(hh *historyHarness) {
			hh.acquire("k", "a", 60000, 0, "r1")
			hh.apply(fsm.Command{Op: fsm.OpRelease, Key: "k", Owner: "a"})
		}, []string{"a/1/release"}},
		{"still held", func(hh *historyHarness) {
			hh.acquire("k", "a", 60000, 0, "r1")
		}, []string{"a/1/held"}},
		{"expiry then next", func(hh *historyHarness) {
			hh.acquire("k", "a", 50, 0, "r1")
			hh.now += 1000
			hh.apply(fsm.Command{Op: fsm.OpTick})
			hh.acquire("k", "b", 60000, 0, "r2")
		}, []string{"b/3/held", "a/1/expiry"}},
		{"forced", func(hh *historyHarness) {
			hh.acquire("k", "a", 60000, 0, "r1")
			hh.apply(fsm.Command{Op: fsm.OpRelease, Key: "k", Force: true})
		}, []string{"a/1/forced"}},
		{"session closed", func(hh *historyHarness) {
			hh.apply(fsm.Command{Op: fsm.OpSessionOpen, Session: "s1", TTL: 60000})
			hh.apply(fsm.Command{Op: fsm.OpAcquire, Key: "k", Owner: "a", TTL: 60000, Session: "s1"})
			hh.apply(fsm.Command{Op: fsm.OpSessionClose, Session: "s1"})
		}, []string{"a/2/session"}},
		{"waiter granted on release", func(hh *historyHarness) {
			hh.acquire("k", "a", 60000, 0, "r1")
			if r := hh.acquire("k", "b", 60000, 30000, "r2"); !r.Queued {
				hh.t.Fatalf("b not queued: %+v", r)
			}
			hh.apply(fsm.Command{Op: fsm.OpRelease, Key: "k", Owner: "a"})
		}, []string{"b/3/held", "a/1/release"}},
		{"retried acquire recorded once", func(hh *historyHarness) {
			hh.acquire("k", "a", 60000, 0, "r1")
			hh.acquire("k", "a", 60000, 0, "r1")
		}, []string{"a/1/held"}},
		{"reentrant acquire is the same hold", func(hh *historyHarness) {
			hh.apply(fsm.Command{Op: fsm.OpAcquire, Key: "k", Owner: "a", TTL: 60000, Reentrant: true})
			hh.apply(fsm.Command{Op: fsm.OpAcquire, Key: "k", Owner: "a", TTL: 60000, Reentrant: true})
		}, []string{"a/1/held"}},
		{"reowned hold ends under its new owner", func(hh *historyHarness) {
			hh.acquire("k", "a", 60000, 0, "r1")
			if r := hh.apply(fsm.Command{Op: fsm.OpReown, Key: "k", Owner: "a", Args: [][]byte{[]byte("b")}}); r.Err != nil {
				hh.t.Fatal(r.Err)
			}
			hh.apply(fsm.Command{Op: fsm.OpRelease, Key: "k", Owner: "b"})
		}, []string{"b/1/release"}},
		{"redis SET NX then DEL", func(hh *historyHarness) {
			hh.apply(fsm.Command{Op: fsm.OpRedis, Args: [][]byte{[]byte("SET"), []byte("k"), []byte("tok"), []byte("NX"), []byte("PX"), []byte("60000")}})
			hh.apply(fsm.Command{Op: fsm.OpRedis, Args: [][]byte{[]byte("DEL"), []byte("k")}})
		}, []string{"tok/1/forced"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hh := newHistoryHarness(t, 16, 16)
			tt.run(hh)
			if got := hh.ends("k"); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("history %v, want %v", got, tt.want)
			}
		})
	}
}

func TestHistoryBounds(t *testing.T) {
	hh := newHistoryHarness(t, 3, 4)
	// Six grants of k0: only the newest four are kept.
	for i := range 6 {
		hh.acquire("k0", fmt.Sprintf("o%d", i), 60000, 0, fmt.Sprintf("a%d", i))
		hh.apply(fsm.Command{Op: fsm.OpRelease, Key: "k0", Owner: fmt.Sprintf("o%d", i)})
	}
	if got, want := fmt.Sprint(hh.ends("k0")), "[o5/11/release o4/9/release o3/7/release o2/5/release]"; got != want {
		t.Fatalf("k0: %s, want %s", got, want)
	}
	// Three more keys: k0, granted least recently, is forgotten.
	for _, k := range []string{"k1", "k2", "k3"} {
		hh.acquire(k, "x", 60000, 0, "r-"+k)
	}
	if got := hh.ends("k0"); len(got) != 0 {
		t.Fatalf("k0 kept past HistoryKeys: %v", got)
	}
	// A new grant of k1 makes k2 the oldest: k4 evicts k2, not k1.
	hh.apply(fsm.Command{Op: fsm.OpRelease, Key: "k1", Owner: "x"})
	hh.acquire("k1", "y", 60000, 0, "r-k1b")
	hh.acquire("k4", "x", 60000, 0, "r-k4")
	if len(hh.h.keys) != 3 || len(hh.ends("k2")) != 0 || len(hh.ends("k1")) != 2 {
		t.Fatalf("keys %d, k1 %v, k2 %v", len(hh.h.keys), hh.ends("k1"), hh.ends("k2"))
	}
	// Waiters remembered for their wait are bounded by 4×HistoryKeys.
	for i := range 20 {
		hh.acquire("k4", fmt.Sprintf("w%d", i), 60000, 60000, fmt.Sprintf("w%d", i))
	}
	if len(hh.h.pending) != 12 {
		t.Fatalf("pending waiters %d, want 12", len(hh.h.pending))
	}
}

func TestHistoryOff(t *testing.T) {
	hh := newHistoryHarness(t, 0, 16)
	hh.acquire("k", "a", 60000, 0, "r1")
	if got := hh.ends("k"); len(got) != 0 || len(hh.h.keys) != 0 {
		t.Fatalf("history kept with HistoryKeys off: %v", got)
	}
}

func TestActivitySamples(t *testing.T) {
	hh := newHistoryHarness(t, 16, 16)
	hh.acquire("k", "a", 60000, 0, "r1")
	hh.acquire("k", "b", 60000, 60000, "r2") // contended
	hh.now += 300                            // b waits 300 ms (+ the step)
	hh.apply(fsm.Command{Op: fsm.OpRelease, Key: "k", Owner: "a"})
	hh.sec++
	hh.apply(fsm.Command{Op: fsm.OpRelease, Key: "k", Owner: "b", Force: true})
	s := hh.h.activity.samples()
	if len(s) != 60 {
		t.Fatalf("%d samples, want 60", len(s))
	}
	prev, last := s[len(s)-2], s[len(s)-1]
	want := api.ActivitySample{UnixSec: hh.sec - 1, Grants: 2, Releases: 1, Contended: 1, WaitP99Ms: 500, WaitP99Bucket: 8} // 250–500 ms
	if prev != want {
		t.Fatalf("previous second %+v, want %+v", prev, want)
	}
	if want := (api.ActivitySample{UnixSec: hh.sec, Forced: 1}); last != want {
		t.Fatalf("last second %+v, want %+v", last, want)
	}
	// A minute later the window has moved past both.
	hh.sec += 60
	for _, x := range hh.h.activity.samples() {
		if x != (api.ActivitySample{UnixSec: x.UnixSec}) {
			t.Fatalf("old sample still in the window: %+v", x)
		}
	}
}

// TestApplyBatchActivity: the adapter counts every entry of a batch in
// the activity samples once the batch is applied, whatever the batch
// size, and leaves no counts behind for the next batch.
func TestApplyBatchActivity(t *testing.T) {
	for _, tc := range []struct {
		name         string
		locks, batch int
		wantGrants   int
	}{
		{name: "one entry per batch", locks: 3, batch: 1, wantGrants: 3},
		{name: "one batch", locks: 5, batch: 5, wantGrants: 5},
		{name: "uneven batches", locks: 7, batch: 3, wantGrants: 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := adapterNode(t)
			f := (*fsmAdapter)(n)
			logs := setNXLogs(t, 1, 0, tc.locks, 1)
			for len(logs) > 0 {
				k := min(tc.batch, len(logs))
				f.ApplyBatch(logs[:k])
				logs = logs[k:]
			}
			grants := 0
			for _, s := range n.history.activity.samples() {
				grants += s.Grants
			}
			if grants != tc.wantGrants {
				t.Fatalf("activity counts %d grants, want %d", grants, tc.wantGrants)
			}
			if n.history.batch != (sample{}) {
				t.Fatalf("counts left after the batch: %+v", n.history.batch)
			}
		})
	}
}

func TestNodeHistory(t *testing.T) {
	tc := newTestCluster(t, 1, func(c *Config) { c.HistoryEntries = 2 })
	n := tc.leader(10 * time.Second)
	ctx := ctxT(t, 30*time.Second)
	for _, o := range []string{"a", "b", "c"} {
		if _, err := n.TryAcquire(ctx, api.AcquireRequest{Key: "k", Owner: o, TTLMs: 60000}); err != nil {
			t.Fatal(err)
		}
		if _, err := n.Release(ctx, api.ReleaseRequest{Key: "k", Owner: o}); err != nil {
			t.Fatal(err)
		}
	}
	h, err := n.History(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Entries) != 2 || h.Entries[0].Owner != "c" || h.Entries[1].Owner != "b" || h.Entries[0].End != api.EndRelease || h.Entries[0].GrantedMs == 0 || h.Entries[0].EndedMs < h.Entries[0].GrantedMs {
		t.Fatalf("history %+v", h)
	}
	a, err := n.Activity(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	grants := 0
	for _, s := range a.Samples {
		grants += s.Grants
	}
	if grants != 3 {
		t.Fatalf("activity counts %d grants, want 3", grants)
	}
}

// BenchmarkHistoryObserve: the apply path's cost of the history hook,
// next to the table's own apply, for an acquire and a release of one of
// 10,000 keys (more than DefaultHistoryKeys, so keys are evicted too).
func BenchmarkHistoryObserve(b *testing.B) {
	for _, mode := range []string{"table only", "with history"} {
		b.Run(mode, func(b *testing.B) {
			table := fsm.New(fsm.DefaultConfig())
			h := newHistory(DefaultHistoryKeys, DefaultHistoryEntries, newActivity(DefaultActivityWindow, time.Now))
			keys := make([]string, 10000)
			for i := range keys {
				keys[i] = fmt.Sprintf("bench/%05d", i)
			}
			now := int64(1_700_000_000_000)
			var idx uint64
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				k := keys[i%len(keys)]
				for _, cmd := range []fsm.Command{
					{Op: fsm.OpAcquire, Key: k, Owner: "o", TTL: 60000},
					{Op: fsm.OpRelease, Key: k, Owner: "o"},
				} {
					idx++
					now++
					cmd.Time = now
					r := table.Apply(idx, &cmd)
					if mode == "with history" {
						h.begin()
						h.observe(table, &cmd, &r)
						h.flush()
					}
				}
			}
		})
	}
}

// BenchmarkHistoryObserveRESP: the history hook's cost for a Redis
// client's lock cycle (SET NX PX, then the compare-and-delete EVALSHA) on
// one of 64 keys, next to the table's own apply. One op is one cycle.
func BenchmarkHistoryObserveRESP(b *testing.B) {
	for _, mode := range []string{"table only", "with history"} {
		b.Run(mode, func(b *testing.B) {
			table := fsm.New(fsm.DefaultConfig())
			h := newHistory(DefaultHistoryKeys, DefaultHistoryEntries, newActivity(DefaultActivityWindow, time.Now))
			sha := fsm.ScriptSHA([]byte(benchCAD))
			idx, now := uint64(1), int64(1_700_000_000_000)
			table.Apply(idx, &fsm.Command{Op: fsm.OpScriptLoad, Script: []byte(benchCAD), Time: now})
			keys := make([][]byte, 64)
			for i := range keys {
				keys[i] = []byte(fmt.Sprintf("bench:%d", i))
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU()
			for i := 0; i < b.N; i++ {
				k, tok := keys[i%len(keys)], []byte(strconv.Itoa(i))
				for _, cmd := range []fsm.Command{
					{Op: fsm.OpRedis, Args: [][]byte{[]byte("SET"), k, tok, []byte("NX"), []byte("PX"), []byte("10000")}},
					{Op: fsm.OpEvalSHA, Key: sha, KeysB: [][]byte{k}, Args: [][]byte{tok}},
				} {
					idx++
					now++
					cmd.Time = now
					r := table.Apply(idx, &cmd)
					if mode == "with history" {
						h.begin()
						h.observe(table, &cmd, &r)
						h.flush()
					}
				}
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// TestNodeHistoryMeta: history entries carry the holder's metadata, for
// an immediate grant and for a waiter granted later.
func TestNodeHistoryMeta(t *testing.T) {
	tc := newTestCluster(t, 1, nil)
	n := tc.leader(10 * time.Second)
	ctx := ctxT(t, 30*time.Second)
	if _, err := n.TryAcquire(ctx, api.AcquireRequest{Key: "m", Owner: "a", TTLMs: 60000, Meta: map[string]string{"job": "first"}}); err != nil {
		t.Fatal(err)
	}
	granted := make(chan error, 1)
	go func() {
		_, err := n.Acquire(ctx, api.AcquireRequest{Key: "m", Owner: "b", TTLMs: 60000, WaitMs: 20000, Meta: map[string]string{"job": "second"}})
		granted <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); waiters(t, n, "m") != 1; {
		if time.Now().After(deadline) {
			t.Fatal("b never queued")
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, with a deadline
	}
	if _, err := n.Release(ctx, api.ReleaseRequest{Key: "m", Owner: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := <-granted; err != nil {
		t.Fatal(err)
	}
	h, err := n.History(ctx, "m")
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Entries) != 2 || h.Entries[0].Meta["job"] != "second" || h.Entries[1].Meta["job"] != "first" {
		t.Fatalf("history %+v", h)
	}
}

// TestWaitP99Bucket: the p99 of a second's queue waits is the bucket
// holding the ceil(0.99 n)-th smallest wait, reported with its upper
// edge (the last edge for the open bucket).
func TestWaitP99Bucket(t *testing.T) {
	repeat := func(n int, ms int64) []int64 {
		out := make([]int64, n)
		for i := range out {
			out[i] = ms
		}
		return out
	}
	tests := []struct {
		name   string
		waits  []int64
		bucket int
		ms     int64
	}{
		{"none", nil, 0, 0},
		{"under a millisecond", []int64{0}, 0, 1},
		{"an edge is in the bucket above it", []int64{10}, 4, 25},
		{"the slowest of a hundred", append(repeat(99, 3), 20000), 2, 5},
		{"past the 99th of a hundred", append(repeat(98, 3), 20000, 20000), 13, 10000},
		{"one slow of one", []int64{86400000}, 13, 10000},
		{"just below a second", []int64{999}, 9, 1000},
	}
	for _, tc := range tests {
		var s sample
		for _, w := range tc.waits {
			s.wait(w)
		}
		b, ms := s.p99()
		if b != tc.bucket || ms != tc.ms {
			t.Errorf("%s: bucket %d (%s) %d ms, want %d (%s) %d ms", tc.name, b, api.WaitBucketLabel(b), ms, tc.bucket, api.WaitBucketLabel(tc.bucket), tc.ms)
		}
	}
}

// BenchmarkHistoryLockCycle: the lock history's share of a Redis
// client's lock cycle (SET NX PX, then the compare-and-delete EVALSHA),
// applied in batches of 64 entries as a busy leader applies them: the
// SETs of 64 cycles, then their releases. keys=64 is 64 workers on their
// own keys (the history's rings are reused), keys=12288 a new key per
// cycle, three times DefaultHistoryKeys (keys are forgotten and their
// rings reused). "history" minus "table" is the observer's cost per
// cycle in allocations; observe-ns/op times the observer alone (the
// clock is read twice per batch). Each cycle's token is new, as lock
// clients' tokens are.
func BenchmarkHistoryLockCycle(b *testing.B) {
	const batch = 64
	for _, nkeys := range []int{batch, 3 * DefaultHistoryKeys} {
		for _, mode := range []string{"table", "history"} {
			b.Run(fmt.Sprintf("keys=%d/%s", nkeys, mode), func(b *testing.B) {
				table := fsm.New(fsm.DefaultConfig())
				h := newHistory(DefaultHistoryKeys, DefaultHistoryEntries, newActivity(DefaultActivityWindow, time.Now))
				sha := fsm.ScriptSHA([]byte(benchCAD))
				idx, now := uint64(1), int64(1_700_000_000_000)
				table.Apply(idx, &fsm.Command{Op: fsm.OpScriptLoad, Script: []byte(benchCAD), Time: now})
				keys := make([][]byte, nkeys)
				for i := range keys {
					keys[i] = []byte("bench:" + strconv.Itoa(i))
				}
				toks := make([][]byte, batch)
				sets, dels := make([]fsm.Command, batch), make([]fsm.Command, batch)
				rs := make([]fsm.Result, batch)
				var observing time.Duration
				apply := func(cmds []fsm.Command) {
					for w := range cmds {
						idx++
						now++
						cmds[w].Time = now
						rs[w] = table.Apply(idx, &cmds[w])
					}
					if mode == "history" {
						start := time.Now()
						observeBatch(h, table, cmds, rs)
						observing += time.Since(start)
					}
				}
				b.ReportAllocs()
				b.ResetTimer()
				cpu0 := processCPU()
				for i := 0; i < b.N; i += batch {
					for w := range batch {
						k := keys[(i+w)%nkeys]
						toks[w] = strconv.AppendInt(toks[w][:0], int64(i+w), 10)
						sets[w] = fsm.Command{Op: fsm.OpRedis, Args: [][]byte{[]byte("SET"), k, toks[w], []byte("NX"), []byte("PX"), []byte("10000")}}
						dels[w] = fsm.Command{Op: fsm.OpEvalSHA, Key: sha, KeysB: [][]byte{k}, Args: [][]byte{toks[w]}}
					}
					apply(sets)
					if rs[0].Reply.Str != "OK" {
						b.Fatalf("SET NX: %+v", rs[0].Reply)
					}
					apply(dels)
					if rs[0].Reply.Int != 1 {
						b.Fatalf("compare-and-delete: %+v", rs[0].Reply)
					}
				}
				b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
				b.ReportMetric(float64(observing)/float64(b.N), "observe-ns/op")
			})
		}
	}
}

// observeBatch feeds one applied batch to h as the apply path does.
func observeBatch(h *history, t *fsm.Table, cmds []fsm.Command, rs []fsm.Result) {
	h.begin()
	for i := range cmds {
		h.observe(t, &cmds[i], &rs[i])
	}
	h.flush()
}

// TestHistoryOwnerBuffersReused: owners are copied into ring slots that
// are overwritten in place as the ring wraps and as a forgotten key's
// ring serves a new key; what get returned before stays as it was, and
// every entry names exactly its owner (a short owner in a slot that held
// a long one, a reowned hold).
func TestHistoryOwnerBuffersReused(t *testing.T) {
	hh := newHistoryHarness(t, 2, 2)
	hh.acquire("k", "a-rather-long-owner-name", 60000, 0, "r1")
	hh.apply(fsm.Command{Op: fsm.OpRelease, Key: "k", Owner: "a-rather-long-owner-name"})
	before := hh.h.get("k")
	for i, o := range []string{"b", "c"} {
		hh.acquire("k", o, 60000, 0, fmt.Sprintf("r%d", i+2))
		hh.apply(fsm.Command{Op: fsm.OpRelease, Key: "k", Owner: o})
	}
	if len(before) != 1 || before[0].Owner != "a-rather-long-owner-name" || before[0].End != api.EndRelease {
		t.Fatalf("an earlier answer changed when the ring wrapped: %+v", before)
	}
	if got, want := fmt.Sprint(hh.ends("k")), "[c/5/release b/3/release]"; got != want {
		t.Fatalf("k: %s, want %s", got, want)
	}
	// Two new keys: k's ring is reused by the second of them.
	hh.acquire("x", "owner-of-x", 60000, 0, "rx")
	hh.acquire("y", "y", 60000, 0, "ry")
	if _, ok := hh.h.keys["k"]; ok {
		t.Fatal("k kept past HistoryKeys")
	}
	if r := hh.apply(fsm.Command{Op: fsm.OpReown, Key: "y", Owner: "y", Args: [][]byte{[]byte("z")}}); r.Err != nil {
		t.Fatal(r.Err)
	}
	hh.apply(fsm.Command{Op: fsm.OpRelease, Key: "y", Owner: "z"})
	if got, want := fmt.Sprint(hh.ends("y")), "[z/8/release]"; got != want {
		t.Fatalf("y: %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(hh.ends("x")), "[owner-of-x/7/held]"; got != want {
		t.Fatalf("x: %s, want %s", got, want)
	}
}

// TestHistorySteadyStateAllocs: once a key's ring is full, recording a
// grant (with a new owner each time, as a Redis client's token is) and
// its end allocates nothing, and neither does a batch's flush.
func TestHistorySteadyStateAllocs(t *testing.T) {
	h := newHistory(4, 4, newActivity(time.Minute, time.Now))
	owners := make([]string, 64)
	for i := range owners {
		owners[i] = "token-" + strconv.Itoa(i)
	}
	keys := []string{"k0", "k1", "k2", "k3"}
	var fence uint64
	cycle := func() {
		h.begin()
		for _, k := range keys {
			fence++
			o := owners[fence%uint64(len(owners))]
			acq := fsm.Command{Op: fsm.OpAcquire, Key: k, Owner: o}
			h.observe(nil, &acq, &fsm.Result{Granted: true, Count: 1, Fence: fence, Now: int64(fence)})
			rel := fsm.Command{Op: fsm.OpRelease, Key: k, Owner: o}
			evs := [1]fsm.Event{{Kind: fsm.EvReleased, Key: k, Owner: o, Fence: fence, Reason: fsm.ReasonRelease}}
			h.observe(nil, &rel, &fsm.Result{Events: evs[:], Now: int64(fence)})
		}
		h.flush()
	}
	for range 8 {
		cycle()
	}
	if allocs := testing.AllocsPerRun(100, cycle); allocs != 0 {
		t.Fatalf("%.1f allocations per batch of 4 grants and ends, want 0", allocs)
	}
	if got := h.get("k3"); len(got) != 4 || got[0].Owner != owners[fence%uint64(len(owners))] || got[0].End != api.EndRelease {
		t.Fatalf("k3 %+v", got)
	}
}
