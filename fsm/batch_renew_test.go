package fsm

import (
	"bytes"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"reflect"
	"testing"

	"github.com/locknode/locknode/fsm/reply"
)

// batchOf encodes cmds as one OpBatchRenew entry.
func batchOf(cmds ...*Command) *Command {
	b := &Command{Op: OpBatchRenew}
	for _, c := range cmds {
		b.Args = append(b.Args, c.AppendBinary(nil))
	}
	return b
}

// renewTable is a table at version VersionBatchRenew (when on) holding
// lock "a" for o1 and "b" for o2 (10 s leases), "c" for o3 on a 100 ms
// lease, and session s1 (10 s) at time 1000.
func renewTable(t testing.TB, on bool) (*Table, *uint64) {
	t.Helper()
	tab := New(Config{})
	idx := uint64(0)
	do := func(c *Command) {
		idx++
		c.Time = 1000
		if r := tab.Apply(idx, c); r.Err != nil {
			t.Fatalf("setup %+v: %v", c, r.Err)
		}
	}
	if on {
		do(&Command{Op: OpSetVersion, Token: VersionBatchRenew})
	}
	do(&Command{Op: OpAcquire, Key: "a", Owner: "o1", TTL: 10000})
	do(&Command{Op: OpAcquire, Key: "b", Owner: "o2", TTL: 10000})
	do(&Command{Op: OpAcquire, Key: "c", Owner: "o3", TTL: 100})
	do(&Command{Op: OpSessionOpen, Session: "s1", TTL: 10000})
	return tab, &idx
}

// Before VersionBatchRenew is active, the entry is refused and changes
// nothing (an old binary halts on it instead; the proposer never sends it).
func TestBatchRenewGated(t *testing.T) {
	tab, idx := renewTable(t, false)
	*idx++
	c := batchOf(&Command{Op: OpExtend, Key: "a", Owner: "o1", TTL: 10000})
	c.Time = 1000
	r := tab.Apply(*idx, c)
	if !errors.Is(r.Err, ErrBadCommand) || len(r.Batch) != 0 {
		t.Fatalf("batch at version 1: %+v", r)
	}
	if h, _ := tab.HoldOf("a", "o1", 1000); h.Deadline != 11000 {
		t.Fatalf("refused batch extended the lease to %d", h.Deadline)
	}
}

// Each renewal in an entry keeps its own outcome: the one whose lease ran
// out before the entry fails with ErrNotHeld, the others are renewed from
// the entry's time, all at the entry's index.
func TestBatchRenewOutcomes(t *testing.T) {
	tab, idx := renewTable(t, true)
	*idx++
	c := batchOf(
		&Command{Op: OpExtend, Key: "a", Owner: "o1", TTL: 10000, ReqID: "r-a"},
		&Command{Op: OpExtend, Key: "c", Owner: "o3", TTL: 10000, ReqID: "r-c"},
		&Command{Op: OpSessionKeepAlive, Session: "s1", ReqID: "r-s"},
		&Command{Op: OpExtend, Key: "b", Owner: "o2", TTL: 5000},
	)
	c.Time = 2000
	r := tab.Apply(*idx, c)
	if r.Err != nil || len(r.Batch) != 4 {
		t.Fatalf("batch: %+v", r)
	}
	want := []struct {
		err      error
		deadline int64
	}{{nil, 12000}, {ErrNotHeld, 0}, {nil, 12000}, {nil, 7000}}
	for i, w := range want {
		got := r.Batch[i]
		if !errors.Is(got.Err, w.err) || (w.err == nil && (got.Deadline != w.deadline || !got.Granted && i != 2)) {
			t.Errorf("renewal %d: %+v, want err %v deadline %d", i, got, w.err, w.deadline)
		}
		if got.Index != *idx || got.Now != 2000 {
			t.Errorf("renewal %d at index %d time %d, want %d and 2000", i, got.Index, got.Now, *idx)
		}
	}
	if h, ok := tab.HoldOf("a", "o1", 2000); !ok || h.Deadline != 12000 {
		t.Fatalf("a after the batch: %+v %v", h, ok)
	}
	if _, ok := tab.HoldOf("c", "o3", 2000); ok {
		t.Fatal("c renewed after its lease ended")
	}
	if s, ok := tab.Session("s1", 2000); !ok || s.Deadline != 12000 {
		t.Fatalf("session after the batch: %+v %v", s, ok)
	}
	// The expiry of c ran before the renewals, once, in the entry's events.
	found := false
	for _, e := range r.Events {
		found = found || e.Kind == EvReleased && e.Key == "c" && e.Reason == ReasonExpired
	}
	if !found {
		t.Fatalf("no expiry event of c in %+v", r.Events)
	}
}

