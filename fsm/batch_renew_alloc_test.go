package fsm

import (
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/locknode/locknode/fsm/reply"
)

// A batch of redsync Extend renewals allocates little per renewal on
// every node, and its renewals decode into the table's reused slab,
// which holds nothing of the entry after: holding many locks applies
// such a batch per commit round, and GC of a large table is paid per
// allocated byte (bench/results/README.md, "Holding: fewer allocations
// per renewal"). The bound fails with a heap Command per renewal and an
// event slice grown by doubling (about 1.1 KB per renewal).
//
// A node that skips the renewals' own results (SkipBatchResults: a
// follower) allocates less again: the bound fails with a []Result
// built per entry on every node (about 180 bytes per renewal more).
//
// A node where nothing reads the renewals' change events
// (SkipRenewalChanges) allocates almost nothing per renewal: the bound
// fails with an event built per renewal (176 bytes).
func TestBatchRenewAllocatesLittle(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes allocation")
	}
	for _, c := range []struct {
		skip, quiet bool
		bound       float64
	}{{false, false, 450}, {true, false, 260}, {true, true, 60}} {
		t.Run(fmt.Sprintf("skip=%v,quiet=%v", c.skip, c.quiet), func(t *testing.T) { batchRenewAllocs(t, c.skip, c.quiet, c.bound) })
	}
}

func batchRenewAllocs(t *testing.T, skip, quiet bool, bound float64) {
	const n = 100
	tab, idx := renewTable(t, true)
	do := func(c *Command) Result {
		*idx++
		c.Time = 1000
		return tab.Apply(*idx, c)
	}
	do(&Command{Op: OpScriptLoad, Script: []byte(touchScriptForTest)})
	ext := make([]*Command, n)
	for i := range ext {
		key := fmt.Sprintf("bench/hold/%d", i)
		if r := do(&Command{Op: OpRedis, Args: [][]byte{[]byte("SET"), []byte(key), []byte("tok"), []byte("NX"), []byte("PX"), []byte("30000")}}); r.Reply.Kind != reply.Status {
			t.Fatalf("SET %s: %+v", key, r.Reply)
		}
		ext[i] = &Command{Op: OpEvalSHA, Key: ScriptSHA([]byte(touchScriptForTest)), KeysB: [][]byte{[]byte(key)}, Args: [][]byte{[]byte("tok"), []byte("30000")}}
	}
	batch := batchOf(ext...)
	apply := func() {
		*idx++
		batch.Time = 2000 + int64(*idx)
		tab.SkipBatchResults(skip)
		tab.SkipRenewalChanges(quiet)
		r := tab.Apply(*idx, batch)
		if r.Err != nil || skip != (r.Batch == nil) || !skip && len(r.Batch) != n {
			t.Fatalf("batch: %+v", r)
		}
		for i, b := range r.Batch {
			if b.Reply.Int != 1 {
				t.Fatalf("renewal %d: %+v", i, b)
			}
		}
		renewed := 0
		for _, e := range r.Events {
			if strings.HasPrefix(e.Key, "bench/hold/") {
				renewed++
			}
		}
		if want := map[bool]int{false: n, true: 0}[quiet]; renewed != want {
			t.Fatalf("batch of %d renewals (quiet %v): %d events of the renewed keys, want %d", n, quiet, renewed, want)
		}
	}
	apply() // the slab and the script's classification are made once
	for i := range tab.renewals {
		if !reflect.DeepEqual(tab.renewals[i], Command{}) {
			t.Fatalf("slab entry %d kept after the apply: %+v", i, tab.renewals[i])
		}
	}
	if len(tab.renewLists) != 0 {
		t.Fatalf("list slab kept %d lists after the apply", len(tab.renewLists))
	}
	for i, l := range tab.renewLists[:cap(tab.renewLists)] {
		if l != nil {
			t.Fatalf("list slab entry %d kept after the apply: %q", i, l)
		}
	}
	const rounds = 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range rounds {
		apply()
	}
	runtime.ReadMemStats(&after)
	per := float64(after.TotalAlloc-before.TotalAlloc) / (rounds * n)
	t.Logf("%.0f bytes allocated per renewal", per)
	if per > bound {
		t.Errorf("%.0f bytes allocated per renewal, want at most %.0f", per, bound)
	}
}

// touchScriptForTest is redsync v4's touchScript, byte for byte (its
// SHA1 is one of renewalSHAs).
const touchScriptForTest = `
	if redis.call("GET", KEYS[1]) == ARGV[1] then
		return redis.call("PEXPIRE", KEYS[1], ARGV[2])
	else
		return 0
	end
`

// DecodeCommandInto decodes what DecodeCommand does, and refuses what it
// refuses.
func TestDecodeCommandInto(t *testing.T) {
	if !RenewalSHA(ScriptSHA([]byte(touchScriptForTest)), VersionBatchRenew) {
		t.Fatal("the test's touch script is not redsync's")
	}
	cmds := []*Command{
		{Op: OpAcquire, Time: 5, ReqID: "r", Key: "k", Owner: "o", TTL: 100, Wait: 7, Reentrant: true, Session: "s", LockDelay: 3, MaxHold: 9},
		{Op: OpExtend, Key: "k", Owner: "o", TTL: 1000, Token: 4},
		{Op: OpAcquire, Keys: []string{"a", "b"}, Owner: "o", Mode: 1, Permits: 2},
		{Op: OpRedis, Args: [][]byte{[]byte("pexpire"), []byte("k"), []byte("10")}, NoForce: true, KeysOnly: true},
		{Op: OpEvalSHA, Key: "d75bb8b5bd13532ddedd17762e772346e39b321e", KeysB: [][]byte{[]byte("k")}, Args: [][]byte{[]byte("t"), []byte("1")}, ReadOnly: true},
		{Op: OpExec, Multi: [][][]byte{{[]byte("set"), []byte("a"), []byte("1")}}, Watch: []WatchKey{{Key: "a", Version: 3}}},
		batchOf(&Command{Op: OpSessionKeepAlive, Session: "s"}),
	}
	for _, c := range cmds {
		enc := c.AppendBinary(nil)
		want, err := DecodeCommand(enc)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		var got Command
		if err := DecodeCommandInto(&got, enc); err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		if !reflect.DeepEqual(&got, want) {
			t.Errorf("op %d: into %+v, want %+v", c.Op, got, *want)
		}
	}
	good := cmds[1].AppendBinary(nil)
	for name, b := range map[string][]byte{
		"empty":         nil,
		"truncated":     good[:len(good)-1],
		"trailing":      append(append([]byte(nil), good...), 0),
		"newer format":  append([]byte{cmdVersion + 1}, good[1:]...),
		"unknown op":    append([]byte{good[0], 250}, good[2:]...),
		"unknown field": append([]byte{good[0], good[1], 0xff, 0xff, 0xff, 0xff, 0x0f}, good[3:]...),
	} {
		var c Command
		err := DecodeCommandInto(&c, b)
		_, werr := DecodeCommand(b)
		if err == nil || werr == nil || err.Error() != werr.Error() {
			t.Errorf("%s: into %v, DecodeCommand %v", name, err, werr)
		}
		if errors.Is(werr, ErrNeedVersion) != errors.Is(err, ErrNeedVersion) {
			t.Errorf("%s: version error differs: %v, %v", name, err, werr)
		}
	}
}
