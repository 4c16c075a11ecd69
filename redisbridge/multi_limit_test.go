package redisbridge

import (
	"strings"
	"testing"

	"github.com/locknode/locknode/fsm"
)

// A MULTI block past fsm.Config's MaxExecCommands is refused while
// queueing, EXEC answers EXECABORT, nothing of it is applied, and the
// connection keeps serving.
func TestMultiQueueBound(t *testing.T) {
	s, _ := testServer(t, Config{})
	max := fsm.DefaultConfig().MaxExecCommands
	c := dialRaw(t, s)
	if v := c.do("MULTI"); v.Str != "OK" {
		t.Fatalf("MULTI: %v", v)
	}
	// Pipelined, as a client sending a huge block would.
	var b strings.Builder
	for i := 0; i < max+10; i++ {
		b.WriteString("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$" + itoa(len(itoa(i))) + "\r\n" + itoa(i) + "\r\n")
	}
	c.send(b.String())
	for i := 0; i < max+10; i++ {
		v := c.read()
		switch {
		case i < max && v.Str != "QUEUED":
			t.Fatalf("command %d: %v", i, v)
		case i >= max && (v.Type != '-' || !strings.HasPrefix(v.Str, "ERR a MULTI block holds at most")):
			t.Fatalf("command %d past the bound: %v", i, v)
		}
	}
	if v := c.do("EXEC"); v.Type != '-' || !strings.HasPrefix(v.Str, "EXECABORT") {
		t.Fatalf("EXEC: %v", v)
	}
	if v := c.do("GET", "k"); !v.Null {
		t.Fatalf("part of the aborted block applied: %v", v)
	}
	// At the bound exactly, the block runs.
	c.do("MULTI")
	b.Reset()
	for i := 0; i < max; i++ {
		b.WriteString("*2\r\n$4\r\nINCR\r\n$1\r\nn\r\n")
	}
	c.send(b.String())
	for i := 0; i < max; i++ {
		if v := c.read(); v.Str != "QUEUED" {
			t.Fatalf("command %d: %v", i, v)
		}
	}
	if v := c.do("EXEC"); len(v.Elems) != max {
		t.Fatalf("EXEC at the bound: %v", v.Type)
	}
	if v := c.do("GET", "n"); v.Str != itoa(max) {
		t.Fatalf("n = %v", v)
	}
}

// The FSM refuses an OpExec over the bound even if a client (or an old
// bridge) proposes one.
func TestExecBoundInFSM(t *testing.T) {
	tb := fsm.New(fsm.Config{MaxExecCommands: 2})
	multi := [][][]byte{{[]byte("INCR"), []byte("n")}, {[]byte("INCR"), []byte("n")}, {[]byte("INCR"), []byte("n")}}
	r := tb.Apply(1, &fsm.Command{Op: fsm.OpExec, Multi: multi, Time: 1})
	if !r.Reply.IsError() || !strings.HasPrefix(r.Reply.Str, "EXECABORT") {
		t.Fatalf("got %+v", r.Reply)
	}
	if r := tb.Apply(2, &fsm.Command{Op: fsm.OpExec, Multi: multi[:2], Time: 1}); len(r.Reply.Arr) != 2 {
		t.Fatalf("at the bound: %+v", r.Reply)
	}
}
