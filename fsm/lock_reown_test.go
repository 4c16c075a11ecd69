package fsm

import (
	"bytes"
	"errors"
	"testing"
)

// TestReown: a hold passes to a new token with its fence, deadline and
// session binding; the old token no longer owns it; the session's end
// releases it under the new token; the state restores from a snapshot
// identically and the memory count stays exact.
func TestReown(t *testing.T) {
	tab := New(DefaultConfig())
	idx := uint64(0)
	apply := func(c Command) Result {
		t.Helper()
		idx++
		c.Time = int64(idx * 10)
		r := tab.Apply(idx, &c)
		if err := checkMemory(tab); err != nil {
			t.Fatalf("after %+v: %v", c, err)
		}
		return r
	}
	apply(Command{Op: OpSessionOpen, Session: "s", TTL: 10_000})
	g := apply(Command{Op: OpAcquire, Key: "e", Owner: "v1", Session: "s"})
	if !g.Granted {
		t.Fatalf("acquire: %+v", g)
	}
	apply(Command{Op: OpAcquire, Key: "sh", Owner: "a", Mode: Shared, TTL: 5000})
	apply(Command{Op: OpAcquire, Key: "sh", Owner: "b", Mode: Shared, TTL: 5000})

	tests := []struct {
		name      string
		cmd       Command
		want      error
		owner     string // who holds key afterwards
		key       string
		wantFence uint64
	}{
		{"to a longer token", Command{Op: OpReown, Key: "e", Owner: "v1", Args: [][]byte{[]byte("value-two")}, ReqID: "p1"}, nil, "value-two", "e", g.Fence},
		{"old token refused", Command{Op: OpReown, Key: "e", Owner: "v1", Args: [][]byte{[]byte("x")}}, ErrNotOwner, "value-two", "e", g.Fence},
		{"retry without request id", Command{Op: OpReown, Key: "e", Owner: "v1", Args: [][]byte{[]byte("value-two")}}, nil, "value-two", "e", g.Fence},
		{"retry is remembered", Command{Op: OpReown, Key: "e", Owner: "v1", Args: [][]byte{[]byte("value-two")}, ReqID: "p1"}, nil, "value-two", "e", g.Fence},
		{"to itself", Command{Op: OpReown, Key: "e", Owner: "value-two", Args: [][]byte{[]byte("value-two")}}, nil, "value-two", "e", g.Fence},
		{"to a shorter token", Command{Op: OpReown, Key: "e", Owner: "value-two", Args: [][]byte{[]byte("v3")}}, nil, "v3", "e", g.Fence},
		{"onto another holder", Command{Op: OpReown, Key: "sh", Owner: "a", Args: [][]byte{[]byte("b")}}, ErrBadCommand, "a", "sh", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := apply(tc.cmd)
			if !errors.Is(r.Err, tc.want) || (tc.want == nil && r.Err != nil) {
				t.Fatalf("err = %v, want %v", r.Err, tc.want)
			}
			if tc.want == nil && r.Fence != tc.wantFence {
				t.Fatalf("fence = %d, want %d", r.Fence, tc.wantFence)
			}
			h, err := tab.Inspect(tc.key, tab.Now())
			if err != nil || len(h.Holders) == 0 || h.Holders[0].Owner != tc.owner {
				t.Fatalf("holders %+v (%v), want %q first", h.Holders, err, tc.owner)
			}
			if tc.wantFence != 0 && h.Holders[0].Fence != tc.wantFence {
				t.Fatalf("fence %d, want %d", h.Holders[0].Fence, tc.wantFence)
			}
			if tc.key == "e" && h.Holders[0].Session != "s" {
				t.Fatalf("session binding lost: %+v", h.Holders[0])
			}
		})
	}
	if r := apply(Command{Op: OpRelease, Key: "e", Owner: "v1"}); !errors.Is(r.Err, ErrNotOwner) {
		t.Fatalf("release by the old token: %v", r.Err)
	}

	// A restored copy is the same table (the session index is derived).
	cp := New(DefaultConfig())
	if err := cp.Restore(bytes.NewReader(snap(t, tab))); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snap(t, cp), snap(t, tab)) {
		t.Fatal("restored copy differs")
	}
	for _, x := range []*Table{tab, cp} {
		idx++
		r := x.Apply(idx, &Command{Op: OpSessionClose, Session: "s", Time: int64(idx * 10)})
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		var released []string
		for _, e := range r.Events {
			if e.Kind == EvReleased {
				released = append(released, e.Key+"/"+e.Owner)
			}
		}
		if len(released) != 1 || released[0] != "e/v3" {
			t.Fatalf("session close released %v, want [e/v3]", released)
		}
		if _, err := x.Inspect("e", x.Now()); err == nil {
			if h, _ := x.Inspect("e", x.Now()); len(h.Holders) != 0 {
				t.Fatalf("e still held: %+v", h.Holders)
			}
		}
		if err := checkMemory(x); err != nil {
			t.Fatal(err)
		}
		idx--
	}
}
