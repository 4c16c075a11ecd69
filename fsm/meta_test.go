package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// metaStep is one command of a scenario, applied at FSM time at.
type metaStep struct {
	at  int64
	cmd Command
}

// TestHoldMetaAndTimes: a hold keeps the metadata of the acquire that
// created it and its grant time through extends, reentrant acquires,
// repeats and reowns; renewals set its extend time; a waiter keeps its
// own metadata and queue time, which its hold takes over at hand-off.
func TestHoldMetaAndTimes(t *testing.T) {
	mA := Meta{{"host", "a"}, {"pid", "1"}}
	mB := Meta{{"cmd", "job --x"}, {"host", "b"}}
	acquire := func(owner string, m Meta) Command {
		return Command{Op: OpAcquire, Key: "k", Owner: owner, TTL: 1000, Meta: m}
	}
	cases := []struct {
		name  string
		steps []metaStep
		owner string // the hold checked at the end
		want  Hold   // Meta, Granted, Extended, Count checked
	}{
		{"grant", []metaStep{{10, acquire("o1", mA)}},
			"o1", Hold{Meta: mA, Granted: 10, Count: 1}},
		{"grant without metadata", []metaStep{{10, acquire("o1", nil)}},
			"o1", Hold{Granted: 10, Count: 1}},
		{"extend", []metaStep{{10, acquire("o1", mA)}, {20, Command{Op: OpExtend, Key: "k", Owner: "o1", TTL: 500}}},
			"o1", Hold{Meta: mA, Granted: 10, Extended: 20, Count: 1}},
		{"reentrant acquire keeps the first grant and metadata", []metaStep{
			{10, Command{Op: OpAcquire, Key: "k", Owner: "o1", TTL: 1000, Reentrant: true, Meta: mA}},
			{20, Command{Op: OpAcquire, Key: "k", Owner: "o1", TTL: 1000, Reentrant: true, Meta: mB}},
		}, "o1", Hold{Meta: mA, Granted: 10, Extended: 20, Count: 2}},
		{"repeated acquire changes nothing", []metaStep{{10, acquire("o1", mA)}, {20, acquire("o1", mB)}},
			"o1", Hold{Meta: mA, Granted: 10, Count: 1}},
		{"hand-off gives the waiter's metadata", []metaStep{
			{10, acquire("o1", mA)},
			{15, Command{Op: OpAcquire, Key: "k", Owner: "o2", TTL: 1000, Wait: 5000, ReqID: "w", Meta: mB}},
			{30, Command{Op: OpRelease, Key: "k", Owner: "o1"}},
		}, "o2", Hold{Meta: mB, Granted: 30, Count: 1}},
		{"hand-off at expiry", []metaStep{
			{10, acquire("o1", mA)},
			{15, Command{Op: OpAcquire, Key: "k", Owner: "o2", TTL: 1000, Wait: 5000, ReqID: "w", Meta: mB}},
			{1500, Command{Op: OpTick}},
		}, "o2", Hold{Meta: mB, Granted: 1500, Count: 1}},
		{"session-bound hold", []metaStep{
			{5, Command{Op: OpSessionOpen, Session: "s", TTL: 5000}},
			{10, Command{Op: OpAcquire, Key: "k", Owner: "o1", Session: "s", Meta: mA}},
			{20, Command{Op: OpExtend, Key: "k", Owner: "o1"}},
		}, "o1", Hold{Meta: mA, Granted: 10, Extended: 20, Count: 1}},
		{"reown keeps everything", []metaStep{
			{10, acquire("o1", mA)},
			{20, Command{Op: OpReown, Key: "k", Owner: "o1", Args: bargs("o9")}},
		}, "o9", Hold{Meta: mA, Granted: 10, Count: 1}},
		{"SET NX: no metadata, a grant time", []metaStep{
			{10, Command{Op: OpRedis, Args: bargs("SET", "k", "tok", "NX", "PX", "1000")}},
		}, "tok", Hold{Granted: 10, Count: 1}},
		{"PEXPIRE renews", []metaStep{
			{10, acquire("o1", mA)},
			{25, Command{Op: OpRedis, Args: bargs("PEXPIRE", "k", "5000")}},
		}, "o1", Hold{Meta: mA, Granted: 10, Extended: 25, Count: 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			var now int64
			for _, s := range tc.steps {
				s.cmd.Time, now = s.at, s.at
				if r := h.apply(s.cmd); r.Err != nil {
					t.Fatalf("at %d %+v: %v", s.at, s.cmd, r.Err)
				}
			}
			got, ok := h.tab.HoldOf("k", tc.owner, now)
			if !ok {
				t.Fatalf("%s holds nothing", tc.owner)
			}
			if !reflect.DeepEqual(got.Meta, tc.want.Meta) || got.Granted != tc.want.Granted ||
				got.Extended != tc.want.Extended || got.Count != tc.want.Count {
				t.Fatalf("hold %+v, want meta %v granted %d extended %d count %d",
					got, tc.want.Meta, tc.want.Granted, tc.want.Extended, tc.want.Count)
			}
			if err := checkInvariants(h.tab); err != nil {
				t.Fatal(err)
			}
			if err := checkRoundTrip(h.tab); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestWaiterMetaAndQueueTime: Inspect shows each waiter's metadata and
// the time it queued, in queue order; a retry of a queued acquire keeps
// its place, time and metadata.
func TestWaiterMetaAndQueueTime(t *testing.T) {
	h := newHarness(t)
	h.apply(Command{Op: OpAcquire, Key: "k", Owner: "o1", TTL: 10_000, Time: 10})
	h.apply(Command{Op: OpAcquire, Key: "k", Owner: "o2", TTL: 1000, Wait: 5000, ReqID: "w2", Time: 20, Meta: Meta{{"host", "b"}}})
	h.apply(Command{Op: OpAcquire, Key: "k", Owner: "o3", TTL: 1000, Wait: 5000, ReqID: "w3", Time: 30})
	if r := h.apply(Command{Op: OpAcquire, Key: "k", Owner: "o2", TTL: 1000, Wait: 5000, ReqID: "w2", Time: 40,
		Meta: Meta{{"host", "retry"}}}); !r.Queued {
		t.Fatalf("retry: %+v", r)
	}
	li, err := h.tab.Inspect("k", 40)
	if err != nil || len(li.Waiters) != 2 {
		t.Fatalf("%+v %v", li, err)
	}
	w2, w3 := li.Waiters[0], li.Waiters[1]
	if w2.ID != "w2" || w2.Queued != 20 || w2.Meta.Get("host") != "b" || w3.Queued != 30 || w3.Meta != nil {
		t.Fatalf("waiters %+v", li.Waiters)
	}
	if err := checkRoundTrip(h.tab); err != nil {
		t.Fatal(err)
	}
}

// TestMetaLimits: metadata past a limit, or not in name order, is
// refused with its error and changes nothing (the table is the same as
// one that applied a Tick instead); at each limit it is accepted.
func TestMetaLimits(t *testing.T) {
	cfg := DefaultConfig()
	entries := func(n, nameLen, valueLen int) Meta {
		m := make(Meta, n)
		for i := range m {
			m[i] = MetaEntry{Name: strings.Repeat("n", nameLen-2) + string(rune('a'+i/26)) + string(rune('a'+i%26)),
				Value: strings.Repeat("v", valueLen)}
		}
		return m
	}
	cases := []struct {
		name string
		meta Meta
		want error // nil: granted
	}{
		{"entries at the limit", entries(cfg.MaxMetaEntries, 2, 1), nil},
		{"one entry too many", entries(cfg.MaxMetaEntries+1, 2, 1), ErrLimit},
		{"name at the limit", Meta{{strings.Repeat("n", cfg.MaxMetaKeyBytes), "v"}}, nil},
		{"name too long", Meta{{strings.Repeat("n", cfg.MaxMetaKeyBytes+1), "v"}}, ErrLimit},
		{"value at the limit", Meta{{"n", strings.Repeat("v", cfg.MaxMetaValueBytes)}}, nil},
		{"value too long", Meta{{"n", strings.Repeat("v", cfg.MaxMetaValueBytes+1)}}, ErrLimit},
		{"total at the limit", entries(8, 2, cfg.MaxMetaBytes/8-2), nil},
		{"total too long", entries(8, 2, cfg.MaxMetaBytes/8-1), ErrLimit},
		{"empty name", Meta{{"", "v"}}, ErrBadCommand},
		{"names out of order", Meta{{"b", "1"}, {"a", "2"}}, ErrBadCommand},
		{"name twice", Meta{{"a", "1"}, {"a", "2"}}, ErrBadCommand},
	}
	for _, tc := range cases {
		for _, wait := range []int64{0, 5000} {
			t.Run(fmt.Sprintf("%s/wait=%d", tc.name, wait), func(t *testing.T) {
				setup := []*Command{acq("held", "o1")}
				a, b := newRT(t), newRT(t)
				for _, r := range []*rt{a, b} {
					for _, c := range setup {
						c := *c
						r.apply(&c)
					}
				}
				key := "free"
				if wait > 0 {
					key = "held" // queues
				}
				res := a.apply(&Command{Op: OpAcquire, Key: key, Owner: "o2", TTL: 1000, Wait: wait, ReqID: "r", Meta: tc.meta})
				if tc.want == nil {
					if res.Err != nil || !(res.Granted || res.Queued) {
						t.Fatalf("refused: %+v", res)
					}
					return
				}
				if !errors.Is(res.Err, tc.want) {
					t.Fatalf("err %v, want %v", res.Err, tc.want)
				}
				b.apply(&Command{Op: OpTick})
				if !bytes.Equal(snapBytes(t, a.t), snapBytes(t, b.t)) {
					t.Fatal("a refused acquire changed the table")
				}
			})
		}
	}
}

// TestMetaCodec: a command's metadata survives encoding, and a decoded
// command with none has none.
func TestMetaCodec(t *testing.T) {
	for _, m := range []Meta{nil, {{"host", "h"}}, {{"a", ""}, {"b", "x\x00y"}}} {
		c := Command{Op: OpAcquire, Key: "k", Owner: "o", TTL: 1, Meta: m}
		b, _ := c.MarshalBinary()
		d, err := DecodeCommand(b)
		if err != nil || !reflect.DeepEqual(d.Meta, m) {
			t.Fatalf("%v: decoded %+v, %v", m, d, err)
		}
	}
}

// TestMetaOf: a map becomes metadata in name order, and back.
func TestMetaOf(t *testing.T) {
	in := map[string]string{"pid": "1", "host": "h", "cmd": "c", "a": ""}
	m := MetaOf(in)
	want := Meta{{"a", ""}, {"cmd", "c"}, {"host", "h"}, {"pid", "1"}}
	if !reflect.DeepEqual(m, want) || !reflect.DeepEqual(m.Map(), in) {
		t.Fatalf("%v", m)
	}
	if MetaOf(nil) != nil || Meta(nil).Map() != nil {
		t.Fatal("empty metadata is not nil")
	}
}

// TestPackMeta: a hold's packed metadata reads back as given, lengths
// of several varint bytes included.
func TestPackMeta(t *testing.T) {
	for _, m := range []Meta{nil, {{"a", ""}}, {{"cmd", strings.Repeat("x", 300)}, {"host", "h\x00"}, {strings.Repeat("n", 200), "é"}}} {
		if got := unpackMeta(packMeta(m)); !reflect.DeepEqual(got, m) {
			t.Fatalf("%q: got %q", m, got)
		}
	}
}

// TestMetaMemory: a hold's and a waiter's metadata count in MemoryUsed
// (checkMemory compares the running count with a recount).
func TestMetaMemory(t *testing.T) {
	a, b := newRT(t), newRT(t)
	m := Meta{{"host", strings.Repeat("h", 200)}}
	a.apply(&Command{Op: OpAcquire, Key: "k", Owner: "o", TTL: 1000, Meta: m})
	b.apply(&Command{Op: OpAcquire, Key: "k", Owner: "o", TTL: 1000})
	if d := a.t.MemoryUsed() - b.t.MemoryUsed(); d < 200 {
		t.Fatalf("metadata of 204 bytes adds %d bytes", d)
	}
	a.apply(&Command{Op: OpAcquire, Key: "k", Owner: "p", TTL: 1000, Wait: 1000, ReqID: "w", Meta: m})
	b.apply(&Command{Op: OpAcquire, Key: "k", Owner: "p", TTL: 1000, Wait: 1000, ReqID: "w"})
	if d := a.t.MemoryUsed() - b.t.MemoryUsed(); d < 400 {
		t.Fatalf("two holders' metadata of 204 bytes add %d bytes", d)
	}
}
