package cluster

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/locknode/locknode/fsm"
)

// TestRestartKeepsScripts: scripts loaded by SCRIPT LOAD survive a node's
// restart (from a snapshot and the log after it) and a whole-cluster
// restart; EVAL-cached ones come back in the same least-recently-used
// order (every node then evicts the same one), and a SCRIPT FLUSH in the
// log stays applied.
func TestRestartKeepsScripts(t *testing.T) {
	tc := newTestCluster(t, 3, func(c *Config) { c.FSM.MaxEvalScripts = 3 })
	ctx := ctxT(t, 60*time.Second)
	l := tc.leader(10 * time.Second)
	apply := func(n *Node, cmd *fsm.Command) string {
		t.Helper()
		r, err := n.Apply(ctx, cmd)
		if err != nil || r.Err != nil || r.Reply.IsError() {
			t.Fatalf("%+v: %+v %v", cmd, r, err)
		}
		return r.Reply.Str
	}
	load := func(s string) string { return apply(l, &fsm.Command{Op: fsm.OpScriptLoad, Script: []byte(s)}) }
	eval := func(i int) {
		apply(l, &fsm.Command{Op: fsm.OpEval, Script: []byte("return " + strconv.Itoa(i))})
	}
	flushed := load("return 'flushed'")
	apply(l, &fsm.Command{Op: fsm.OpScriptFlush})
	kept := load("return 'kept'")
	for i := range 5 {
		eval(i) // 2, 3, 4 stay
	}
	if err := l.Raft().Snapshot().Error(); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	kept2 := load("return 'kept after the snapshot'")
	eval(2) // 3 is now the least recently used

	sha := func(i int) string { return fsm.ScriptSHA([]byte("return " + strconv.Itoa(i))) }
	shas := []string{flushed, kept, kept2, sha(1), sha(2), sha(3), sha(4)}
	const want = "[false true true false true true true]"
	check := func(what string) {
		t.Helper()
		applied := l.AppliedIndex()
		for _, n := range tc.nodes {
			tc.eventually(10*time.Second, what+": caught up", func() bool { return n.AppliedIndex() >= applied })
			var got string
			if err := n.Read(ctx, true, func(tb *fsm.Table, _ int64) { got = fmt.Sprint(tb.ScriptSHAs(shas)) }); err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("%s: node %s holds %s, want %s", what, n.ID(), got, want)
			}
		}
	}
	check("before the restarts")

	victim := tc.index(tc.follower())
	tc.kill(victim)
	tc.restart(victim)
	check("one node restarted")

	for i := range tc.nodes {
		tc.kill(i)
	}
	for i := range tc.nodes {
		tc.restart(i)
	}
	l = tc.leader(15 * time.Second)
	check("the cluster restarted")

	// The order came back too: the next EVAL evicts 3 everywhere.
	eval(5)
	shas = []string{sha(2), sha(3), sha(4), sha(5), kept}
	want2 := "[true false true true true]"
	for _, n := range tc.nodes {
		w := l.AppliedIndex()
		tc.eventually(10*time.Second, "caught up", func() bool { return n.AppliedIndex() >= w })
		var got string
		if err := n.Read(ctx, true, func(tb *fsm.Table, _ int64) { got = fmt.Sprint(tb.ScriptSHAs(shas)) }); err != nil {
			t.Fatal(err)
		}
		if got != want2 {
			t.Fatalf("node %s after one more EVAL holds %s, want %s", n.ID(), got, want2)
		}
	}
}