// A renewal retried in a later batch (its answer was lost) with the same
// request id gets the first answer and renews nothing again.
func TestBatchRenewExactlyOnce(t *testing.T) {
	tab, idx := renewTable(t, true)
	ext := &Command{Op: OpExtend, Key: "a", Owner: "o1", TTL: 10000, ReqID: "r1"}
	*idx++
	first := batchOf(ext, &Command{Op: OpExtend, Key: "b", Owner: "o2", TTL: 10000})
	first.Time = 2000
	r1 := tab.Apply(*idx, first)
	if r1.Err != nil || r1.Batch[0].Err != nil || r1.Batch[0].Deadline != 12000 {
		t.Fatalf("first: %+v", r1)
	}
	*idx++
	retry := batchOf(&Command{Op: OpExtend, Key: "b", Owner: "o2", TTL: 10000}, ext)
	retry.Time = 3000
	r2 := tab.Apply(*idx, retry)
	if r2.Err != nil || r2.Batch[1].Err != nil || r2.Batch[1].Deadline != 12000 || !r2.Batch[1].Granted {
		t.Fatalf("retried renewal: %+v, want the first answer (deadline 12000)", r2.Batch[1])
	}
	if h, _ := tab.HoldOf("a", "o1", 3000); h.Deadline != 12000 {
		t.Fatalf("retried renewal renewed again: deadline %d", h.Deadline)
	}
	if r2.Batch[0].Deadline != 13000 {
		t.Fatalf("the other renewal: %+v", r2.Batch[0])
	}
	// The same id alone, as a plain entry, answers the same too.
	*idx++
	alone := *ext
	alone.Time = 3500
	if r := tab.Apply(*idx, &alone); r.Err != nil || r.Deadline != 12000 {
		t.Fatalf("retried alone: %+v", r)
	}
}

// A batch with anything but renewals is refused whole and changes nothing
// but the applied index; so is an empty or malformed one.
func TestBatchRenewRefusesOthers(t *testing.T) {
	tab, idx := renewTable(t, true)
	cases := map[string]*Command{
		"acquire":     batchOf(&Command{Op: OpExtend, Key: "a", Owner: "o1", TTL: 10000}, &Command{Op: OpAcquire, Key: "z", Owner: "o9", TTL: 10000}),
		"SET":         batchOf(&Command{Op: OpRedis, Args: [][]byte{[]byte("SET"), []byte("z"), []byte("v")}}),
		"read-only":   batchOf(&Command{Op: OpEvalSHA, Key: "abc", ReadOnly: true}),
		"empty":       {Op: OpBatchRenew},
		"malformed":   {Op: OpBatchRenew, Args: [][]byte{{1, 2}}},
		"nested":      batchOf(batchOf(&Command{Op: OpExtend, Key: "a", Owner: "o1", TTL: 10000})),
		"too many":    {Op: OpBatchRenew, Args: make([][]byte, MaxBatchRenew+1)},
		"future op":   {Op: OpBatchRenew, Args: [][]byte{{byte(240)}}},
		"op 0 inside": {Op: OpBatchRenew, Args: [][]byte{{0}}},
	}
	for name, c := range cases {
		*idx++
		c.Time = 2000
		r := tab.Apply(*idx, c)
		if name == "future op" {
			// An op this binary does not know halts, as the entry alone would.
			continue
		}
		if !errors.Is(r.Err, ErrBadCommand) {
			t.Errorf("%s: %+v", name, r)
		}
		if h, _ := tab.HoldOf("a", "o1", 2000); h.Deadline != 11000 {
			t.Fatalf("%s: refused batch renewed a: deadline %d", name, h.Deadline)
		}
		if _, ok := tab.HoldOf("z", "o9", 2000); ok {
			t.Fatalf("%s: refused batch acquired z", name)
		}
	}
}

