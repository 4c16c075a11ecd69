package fsm

import (
	"bytes"
	"math"
	"testing"
)

// AppendStamped gives, byte for byte, what AppendBinary gives for the
// command with its Time set, whatever Time it had and whatever fields
// follow.
func TestAppendStamped(t *testing.T) {
	cmds := map[string]*Command{
		"bare":          {Op: OpTick},
		"acquire":       {Op: OpAcquire, Key: "k", Owner: "o", TTL: 30000, Wait: 500, ReqID: "r1", Mode: Shared, Permits: 3},
		"already timed": {Op: OpRelease, Key: "k", Owner: "o", Time: 1_700_000_000_000},
		"negative time": {Op: OpRelease, Key: "k", Time: -7},
		"script": {Op: OpEvalSHA, Key: "d75bb8b5bd13532ddedd17762e772346e39b321e",
			KeysB: [][]byte{[]byte("k")}, Args: [][]byte{[]byte("tok"), []byte("30000")}, NoForce: true},
		"meta":  {Op: OpAcquire, Key: "k", Owner: "o", Meta: Meta{{Name: "pid", Value: "42"}}},
		"multi": {Op: OpExec, Multi: [][][]byte{{[]byte("set"), []byte("a"), []byte("1")}}, Watch: []WatchKey{{Key: "a", Version: 3}}},
	}
	for name, c := range cmds {
		enc := c.AppendBinary(nil)
		for _, ts := range []int64{0, 1, -1, 1_764_000_000_123, math.MaxInt64, math.MinInt64} {
			want := *c
			want.Time = ts
			got, err := AppendStamped([]byte("prefix"), enc, ts)
			if err != nil {
				t.Fatalf("%s at %d: %v", name, ts, err)
			}
			if w := want.AppendBinary([]byte("prefix")); !bytes.Equal(got, w) {
				t.Fatalf("%s at %d:\n got %x\nwant %x", name, ts, got, w)
			}
		}
	}
}

// A malformed or newer encoding is refused and nothing is appended.
func TestAppendStampedRefuses(t *testing.T) {
	good := (&Command{Op: OpRelease, Key: "k", Time: 5}).AppendBinary(nil)
	bad := map[string][]byte{
		"empty":          nil,
		"header only":    good[:2],
		"newer format":   append([]byte{cmdVersion + 1}, good[1:]...),
		"unknown field":  {cmdVersion, byte(OpRelease), 0xff, 0xff, 0xff, 0xff, 0x7f},
		"truncated mask": {cmdVersion, byte(OpRelease), 0x80},
		"truncated time": {cmdVersion, byte(OpRelease), fTime, 0x80},
	}
	for name, enc := range bad {
		dst := []byte("keep")
		got, err := AppendStamped(dst, enc, 9)
		if err == nil {
			t.Fatalf("%s: stamped %x", name, got)
		}
		if string(got) != "keep" {
			t.Fatalf("%s: appended %x on a refusal", name, got[4:])
		}
	}
}
