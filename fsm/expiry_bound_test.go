package fsm

import (
	"bytes"
	"fmt"
	"reflect"
	"strconv"
	"testing"

	"github.com/locknode/locknode/fsm/reply"
)

// boundedRig applies the same entries to a table and, from a chosen
// point, to a copy restored from its snapshot, checking after each entry
// that both give the same result and events and snapshot alike.
type boundedRig struct {
	t     *testing.T
	tab   *Table
	twin  *Table // nil until restored
	index uint64
}

func newBoundedRig(t *testing.T, version uint32) *boundedRig {
	r := &boundedRig{t: t, tab: New(Config{})}
	// The first entry sets the version (or is a Tick), so that the same
	// entries get the same indexes (fences) at every version.
	if version > 1 {
		r.apply(&Command{Op: OpSetVersion, Token: uint64(version)}, 1)
	} else {
		r.apply(&Command{Op: OpTick}, 1)
	}
	return r
}

func (r *boundedRig) apply(c *Command, now int64) Result {
	r.t.Helper()
	r.index++
	c.Time = now
	enc := c.AppendBinary(nil)
	res := r.tab.ApplyBytes(r.index, enc)
	if r.twin != nil {
		res2 := r.twin.ApplyBytes(r.index, enc)
		if !reflect.DeepEqual(res.Events, res2.Events) || fmt.Sprint(res.Err) != fmt.Sprint(res2.Err) ||
			res.Granted != res2.Granted || res.Fence != res2.Fence || !reflect.DeepEqual(res.Reply, res2.Reply) {
			r.t.Fatalf("entry %d: the restored table answered differently:\n%+v\n%+v", r.index, res, res2)
		}
		if !bytes.Equal(snap(r.t, r.tab), snap(r.t, r.twin)) {
			r.t.Fatalf("entry %d: snapshots differ", r.index)
		}
	}
	return res
}

// restoreTwin starts the twin from the table's snapshot now.
func (r *boundedRig) restoreTwin() {
	r.t.Helper()
	r.twin = New(Config{})
	if err := r.twin.Restore(bytes.NewReader(snap(r.t, r.tab))); err != nil {
		r.t.Fatal(err)
	}
}

func xcmd(args ...string) *Command {
	c := &Command{Op: OpRedis}
	for _, a := range args {
		c.Args = append(c.Args, []byte(a))
	}
	return c
}