// redsync's Extend (the compare-and-pexpire script by EVALSHA) and PEXPIRE
// renew in a batch as they do alone; a script that is not a
// compare-and-pexpire is refused, an unknown sha answers NOSCRIPT.
func TestBatchRenewRedis(t *testing.T) {
	const cape = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("pexpire", KEYS[1], ARGV[2]) else return 0 end`
	const other = `return redis.call("set", KEYS[1], ARGV[1])`
	sha := func(s string) string { h := sha1.Sum([]byte(s)); return hex.EncodeToString(h[:]) }
	tab, idx := renewTable(t, true)
	do := func(c *Command) Result {
		*idx++
		c.Time = 1000
		return tab.Apply(*idx, c)
	}
	do(&Command{Op: OpScriptLoad, Script: []byte(cape)})
	do(&Command{Op: OpScriptLoad, Script: []byte(other)})
	for _, k := range []string{"r1", "r2", "r3"} {
		if r := do(&Command{Op: OpRedis, Args: [][]byte{[]byte("SET"), []byte(k), []byte("tok"), []byte("NX"), []byte("PX"), []byte("10000")}}); r.Reply.Kind != reply.Status {
			t.Fatalf("SET %s: %+v", k, r.Reply)
		}
	}
	ext := func(key, tok string) *Command {
		return &Command{Op: OpEvalSHA, Key: sha(cape), KeysB: [][]byte{[]byte(key)}, Args: [][]byte{[]byte(tok), []byte("30000")}}
	}
	*idx++
	c := batchOf(
		ext("r1", "tok"),
		ext("r2", "wrong"),
		&Command{Op: OpRedis, Args: [][]byte{[]byte("pexpire"), []byte("r3"), []byte("30000")}},
		&Command{Op: OpEvalSHA, Key: sha(other), KeysB: [][]byte{[]byte("r1")}, Args: [][]byte{[]byte("x")}},
		&Command{Op: OpEvalSHA, Key: sha("return 0"), KeysB: [][]byte{[]byte("r1")}, Args: [][]byte{[]byte("tok"), []byte("1")}},
	)
	c.Time = 2000
	r := tab.Apply(*idx, c)
	if r.Err != nil || len(r.Batch) != 5 {
		t.Fatalf("batch: %+v", r)
	}
	if b := r.Batch; b[0].Reply.Int != 1 || b[1].Reply.Int != 0 || b[2].Reply.Int != 1 ||
		!errors.Is(b[3].Err, ErrBadCommand) || b[4].Reply.Kind != reply.Error {
		t.Fatalf("replies: %+v", b)
	}
	for key, want := range map[string]int64{"r1": 32000, "r2": 11000, "r3": 32000} {
		info, err := tab.Inspect(key, 2000)
		if err != nil || info.Deadline != want {
			t.Errorf("%s: %+v %v, want deadline %d", key, info, err, want)
		}
	}
	if renewal, known := tab.RenewalScript(sha(cape)); !renewal || !known {
		t.Fatal("compare-and-pexpire not recognised")
	}
	if renewal, known := tab.RenewalScript(sha(other)); renewal || !known {
		t.Fatal("SET script taken for a renewal")
	}
	// What a proposer batches without the table: the exact texts clients
	// send (redsync v4's touchScript by its published SHA1).
	if !RenewalSHA(sha(cape), VersionBatchRenew) || !RenewalSHA("D75BB8B5BD13532DDEDD17762E772346E39B321E", VersionBatchRenew) || RenewalSHA(sha(other), MaxClusterVersion) {
		t.Fatal("RenewalSHA")
	}
}

// A table that skips the renewals' own results (a follower) decides
// exactly as one that builds them: the same state, the same events, the
// same exactly-once answers later. Only Result.Batch is left out.
func TestBatchRenewSkipResults(t *testing.T) {
	full, idx := renewTable(t, true)
	lean, _ := renewTable(t, true)
	lean.SkipBatchResults(true)
	script := &Command{Op: OpScriptLoad, Script: []byte(touchScriptForTest)}
	set := &Command{Op: OpRedis, Args: [][]byte{[]byte("SET"), []byte("r"), []byte("tok"), []byte("NX"), []byte("PX"), []byte("30000")}}
	sha := ScriptSHA([]byte(touchScriptForTest))
	batch := func(owner, token string) *Command {
		return batchOf(
			&Command{Op: OpExtend, Key: "a", Owner: owner, TTL: 10000, ReqID: "r-a-" + owner},
			&Command{Op: OpExtend, Key: "c", Owner: "o3", TTL: 10000, ReqID: "r-c"},
			&Command{Op: OpSessionKeepAlive, Session: "s1", ReqID: "r-s"},
			&Command{Op: OpEvalSHA, Key: sha, KeysB: [][]byte{[]byte("r")}, Args: [][]byte{[]byte(token), []byte("20000")}, ReqID: "r-r-" + token},
			&Command{Op: OpRedis, Args: [][]byte{[]byte("PEXPIRE"), []byte("r"), []byte("25000")}},
		)
	}
	steps := []*Command{script, set, batch("o1", "tok"), batch("o2", "nope"), batch("o1", "tok")}
	for i, c := range steps {
		*idx++
		c.Time = 2000 + int64(i)
		a, b := full.Apply(*idx, c), lean.Apply(*idx, c)
		if c.Op == OpBatchRenew {
			if len(a.Batch) != 5 || b.Batch != nil {
				t.Fatalf("step %d: full %d results, lean %d", i, len(a.Batch), len(b.Batch))
			}
			b.Batch = a.Batch
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("step %d: full %+v, lean %+v", i, a, b)
		}
	}
	// The remembered answers are those of the renewals, also where no
	// result was built: a retry alone (not skipped) gets the first.
	lean.SkipBatchResults(false)
	*idx++
	retry := batch("o2", "nope")
	retry.Time = 3000
	a, b := full.Apply(*idx, retry), lean.Apply(*idx, retry)
	if !reflect.DeepEqual(a, b) || len(b.Batch) != 5 || !errors.Is(b.Batch[0].Err, ErrNotOwner) || b.Batch[3].Reply.Int != 0 {
		t.Fatalf("retried: full %+v, lean %+v", a, b)
	}
	var sa, sb bytes.Buffer
	if err := full.Snapshot(&sa); err != nil {
		t.Fatal(err)
	}
	if err := lean.Snapshot(&sb); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(sa.Bytes(), sb.Bytes()) {
		t.Fatal("the tables' snapshots differ")
	}
}
