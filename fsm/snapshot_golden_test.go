package fsm

import (
	"bytes"
	"encoding/binary"
	"flag"
	"math/rand"
	"os"
	"reflect"
	"strings"
	"testing"
)

var rewriteSnap = flag.Bool("rewrite-snapshot", false, "rewrite testdata/snapshot-v5.bin from the current code")

// goldenTable builds a table with something of every kind a snapshot
// holds: plain, shared, semaphore, reentrant, session-bound and
// lock-delayed locks (one kept by its lock-delay alone, one whose lock
// fence is above every remaining holder's), waiters (one over two keys),
// sessions, fences, remembered request ids, Redis values of every kind,
// a Redis lock, a release tombstone and a cached script. It is the state
// testdata/snapshot-v2.bin was written from.
func goldenTable(tb testing.TB) *Table {
	return goldenRT(tb).t
}

func goldenRT(tb testing.TB) *rt {
	r := &rt{tb: tb, t: New(DefaultConfig()), now: 1_000_000}
	must := func(res Result) {
		tb.Helper()
		if res.Err != nil {
			tb.Fatalf("golden table: %v", res.Err)
		}
	}
	must(r.apply(&Command{Op: OpSessionOpen, Session: "s1", TTL: 600_000}))
	must(r.apply(&Command{Op: OpAcquire, Key: "ex", Owner: "o1", TTL: 60_000, ReqID: "r1"}))
	for _, o := range []string{"o1", "o2", "o3"} {
		must(r.apply(&Command{Op: OpAcquire, Key: "sh", Owner: o, Mode: Shared, TTL: 60_000}))
	}
	must(r.apply(&Command{Op: OpRelease, Key: "sh", Owner: "o3", ReqID: "r2"}))
	must(r.apply(&Command{Op: OpAcquire, Key: "sem", Owner: "o1", Mode: Semaphore, Permits: 3, Session: "s1"}))
	for i := 0; i < 3; i++ {
		must(r.apply(&Command{Op: OpAcquire, Key: "sem", Owner: "o2", Mode: Semaphore, Permits: 3,
			TTL: 90_000, Reentrant: true, MaxHold: 500_000}))
	}
	must(r.apply(&Command{Op: OpAcquire, Key: "dl", Owner: "o4", TTL: 10, LockDelay: 400_000}))
	must(r.apply(&Command{Op: OpAcquire, Key: "dl2", Owner: "o5", Mode: Shared, TTL: 60_000}))
	must(r.apply(&Command{Op: OpAcquire, Key: "dl2", Owner: "o4", Mode: Shared, TTL: 10, LockDelay: 400_000}))
	must(r.apply(&Command{Op: OpAcquire, Key: "ex", Owner: "o2", TTL: 60_000, Wait: 300_000, ReqID: "w1"}))
	must(r.apply(&Command{Op: OpAcquire, Keys: []string{"ex", "free"}, Owner: "o3", TTL: 60_000,
		Wait: 300_000, ReqID: "w2", Session: "s1"}))
	// ex's fence, not the highest (later grants have higher ones), so the
	// snapshot's highest fence and the registry differ. (snapshot-v2.bin
	// was written with token 42, before tokens above the highest fence
	// were refused.)
	must(r.apply(&Command{Op: OpFenceCheck, Key: "res", Token: 2, ReqID: "r3"}))
	r.now += 100 // the holds of dl end: dl is kept by its lock-delay
	must(r.apply(&Command{Op: OpTick}))
	for _, args := range [][]string{
		{"SET", "str", "value", "PX", "100000"},
		{"SET", "plain", "forever"},
		{"HSET", "h", "f1", "v1", "f2", "v2"},
		{"SADD", "set", "m1", "m2"},
		{"ZADD", "z", "1.5", "m1", "-2", "m2"},
		{"RPUSH", "list", "a", "b", "c"},
		{"PEXPIRE", "list", "200000"},
		{"SET", "rl", "tok1", "NX", "PX", "30000"},
		{"SET", "rl2", "tok2", "NX", "PX", "30000"},
		{"SCRIPT", "LOAD", "return 1"}, // an unknown command to the FSM: caches nothing
	} {
		must(r.apply(&Command{Op: OpRedis, Args: bargs(args...)}))
	}
	if got := fmtReply(r.eval(goldenCAD, 1, "rl2", "tok2")); got != ":1" {
		tb.Fatalf("golden table: compare-and-delete %s", got)
	}
	return r
}