// A mass expiry: n keys due at one millisecond. From VersionBoundedExpiry
// on, each entry ends at most DueEventBudget events' worth of them, the
// backlog drains in the fewest entries that budget allows, reads never
// see an expired key in the meantime, and a table restored from a
// snapshot taken mid-backlog goes on identically. Before it, one entry
// ends them all.
func TestBoundedExpiryMass(t *testing.T) {
	const deadline = 50_000
	for _, tc := range []struct {
		name    string
		n       int
		perKey  int // events an expiry emits
		version uint32
		fill    func(i int) *Command
	}{
		{"redis SET NX PXAT locks", 100_000, 2, VersionBoundedExpiry, func(i int) *Command {
			return xcmd("SET", "mass/"+strconv.Itoa(i), "tok"+strconv.Itoa(i), "NX", "PXAT", strconv.Itoa(deadline))
		}},
		{"redis SET PXAT over a value", 20_000, 1, VersionBoundedExpiry, func(i int) *Command {
			return xcmd("HSET", "mass/"+strconv.Itoa(i), "f", "v")
		}},
		{"native acquires", 20_000, 2, VersionBoundedExpiry, func(i int) *Command {
			return &Command{Op: OpAcquire, Key: "mass/" + strconv.Itoa(i), Owner: "o", TTL: deadline - 1000}
		}},
		{"before the gate", 20_000, 2, 1, func(i int) *Command {
			return xcmd("SET", "mass/"+strconv.Itoa(i), "tok", "NX", "PXAT", strconv.Itoa(deadline))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newBoundedRig(t, tc.version)
			for i := range tc.n {
				if res := r.apply(tc.fill(i), 1000); res.Err != nil || res.Reply.Kind == reply.Error {
					t.Fatalf("fill %d: %+v", i, res)
				}
				if tc.perKey == 1 {
					// A hash (not a lock) given the deadline afterwards.
					r.apply(xcmd("PEXPIREAT", "mass/"+strconv.Itoa(i), strconv.Itoa(deadline)), 1000)
				}
			}
			if keys, _ := r.tab.KeyCount(deadline - 1); keys != tc.n {
				t.Fatalf("%d keys before the deadline, want %d", keys, tc.n)
			}
			live := func() int { return len(r.tab.keys) }
			entries := 0
			for now := int64(deadline); ; now++ {
				before := live()
				res := r.apply(&Command{Op: OpTick}, now)
				entries++
				ended := before - live()
				if tc.version >= VersionBoundedExpiry && len(res.Events) > DueEventBudget+tc.perKey-1 {
					t.Fatalf("entry %d emitted %d events, budget %d", entries, len(res.Events), DueEventBudget)
				}
				if ended*tc.perKey != len(res.Events) {
					t.Fatalf("entry %d: %d keys ended, %d events", entries, ended, len(res.Events))
				}
				// Reads between entries see none of the keys past their
				// deadline, expired yet or not.
				for _, i := range []int{0, tc.n / 2, tc.n - 1} {
					k := "mass/" + strconv.Itoa(i)
					if rep, ok := r.tab.Read(now, [][]byte{[]byte("EXISTS"), []byte(k)}); !ok || rep.Int != 0 {
						t.Fatalf("EXISTS %s after its deadline: %+v", k, rep)
					}
					if r.tab.HeldByOther(k, "someone", now) {
						t.Fatalf("%s held after its deadline", k)
					}
				}
				if keys, _ := r.tab.KeyCount(now); keys != 0 {
					t.Fatalf("KeyCount %d after the deadline", keys)
				}
				if entries == 2 && r.twin == nil {
					r.restoreTwin() // mid-backlog
				}
				if !r.tab.HasDueBacklog() {
					break
				}
				if entries > tc.n {
					t.Fatal("the backlog does not drain")
				}
			}
			if live() != 0 {
				t.Fatalf("%d keys left after the backlog drained", live())
			}
			want := 1
			if tc.version >= VersionBoundedExpiry {
				per := DueEventBudget / tc.perKey
				want = (tc.n + per - 1) / per
			}
			if entries != want {
				t.Fatalf("drained in %d entries, want %d", entries, want)
			}
		})
	}
}

// A node with keyspace notifications on emits an "expired" event per key
// besides the others; the budget must not count it, or that node would
// end fewer keys per entry than the rest and their tables would part.
func TestBoundedExpiryBudgetIgnoresKeyspaceEvents(t *testing.T) {
	const n, deadline = 10_000, 50_000
	plain, notified := newBoundedRig(t, VersionBoundedExpiry), newBoundedRig(t, VersionBoundedExpiry)
	notified.tab.SetKeyspaceEvents(true)
	for i := range n {
		c := xcmd("SET", "mass/"+strconv.Itoa(i), "tok", "NX", "PXAT", strconv.Itoa(deadline))
		plain.apply(c, 1000)
		notified.apply(xcmd("SET", "mass/"+strconv.Itoa(i), "tok", "NX", "PXAT", strconv.Itoa(deadline)), 1000)
	}
	for now := int64(deadline); ; now++ {
		plain.apply(&Command{Op: OpTick}, now)
		res := notified.apply(&Command{Op: OpTick}, now)
		if len(res.Events) == 0 {
			t.Fatalf("the notified table emitted nothing at %d", now)
		}
		if a, b := len(plain.tab.keys), len(notified.tab.keys); a != b {
			t.Fatalf("after the tick at %d: %d keys left without keyspace events, %d with them", now, a, b)
		}
		if !bytes.Equal(snap(t, plain.tab), snap(t, notified.tab)) {
			t.Fatalf("after the tick at %d: the snapshots differ", now)
		}
		if !plain.tab.HasDueBacklog() {
			break
		}
		if now > deadline+n {
			t.Fatal("the backlog does not drain")
		}
	}
}

