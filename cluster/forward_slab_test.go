package cluster

import (
	"reflect"
	"testing"

	"github.com/locknode/locknode/fsm"
)

// A queued forward keeps only the command's encoding; the node that
// becomes leader before sending it proposes the decoded command, which
// is the command queued.
func TestForwardItemCommandOf(t *testing.T) {
	cmd := &fsm.Command{Op: fsm.OpEvalSHA, Key: "d75bb8b5bd13532ddedd17762e772346e39b321e",
		KeysB: [][]byte{[]byte("k")}, Args: [][]byte{[]byte("tok"), []byte("30000")}, NoForce: true}
	it := &forwardItem{req: cmd.AppendBinary(nil)}
	got, err := it.commandOf()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, cmd) {
		t.Fatalf("decoded %+v, want %+v", got, cmd)
	}
	if _, err := (&forwardItem{req: []byte{1}}).commandOf(); err == nil {
		t.Fatal("a malformed encoding decoded")
	}
	kept := &fsm.Command{Op: fsm.OpTick}
	if got, err := (&forwardItem{cmd: kept, req: []byte{1}}).commandOf(); err != nil || got != kept {
		t.Fatalf("a kept command not used: %v %v", got, err)
	}
}

// A pooled slab comes back zero, whatever the call before left in it.
func TestCommandSlabZeroed(t *testing.T) {
	for range 50 {
		s := getCommandSlab(3)
		for i := range s {
			if !reflect.DeepEqual(s[i], fsm.Command{}) {
				t.Fatalf("slab entry %d not zero: %+v", i, s[i])
			}
			s[i] = fsm.Command{Op: fsm.OpRedis, Key: "x", Args: [][]byte{[]byte("a")}}
		}
		putCommandSlab(s)
		big := getCommandSlab(40)
		for i := range big {
			if !reflect.DeepEqual(big[i], fsm.Command{}) {
				t.Fatalf("large slab entry %d not zero: %+v", i, big[i])
			}
			big[i].Key = "y"
		}
		putCommandSlab(big)
	}
}

// A queued command's encoding is built in one allocation.
func TestAppendCommandOneAlloc(t *testing.T) {
	cmd := &fsm.Command{Op: fsm.OpEvalSHA, Key: "d75bb8b5bd13532ddedd17762e772346e39b321e",
		KeysB: [][]byte{[]byte("lock:orders:42")}, Args: [][]byte{[]byte("token-0123456789abcdef"), []byte("30000")}, NoForce: true}
	if got := appendCommand(cmd); string(got) != string(cmd.AppendBinary(nil)) {
		t.Fatal("appendCommand differs from the command's encoding")
	}
	if a := testing.AllocsPerRun(100, func() { _ = appendCommand(cmd) }); a != 1 {
		t.Fatalf("%.0f allocations per encoding, want 1", a)
	}
}