const goldenCAD = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`

// goldenTableV3 is goldenTable with a script cache in every state format
// 3 tells apart: loaded scripts, and EVAL-cached ones in an order that
// is not the order they were first run in.
func goldenTableV3(tb testing.TB) *Table {
	r := goldenRT(tb)
	for _, c := range []*Command{
		{Op: OpScriptLoad, Script: []byte("return 'loaded'")},
		{Op: OpScriptLoad, Script: []byte("return 'also loaded'")},
		{Op: OpEval, Script: []byte("return 'first'")},
		{Op: OpEval, Script: []byte("return 'second'")},
		{Op: OpEvalSHA, Key: ScriptSHA([]byte(goldenCAD)), KeysB: bargs("rl2"), Args: bargs("tok2")},
	} {
		if res := r.apply(c); res.Err != nil || res.Reply.IsError() {
			tb.Fatalf("golden table v3: %+v", res)
		}
	}
	return r.t
}

// goldenTableV4 is goldenTableV3 with what format 4 adds: holds with
// metadata (one handed over from the queue, one renewed by an extend and
// one by a reentrant acquire), and waiters with metadata and queue times.
func goldenTableV4(tb testing.TB) *Table {
	tab := goldenTableV3(tb)
	r := &rt{tb: tb, t: tab, now: tab.Now() + 1000}
	meta := Meta{{"cmd", "backup --full"}, {"host", "db1"}, {"pid", "4242"}}
	for _, c := range []*Command{
		{Op: OpAcquire, Key: "m1", Owner: "mo1", TTL: 60_000, Meta: meta},
		{Op: OpAcquire, Key: "m1", Owner: "mo2", TTL: 60_000, Wait: 300_000, ReqID: "mw1", Meta: Meta{{"host", "db2"}}},
		{Op: OpAcquire, Key: "m1", Owner: "mo3", TTL: 60_000, Wait: 300_000, ReqID: "mw2"},
		{Op: OpAcquire, Key: "m2", Owner: "mo4", TTL: 60_000, Reentrant: true, Meta: Meta{{"note", "reentrant"}}},
		{Op: OpAcquire, Key: "m3", Owner: "mo5", TTL: 60_000, Meta: Meta{{"note", "handed over"}}},
		{Op: OpAcquire, Key: "m3", Owner: "mo6", TTL: 60_000, Wait: 300_000, ReqID: "mw3", Meta: Meta{{"host", "db3"}, {"pid", "1"}}},
	} {
		if res := r.apply(c); res.Err != nil {
			tb.Fatalf("golden table v4: %+v", res)
		}
		r.now += 10
	}
	for _, c := range []*Command{
		{Op: OpExtend, Key: "m1", Owner: "mo1", TTL: 90_000},
		{Op: OpAcquire, Key: "m2", Owner: "mo4", TTL: 90_000, Reentrant: true, Meta: Meta{{"note", "ignored"}}},
		{Op: OpRelease, Key: "m3", Owner: "mo5"},
	} {
		if res := r.apply(c); res.Err != nil {
			tb.Fatalf("golden table v4: %+v", res)
		}
		r.now += 10
	}
	return tab
}

// TestSnapshotV5Golden: testdata/snapshot-v5.bin was written by the code
// of snapshot format version 5 from goldenTableV4's state; while the
// format is 5, the code snapshots that state to the same bytes, which
// restore at cluster version 1.
func TestSnapshotV5Golden(t *testing.T) {
	const file = "testdata/snapshot-v5.bin"
	tab := goldenTableV4(t)
	var fresh bytes.Buffer
	if err := tab.Snapshot(&fresh); err != nil {
		t.Fatal(err)
	}
	if *rewriteSnap {
		if err := os.WriteFile(file, fresh.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if old[0] != 5 || old[1] != 1 {
		t.Fatalf("%s is format %d of cluster version %d, want 5 of 1", file, old[0], old[1])
	}
	if !bytes.Equal(old, fresh.Bytes()) {
		t.Fatalf("%s differs from the same state snapshotted now: a change of the snapshot format needs a new format number, gated on a cluster version (docs/DESIGN.md)", file)
	}
	n := restoreGolden(t, file, old)
	if n.Version() != 1 {
		t.Fatalf("restored at cluster version %d", n.Version())
	}
	compareGolden(t, tab, n)
}

// TestSnapshotV4Golden: testdata/snapshot-v4.bin was written by the code
// of snapshot format version 4 (frozen; never rewritten). It must
// restore, at cluster version 1, describe the same state as
// goldenTableV4 (metadata and times included), and snapshot to the bytes
// the current format gives that state.
func TestSnapshotV4Golden(t *testing.T) {
	const file = "testdata/snapshot-v4.bin"
	tab := goldenTableV4(t)
	var fresh bytes.Buffer
	if err := tab.Snapshot(&fresh); err != nil {
		t.Fatal(err)
	}
	old, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if old[0] != 4 {
		t.Fatalf("%s is version %d, want 4", file, old[0])
	}
	n := restoreGolden(t, file, old)
	if n.Version() != 1 {
		t.Fatalf("%s restored at cluster version %d, want 1", file, n.Version())
	}
	var again bytes.Buffer
	if err := n.Snapshot(&again); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), fresh.Bytes()) {
		t.Fatalf("%s restored and snapshotted differs from the same state built now", file)
	}
	compareGolden(t, tab, n)
	now := tab.Now()
	for _, k := range []string{"m1", "m2", "m3", "ex", "sem"} {
		a, errA := tab.Inspect(k, now)
		b, errB := n.Inspect(k, now)
		if errA != nil || errB != nil || !reflect.DeepEqual(a, b) {
			t.Errorf("%s: restored %+v (%v), original %+v (%v)", k, b, errB, a, errA)
		}
	}
	// What format 4 is for, spelled out.
	m1, _ := n.Inspect("m1", now)
	if h := m1.Holders[0]; h.Meta.Get("host") != "db1" || h.Meta.Get("cmd") != "backup --full" || h.Granted == 0 || h.Extended <= h.Granted {
		t.Errorf("m1 holder %+v", h)
	}
	if w := m1.Waiters; len(w) != 2 || w[0].Meta.Get("host") != "db2" || w[0].Queued == 0 || w[1].Meta != nil || w[1].Queued <= w[0].Queued {
		t.Errorf("m1 waiters %+v", w)
	}
	m2, _ := n.Inspect("m2", now)
	if h := m2.Holders[0]; h.Count != 2 || h.Meta.Get("note") != "reentrant" || h.Extended <= h.Granted {
		t.Errorf("m2 holder %+v", h)
	}
	m3, _ := n.Inspect("m3", now)
	if h := m3.Holders[0]; h.Owner != "mo6" || h.Meta.Get("host") != "db3" || h.Granted != now || h.Extended != 0 {
		t.Errorf("m3 holder %+v (now %d)", h, now)
	}
}

// zeroTimes clears what formats before 4 do not keep (grant, renewal and
// queue times; metadata), so a table built now describes the state an
// older snapshot restores to.
func zeroTimes(tab *Table) {
	for _, v := range tab.keys {
		if v.Kind() != KindLock {
			continue
		}
		l := v.lock()
		for i := 0; i < l.numHolders(); i++ {
			h := l.holder(i)
			h.Granted, h.Extended = 0, 0
			h.setOpts(h.session(), h.lockDelay(), h.hardLimit(), nil)
		}
	}
	for _, w := range tab.waiters {
		w.Queued, w.Meta = 0, nil
	}
	tab.mem = tab.recountMemory()
}

// TestSnapshotV3Golden: testdata/snapshot-v3.bin was written by the code
// of snapshot format version 3 (frozen; never rewritten). It must still
// restore, to the state goldenTableV3 builds now without the times format
// 3 does not keep.
func TestSnapshotV3Golden(t *testing.T) {
	const file = "testdata/snapshot-v3.bin"
	tab := goldenTableV3(t)
	old, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if old[0] != 3 {
		t.Fatalf("%s is version %d, want 3", file, old[0])
	}
	n := restoreGolden(t, file, old)
	compareGolden(t, tab, n)
	if a, b := tab.ScriptStats(), n.ScriptStats(); a != b || a.Loaded != 2 || a.Eval != 3 {
		t.Errorf("scripts: restored %+v, original %+v", b, a)
	}
	if n.maxFence != tab.maxFence || n.maxFence == 0 {
		t.Fatalf("highest fence restored %d, original %d", n.maxFence, tab.maxFence)
	}
	ex, err := n.Inspect("ex", n.Now())
	if err != nil || ex.Holders[0].Granted != 0 || ex.Holders[0].Meta != nil || ex.Waiters[0].Queued != 0 {
		t.Fatalf("ex restored from format 3: %+v %v", ex, err)
	}
	// Snapshotted again it is format 4, the same state with zero times.
	zeroTimes(tab)
	var want, again bytes.Buffer
	if err := tab.Snapshot(&want); err != nil {
		t.Fatal(err)
	}
	if err := n.Snapshot(&again); err != nil {
		t.Fatal(err)
	}
	if again.Bytes()[0] != snapVersion || !bytes.Equal(again.Bytes(), want.Bytes()) {
		t.Errorf("%s restored and snapshotted is not the same state in format %d", file, snapVersion)
	}
}

// TestSnapshotV2Golden: testdata/snapshot-v2.bin was written by the code
// of snapshot format version 2 (frozen; never rewritten). It must still
// restore, to the state goldenTable builds now, except that its one cached
// script (run by EVAL, but format 2 cannot say so) comes back as a loaded
// one.
func TestSnapshotV2Golden(t *testing.T) {
	const file = "testdata/snapshot-v2.bin"
	tab := goldenTable(t)
	old, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if old[0] != 2 {
		t.Fatalf("%s is version %d, want 2", file, old[0])
	}
	n := restoreGolden(t, file, old)
	compareGolden(t, tab, n)
	if st := n.ScriptStats(); st != (ScriptStats{Loaded: 1, LoadedBytes: len(goldenCAD)}) {
		t.Errorf("scripts: restored %+v", st)
	}
	if s, ok := n.ScriptBySHA(ScriptSHA([]byte(goldenCAD))); !ok || string(s) != goldenCAD {
		t.Errorf("the cached script did not come back")
	}
	if n.maxFence != n.applied {
		t.Fatalf("highest fence %d after a version 2 restore, want the applied index %d", n.maxFence, n.applied)
	}
	// Snapshotted again it is the current format, ending in the one
	// script as a loaded one, no EVAL-cached ones and the applied index
	// as the highest fence; restored from that it snapshots the same.
	var again, twice bytes.Buffer
	if err := n.Snapshot(&again); err != nil {
		t.Fatal(err)
	}
	cad := []byte(goldenCAD)
	tail := append([]byte{1}, binary.AppendUvarint(nil, uint64(len(cad)))...)
	tail = append(append(tail, cad...), 0)
	tail = binary.AppendUvarint(tail, n.applied)
	if b := again.Bytes(); b[0] != snapVersion || !bytes.HasSuffix(b, tail) {
		t.Errorf("%s restored and snapshotted is not in format %d with the script loaded", file, snapVersion)
	}
	m := restoreGolden(t, "its snapshot", again.Bytes())
	if err := m.Snapshot(&twice); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), twice.Bytes()) {
		t.Errorf("%s restored, snapshotted, restored and snapshotted again changed", file)
	}
}

func restoreGolden(t *testing.T, file string, b []byte) *Table {
	t.Helper()
	n := New(DefaultConfig())
	if err := n.Restore(bytes.NewReader(b)); err != nil {
		t.Fatalf("restore %s: %v", file, err)
	}
	if err := checkInvariants(n); err != nil {
		t.Fatalf("restored %s: %v", file, err)
	}
	return n
}

// compareGolden: the restored table answers like the original one.
func compareGolden(t *testing.T, tab, n *Table) {
	t.Helper()
	now := tab.Now()
	for _, k := range []string{"ex", "sh", "sem", "dl", "dl2", "free", "str", "h", "rl", "nothing"} {
		a, errA := tab.Inspect(k, now)
		b, errB := n.Inspect(k, now)
		if fmtInfo(a, errA) != fmtInfo(b, errB) {
			t.Errorf("%s: restored %s, original %s", k, fmtInfo(b, errB), fmtInfo(a, errA))
		}
	}
	if a, b := tab.Stats(), n.Stats(); a != b {
		t.Errorf("stats: restored %+v, original %+v", b, a)
	}
}

// TestSortedValues: Snapshot's key order (an integer prefix after the
// shared prefix, then the keys) is plain string order, for keys that
// share prefixes, end inside the 8 bytes, hold zero and 0xff bytes, and
// for random keys.
func TestSortedValues(t *testing.T) {
	sets := [][]string{
		{"a"},
		{"bench/held/0000001", "bench/held/0000000", "bench/held/00000001", "bench/held/0000000\x00", "bench/held/"},
		{"x", "x\x00", "x\x00\x00", "x\xff", "x\xff\xff\xff\xff\xff\xff\xff\xff", "x\xff\xff\xff\xff\xff\xff\xff", "xa", "xa\x00"},
		{"abcdefgh1", "abcdefgh0", "abcdefgh", "abcdefg", "abcdefgh\x00", "b", "\x00", "\xff"},
	}
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 20; i++ {
		var keys []string
		prefix := strings.Repeat("p", rng.Intn(12))
		for j := 0; j < 200; j++ {
			b := make([]byte, rng.Intn(12))
			for k := range b {
				b[k] = "\x00\x01a\xfe\xff"[rng.Intn(5)]
			}
			keys = append(keys, prefix+string(b))
		}
		sets = append(sets, keys)
	}
	for _, keys := range sets {
		m := map[string]*Value{}
		for _, k := range keys {
			m[k] = &Value{}
		}
		want := sortedKeys(m)
		got := sortedValues(m)
		if len(got) != len(want) {
			t.Fatalf("%d keys, want %d", len(got), len(want))
		}
		for i := range got {
			if got[i].k != want[i] || got[i].v != m[want[i]] {
				t.Fatalf("%q: position %d is %q, want %q", keys, i, got[i].k, want[i])
			}
		}
	}
}