// A command applied while a backlog remains decides exactly as it would
// after every due item ran: the backlog's unbounded twin (version 1)
// gives the same result. Each scenario puts its key's due work after a
// backlog of filler locks, so only the command's own settling reaches it.
func TestBoundedExpirySettlesWhatACommandTouches(t *testing.T) {
	const d = 700_000 // the fillers' deadline, past the request id window
	type step struct {
		c   *Command
		now int64
	}
	cases := []struct {
		name  string
		setup []step // at time 1000 unless now is set
		cmd   *Command
	}{
		{"GET of an expired value", []step{{xcmd("SET", "k", "v", "PXAT", strconv.Itoa(d+5)), 0}},
			xcmd("GET", "k")},
		{"INCR of an expired value", []step{{xcmd("SET", "k", "41", "PXAT", strconv.Itoa(d+5)), 0}},
			xcmd("INCR", "k")},
		{"SET NX over an expired Redis lock", []step{{xcmd("SET", "k", "a", "NX", "PXAT", strconv.Itoa(d+5)), 0}},
			xcmd("SET", "k", "b", "NX", "PX", "10000")},
		{"acquire of a lock whose lease ended", []step{{&Command{Op: OpAcquire, Key: "k", Owner: "a", TTL: d + 5 - 1000}, 0}},
			&Command{Op: OpAcquire, Key: "k", Owner: "b", TTL: 10000}},
		{"acquire behind a waiter handed the lock", []step{
			{&Command{Op: OpAcquire, Key: "k", Owner: "a", TTL: d + 5 - 1000}, 0},
			{&Command{Op: OpAcquire, Key: "k", Owner: "w", TTL: 10000, Wait: d, ReqID: "w1"}, 0}},
			&Command{Op: OpAcquire, Key: "k", Owner: "b", TTL: 10000}},
		{"acquire behind a waiter whose wait ended first", []step{
			{&Command{Op: OpAcquire, Key: "k", Owner: "a", TTL: d + 5 - 1000}, 0},
			{&Command{Op: OpAcquire, Key: "k", Owner: "w", TTL: 10000, Wait: d + 3 - 1000, ReqID: "w1"}, 0}},
			&Command{Op: OpAcquire, Key: "k", Owner: "b", TTL: 10000}},
		{"extend of a lease that ended", []step{{&Command{Op: OpAcquire, Key: "k", Owner: "a", TTL: d + 5 - 1000}, 0}},
			&Command{Op: OpExtend, Key: "k", Owner: "a", TTL: 10000}},
		{"keep-alive of a session that ended", []step{
			{&Command{Op: OpSessionOpen, Session: "s", TTL: d + 5 - 1000}, 0},
			{&Command{Op: OpAcquire, Key: "k", Owner: "a", Session: "s"}, 0}},
			&Command{Op: OpSessionKeepAlive, Session: "s"}},
		{"acquire of a key its session's end frees", []step{
			{&Command{Op: OpSessionOpen, Session: "s", TTL: d + 5 - 1000}, 0},
			{&Command{Op: OpAcquire, Key: "k", Owner: "a", Session: "s"}, 0}},
			&Command{Op: OpAcquire, Key: "k", Owner: "b", TTL: 10000}},
		{"close of a session whose waiter was handed a lock", []step{
			{&Command{Op: OpSessionOpen, Session: "s", TTL: 3 * d}, 0},
			{&Command{Op: OpAcquire, Key: "k", Owner: "a", TTL: d + 5 - 1000}, 0},
			{&Command{Op: OpAcquire, Key: "k", Owner: "w", Session: "s", Wait: 2 * d, ReqID: "w1"}, 0}},
			&Command{Op: OpSessionClose, Session: "s"}},
		{"a retry whose request id was forgotten", []step{
			{&Command{Op: OpAcquire, Key: "k", Owner: "a", TTL: 1000, ReqID: "r1"}, d + 5 - DefaultConfig().ReqIDWindow}},
			&Command{Op: OpAcquire, Key: "k", Owner: "a", TTL: 1000, ReqID: "r1"}},
		{"compare-and-delete script on an expired lock", []step{{xcmd("SET", "k", "a", "NX", "PXAT", strconv.Itoa(d+5)), 0}},
			&Command{Op: OpEval, Script: []byte(`if redis.call("get",KEYS[1]) == ARGV[1] then return redis.call("del",KEYS[1]) else return 0 end`),
				KeysB: [][]byte{[]byte("k")}, Args: [][]byte{[]byte("a")}}},
		{"any other script drains", []step{{xcmd("SET", "k", "v", "PXAT", strconv.Itoa(d+5)), 0}},
			&Command{Op: OpEval, Script: []byte(`return redis.call("exists", "k")`)}},
		{"a script in a MULTI block drains", []step{{xcmd("SET", "k", "v", "PXAT", strconv.Itoa(d+5)), 0}},
			&Command{Op: OpExec, Multi: [][][]byte{{[]byte("EVAL"), []byte(`return redis.call("exists", "k")`), []byte("0")}}}},
		{"MULTI block", []step{{xcmd("SET", "k", "1", "PXAT", strconv.Itoa(d+5)), 0}},
			&Command{Op: OpExec, Multi: [][][]byte{{[]byte("INCR"), []byte("k")}, {[]byte("GET"), []byte("k")}}}},
	}
	run := func(t *testing.T, version uint32, setup []step, cmd *Command, drain bool) (Result, []Event) {
		r := newBoundedRig(t, version)
		// Filler locks due at d, three entries' worth: the Tick and the
		// command each end a third, and the key's due work comes after them.
		for i := range 3 * DueEventBudget / 2 {
			r.apply(xcmd("SET", "f/"+strconv.Itoa(i), "t", "NX", "PXAT", strconv.Itoa(d)), 1000)
		}
		for _, s := range setup {
			now := s.now
			if now == 0 {
				now = 1000
			}
			if res := r.apply(s.c, now); res.Err != nil {
				t.Fatalf("setup %+v: %v", s.c, res.Err)
			}
		}
		tick := r.apply(&Command{Op: OpTick}, d+10)
		if version >= VersionBoundedExpiry && !r.tab.HasDueBacklog() {
			t.Fatal("no backlog before the command")
		}
		c := *cmd
		res := r.apply(&c, d+10)
		evs := append(keyEvents(tick.Events, "k"), keyEvents(res.Events, "k")...)
		if version >= VersionBoundedExpiry && r.tab.HasDueBacklog() == drain {
			t.Fatalf("backlog left %v after the command", !drain)
		}
		for i := 0; r.tab.HasDueBacklog(); i++ {
			if i > 10 {
				t.Fatal("the backlog does not drain")
			}
			r.apply(&Command{Op: OpTick}, d+10)
		}
		// The items a command ran early leave no second chain behind.
		if n := len(r.tab.due[dueReqID-1]); n > 1 {
			t.Fatalf("%d request id items due", n)
		}
		return res, evs
	}
	// The commands whose reach is unknown drain the backlog.
	drains := map[string]bool{"any other script drains": true, "a script in a MULTI block drains": true}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want, wantEv := run(t, 1, tc.setup, tc.cmd, drains[tc.name])
			got, gotEv := run(t, VersionBoundedExpiry, tc.setup, tc.cmd, drains[tc.name])
			if fmt.Sprint(got.Err) != fmt.Sprint(want.Err) || got.Granted != want.Granted || got.Queued != want.Queued ||
				got.Granted && got.Fence != want.Fence || got.Deadline != want.Deadline || !reflect.DeepEqual(got.Reply, want.Reply) {
				got.Events, want.Events = nil, nil // compared below
				t.Fatalf("bounded: %#v\nunbounded: %#v", got, want)
			}
			// The key's events match too, in order, whether the Tick or
			// the command's settling emitted them (the fillers' are spread
			// over the following entries). A hand-off's fence is the index
			// of the entry that made it, which differs by that.
			if !reflect.DeepEqual(gotEv, wantEv) {
				t.Fatalf("events of k:\nbounded:   %+v\nunbounded: %+v", gotEv, wantEv)
			}
		})
	}
}

