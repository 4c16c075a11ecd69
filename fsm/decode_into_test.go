package fsm

import (
	"reflect"
	"testing"
)

// DecodeCommandInto overwrites the whole command: decoding entry after
// entry into one Command (the apply loop) leaves nothing of an earlier
// entry in a later one, and gives what DecodeCommand gives.
func TestDecodeCommandIntoReuse(t *testing.T) {
	cmds := []*Command{
		{Op: OpAcquire, Time: 7, ReqID: "r", Key: "k", Owner: "o", Mode: Semaphore, Permits: 3, TTL: 1000, Wait: 50,
			Reentrant: true, Session: "s", LockDelay: 5, MaxHold: 9, Meta: Meta{{"host", "h"}}},
		{Op: OpRedis, Time: 8, Args: [][]byte{[]byte("SET"), []byte("k"), []byte("t"), []byte("NX"), []byte("PX"), []byte("30000")}, NoForce: true},
		{Op: OpEvalSHA, Time: 9, Key: "0123456789abcdef0123456789abcdef01234567", KeysB: [][]byte{[]byte("k")}, Args: [][]byte{[]byte("t")}, ReadOnly: true, KeysOnly: true},
		{Op: OpAcquire, Keys: []string{"a", "b"}, Owner: "o", TTL: 1},
		{Op: OpRelease, Key: "k", Owner: "o", Force: true, Token: 4},
	}
	var reused Command
	for round := 0; round < 2; round++ {
		for i, c := range cmds {
			b, err := c.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			want, err := DecodeCommand(b)
			if err != nil {
				t.Fatalf("%d: %v", i, err)
			}
			if err := DecodeCommandInto(&reused, b); err != nil {
				t.Fatalf("%d: into: %v", i, err)
			}
			if !reflect.DeepEqual(&reused, want) {
				t.Fatalf("%d: decoded into a used command %+v, want %+v", i, reused, *want)
			}
		}
	}
	// Bad input is an error, as DecodeCommand's, and never a panic.
	for _, b := range [][]byte{nil, {cmdVersion}, {cmdVersion + 1, byte(OpAcquire), 0}, {cmdVersion, byte(OpAcquire), 0xff, 0xff}} {
		_, err1 := DecodeCommand(b)
		err2 := DecodeCommandInto(&reused, b)
		if err1 == nil || err2 == nil || err1.Error() != err2.Error() {
			t.Fatalf("%x: DecodeCommand %v, DecodeCommandInto %v", b, err1, err2)
		}
	}
}

// The events of entries applied one after another share a slab: each
// entry's are its own, and appending to one entry's Result.Events never
// writes over the next entry's.
func TestEventsOfEntriesDoNotAlias(t *testing.T) {
	tb := New(DefaultConfig())
	var results []Result
	var copies [][]Event
	for i := 0; i < 3*eventSlab; i++ {
		key := string(rune('a' + (i/2)%26))
		var r Result
		if i%2 == 0 {
			r = tb.Apply(uint64(i+1), &Command{Op: OpAcquire, Time: int64(i + 1), Key: key, Owner: "o", TTL: 100000})
		} else {
			r = tb.Apply(uint64(i+1), &Command{Op: OpRelease, Time: int64(i + 1), Key: key, Owner: "o"})
		}
		if r.Err != nil || len(r.Events) == 0 {
			t.Fatalf("entry %d: %+v", i, r)
		}
		results = append(results, r)
		copies = append(copies, append([]Event(nil), r.Events...))
		// A subscriber appending to what it got must not reach the next
		// entry's events.
		_ = append(r.Events, Event{Kind: EvReleased, Key: "scribble"})
	}
	for i, r := range results {
		if !reflect.DeepEqual(r.Events, copies[i]) {
			t.Fatalf("entry %d's events changed after later entries: %+v, were %+v", i, r.Events, copies[i])
		}
	}
}