// keyEvents returns the events about key, or about a waiter on it,
// without the fence and time of the entry that emitted them.
func keyEvents(evs []Event, key string) []Event {
	var out []Event
	for _, e := range evs {
		if e.Key == key || e.WaiterID != "" {
			e.Fence, e.Now = 0, 0
			out = append(out, e)
		}
	}
	return out
}

// The commands whose reach the FSM cannot tell drain the backlog first.
func TestBoundedExpiryUnknownReachDrains(t *testing.T) {
	r := newBoundedRig(t, VersionBoundedExpiry)
	for i := range 2 * DueEventBudget {
		r.apply(xcmd("SET", "f/"+strconv.Itoa(i), "t", "NX", "PXAT", "50000"), 1000)
	}
	r.apply(&Command{Op: OpTick}, 50_000)
	if !r.tab.HasDueBacklog() {
		t.Fatal("no backlog")
	}
	res := r.apply(&Command{Op: OpEval, Script: []byte(`return 1`)}, 50_000)
	if res.Err != nil || r.tab.HasDueBacklog() || len(r.tab.keys) != 0 {
		t.Fatalf("a script left a backlog: %v, %d keys", res.Err, len(r.tab.keys))
	}
}

// BenchmarkMassExpiryEntry times the entry that meets 60,000 locks due
// at one millisecond: the whole expiry before VersionBoundedExpiry, one
// budget's share from it on (ns/op is one entry).
func BenchmarkMassExpiryEntry(b *testing.B) {
	for _, v := range []uint32{1, VersionBoundedExpiry} {
		b.Run("version "+strconv.Itoa(int(v)), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				tab := New(Config{})
				idx := uint64(1)
				tab.Apply(idx, &Command{Op: OpSetVersion, Token: uint64(v), Time: 1})
				for i := range 60_000 {
					idx++
					tab.Apply(idx, &Command{Op: OpRedis, Time: 1000, Args: [][]byte{[]byte("SET"), []byte("mass/" + strconv.Itoa(i)),
						[]byte("t"), []byte("NX"), []byte("PXAT"), []byte("50000")}})
				}
				b.StartTimer()
				idx++
				tab.Apply(idx, &Command{Op: OpTick, Time: 50_000})
			}
		})
	}
}

// Sessions that end without a hold emit no event; their ends count
// toward the budget all the same, so many of them due at once end over
// several entries too.
func TestBoundedExpiryEmptySessions(t *testing.T) {
	const n = 10_000
	r := newBoundedRig(t, VersionBoundedExpiry)
	for i := range n {
		r.apply(&Command{Op: OpSessionOpen, Session: "s" + strconv.Itoa(i), TTL: 10_000}, 1000)
	}
	entries := 0
	for now := int64(11_000); ; now++ {
		before := len(r.tab.sessions)
		r.apply(&Command{Op: OpTick}, now)
		entries++
		if ended := before - len(r.tab.sessions); ended > DueEventBudget {
			t.Fatalf("entry %d ended %d sessions", entries, ended)
		}
		if entries == 1 {
			r.restoreTwin()
		}
		if !r.tab.HasDueBacklog() {
			break
		}
	}
	if len(r.tab.sessions) != 0 || entries != (n+DueEventBudget-1)/DueEventBudget {
		t.Fatalf("%d sessions left after %d entries", len(r.tab.sessions), entries)
	}
}
